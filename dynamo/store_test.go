package dynamo_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/storetest"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

var shared struct {
	once   sync.Once
	client *dynamodb.Client
	err    error
}

// client returns a client of the shared test server. Endpoint runs first,
// outside the Once, so that a skip (IDEMKIT_SKIP_DYNAMODB=1) or a failure
// reaches every test, not only the first.
func client(t testing.TB) *dynamodb.Client {
	t.Helper()
	ep := dynalite.Endpoint(t)
	shared.once.Do(func() { shared.client, shared.err = dynalite.NewClient(context.Background(), ep) })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.client
}

// newTable creates a fresh store table on the shared server.
func newTable(t testing.TB, c *dynamodb.Client) string {
	t.Helper()
	return dynalite.CreateTable(t, c, dynamo.TableDefinition("idem", dynamo.Options{}))
}

// testOptions are the store options of tests that do not test timeouts:
// a call timeout of 30 s (scaled by IDEMKIT_TEST_TIMEOUT_SCALE) instead of
// the production 2 s, which a loaded machine can exceed.
func testOptions() dynamo.Options {
	return dynamo.Options{CallTimeout: dynalite.Scale(30 * time.Second)}
}

// storeOn returns the store New makes of c, table and opts, failing t
// when it refuses them.
func storeOn(t testing.TB, c dynamo.Client, table string, opts dynamo.Options) *dynamo.Store {
	t.Helper()
	return orFatal(t)(dynamo.New(c, table, opts))
}

// regional is storeOn for NewRegional.
func regional(t testing.TB, r dynamo.Regions, table string, opts dynamo.Options) *dynamo.Store {
	t.Helper()
	return orFatal(t)(dynamo.NewRegional(r, table, opts))
}

// orFatal returns a function that returns the store it is given, failing
// t on the error given with it.
func orFatal(t testing.TB) func(*dynamo.Store, error) *dynamo.Store {
	return func(s *dynamo.Store, err error) *dynamo.Store {
		if err != nil {
			t.Helper()
			t.Fatal(err)
		}
		return s
	}
}

// newStore returns a store on a fresh table of the shared server. Unless
// opts sets one, calls get a 30 s timeout instead of the production 2 s:
// dynalite is one Node process that queues every request, and a burst of
// 200 concurrent calls under -race on two shared cores can wait seconds.
// The tests of deadline behaviour build their stores with their own options.
func newStore(t testing.TB, opts dynamo.Options) (*dynamo.Store, *dynamodb.Client, string) {
	t.Helper()
	return storeOnNewTable(t, opts, dynamo.Options{})
}

// storeOnNewTable is newStore on a table laid out as TableDefinition says
// for def.
func storeOnNewTable(t testing.TB, opts, def dynamo.Options) (*dynamo.Store, *dynamodb.Client, string) {
	t.Helper()
	if opts.CallTimeout == 0 {
		opts.CallTimeout = dynalite.Scale(30 * time.Second)
	}
	c := client(t)
	table := dynalite.CreateTable(t, c, dynamo.TableDefinition("idem", def))
	return storeOn(t, c, table, opts), c, table
}

func TestConformance(t *testing.T) {
	storetest.RunWith(t, func(t *testing.T) idemkit.OperatorStore {
		s, _, _ := newStore(t, dynamo.Options{IndexInFlight: true})
		return s
	}, conformanceOptions(t, storetest.Options{}))
}

// Without IndexInFlight, in_flight records are not indexed: ListsStale
// says so, ListStale refuses rather than answer a false all-clear, and the
// rest of the contract holds.
func TestConformanceWithoutInFlightIndex(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	if s.ListsStale() {
		t.Fatal("ListsStale without IndexInFlight: true")
	}
	_, _, err := s.ListStale(context.Background(), "", "", 10, time.Now())
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("ListStale without IndexInFlight: %v, want errors.ErrUnsupported", err)
	}
	if s, _, _ := newStore(t, dynamo.Options{IndexInFlight: true}); !s.ListsStale() {
		t.Fatal("ListsStale with IndexInFlight: false")
	}
	storetest.RunWith(t, func(t *testing.T) idemkit.OperatorStore {
		s, _, _ := newStore(t, dynamo.Options{})
		return s
	}, conformanceOptions(t, storetest.Options{DistinctKeys: 200, Racers: 20}))
}

// conformanceOptions completes opts with the store's limits and the test
// server's capabilities: races prove nothing on a server whose conditional
// writes are not atomic.
func conformanceOptions(t *testing.T, opts storetest.Options) storetest.Options {
	opts.SnapshotLimit = dynamo.DefaultMaxItemSize
	opts.NonAtomic = !dynalite.Has(t, dynalite.AtomicConditionalWrites)
	return opts
}
