package batch

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
)

// DynamoDBConfig configures DynamoDB. ByGroup does not apply: a DynamoDB
// Streams batch comes from one shard, in order.
type DynamoDBConfig = Config[events.DynamoDBEventRecord]

// DynamoDB returns the handler of a DynamoDB Streams event source mapping
// that runs fn once per record key and reports the records that failed by
// their sequence numbers. After the first failure, the rest of the batch
// is reported failed without running. The stream is then read again from
// the lowest sequence number reported, in order. DynamoDB panics when g or
// fn is nil, cfg has no Tenant, cfg.Fingerprint cannot be used, or
// cfg.Operation is empty outside Lambda (see Config).
func DynamoDB(g *idemkit.Guard, cfg DynamoDBConfig, fn func(context.Context, events.DynamoDBEventRecord) error) func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	run := wrap(g, cfg, source[events.DynamoDBEventRecord]{
		id:      func(r events.DynamoDBEventRecord) string { return r.Change.SequenceNumber },
		key:     func(r events.DynamoDBEventRecord) string { return r.EventID },
		payload: func(r events.DynamoDBEventRecord) ([]byte, error) { return json.Marshal(r.Change) },
		group:   func(events.DynamoDBEventRecord) (string, bool) { return "", true },
	}, fn)
	return respond(run, func(e events.DynamoDBEvent) []events.DynamoDBEventRecord { return e.Records },
		func(f []events.DynamoDBBatchItemFailure) events.DynamoDBEventResponse {
			return events.DynamoDBEventResponse{BatchItemFailures: f}
		},
		func(r events.DynamoDBEventRecord) events.DynamoDBBatchItemFailure {
			return events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber}
		})
}
