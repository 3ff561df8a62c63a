package dynamo_test

import (
	"context"
	crand "crypto/rand"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/itemsize"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/eventlog"
	"github.com/idemkit/idemkit/internal/testing/faults"
)

// counting wraps a client, counting calls per operation and recording
// the largest item a PutItem sent.
type counting struct {
	dynamo.Client
	mu      sync.Mutex
	calls   map[string]int
	maxItem int
}

func newCounting(c dynamo.Client) *counting { return &counting{Client: c, calls: map[string]int{}} }

func (c *counting) count(op string) {
	c.mu.Lock()
	c.calls[op]++
	c.mu.Unlock()
}

func (c *counting) Calls(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[op]
}

func (c *counting) MaxItem() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxItem
}

func (c *counting) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.count("PutItem")
	n := itemsize.Of(in.Item)
	c.mu.Lock()
	c.maxItem = max(c.maxItem, n)
	c.mu.Unlock()
	return c.Client.PutItem(ctx, in, optFns...)
}

func (c *counting) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.count("GetItem")
	return c.Client.GetItem(ctx, in, optFns...)
}

func (c *counting) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.count("UpdateItem")
	return c.Client.UpdateItem(ctx, in, optFns...)
}

// fakeClient returns a client of an httptest server answering every call
// with h.
func fakeClient(t *testing.T, h http.HandlerFunc) *dynamodb.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return endpointClient(srv.URL)
}

// endpointClient returns a client for a DynamoDB endpoint URL.
func endpointClient(url string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(url),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

// closedPort returns a local URL nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	return url
}

// target returns the operation named by a DynamoDB JSON request.
func target(r *http.Request) string {
	t := r.Header.Get("X-Amz-Target")
	for i := len(t) - 1; i >= 0; i-- {
		if t[i] == '.' {
			return t[i+1:]
		}
	}
	return t
}

// jsonError answers a DynamoDB JSON-protocol error.
func jsonError(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	w.Write(body)
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// base is a whole-second time near the real clock.
func base() time.Time { return time.Now().Truncate(time.Second).Add(time.Second) }

// faultyStore returns a store on a fresh table of the shared server whose
// calls go through a fault transport, a client that sees no faults, and
// the table. The client is built as the SDK builds one by default, with
// its standard retryer and retry quota.
func faultyStore(t *testing.T, opts dynamo.Options, rules ...faults.Rule) (*dynamo.Store, *faults.Transport, *dynamodb.Client, string) {
	t.Helper()
	return faultyStoreVia(t, http.DefaultTransport, opts, rules...)
}

// faultyStoreVia is faultyStore with the server's answers passing through
// base (faults.WithoutConditionItem: as from a server that does not
// return the item with a refusal).
func faultyStoreVia(t *testing.T, base http.RoundTripper, opts dynamo.Options, rules ...faults.Rule) (*dynamo.Store, *faults.Transport, *dynamodb.Client, string) {
	t.Helper()
	clean := client(t)
	table := newTable(t, clean)
	ft := faults.New(base, rules...)
	c, err := dynalite.NewClientVia(t.Context(), dynalite.Endpoint(t), ft)
	if err != nil {
		t.Fatal(err)
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = dynalite.Scale(30 * time.Second)
	}
	s := storeOn(t, c, table, opts)
	return s, ft, clean, table
}

// faultyPair returns a store whose calls go through a fault transport over
// base (faultyStoreVia), a store on the same table that sees no faults,
// and the transport.
func faultyPair(t *testing.T, base http.RoundTripper, opts dynamo.Options, rules ...faults.Rule) (faulty, clean *dynamo.Store, ft *faults.Transport) {
	t.Helper()
	s, ft, c, table := faultyStoreVia(t, base, opts, rules...)
	cs := storeOn(t, c, table, dynamo.Options{})
	return s, cs, ft
}

// inFlightRecord returns an in_flight record of key with owner "o-1",
// created now (the real time, to the millisecond) with a lease ending
// lease later, and now; created through s unless s is nil.
func inFlightRecord(t *testing.T, s *dynamo.Store, key string, lease time.Duration) (*idemkit.Record, time.Time) {
	t.Helper()
	now := time.Now().Truncate(time.Millisecond)
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: key}
	rec := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o-1", Fingerprint: "v1:sha256:f",
		LeaseUntil: now.Add(lease), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
	if s != nil {
		rec = create(t, s, rec)
	}
	return rec, now
}

// create stores rec with Create, as the engine stores a claim: with a
// fresh Version, over no record. It returns the record stored.
func create(t testing.TB, s idemkit.Store, rec *idemkit.Record) *idemkit.Record {
	t.Helper()
	r := rec.Clone()
	r.Version = crand.Text()
	if met, err := s.Create(context.Background(), r); err != nil || met != nil {
		t.Fatalf("create %s: met %+v, %v", r.ID, met, err)
	}
	return r
}

// change stores in place of prev a copy of it that f changes, with a fresh
// Version, as the engine writes its changes, and returns it.
func change(t testing.TB, s idemkit.Store, prev *idemkit.Record, f func(r *idemkit.Record)) *idemkit.Record {
	t.Helper()
	r := prev.Clone()
	f(r)
	r.Version = crand.Text()
	if met, err := s.Replace(context.Background(), r, prev); err != nil || met != nil {
		t.Fatalf("replace %s: met %+v, %v", r.ID, met, err)
	}
	return r
}

// The engine's changes of a record (idemkit.State), for change.

func completedAt(at time.Time, snap *idemkit.Snapshot) func(*idemkit.Record) {
	return func(r *idemkit.Record) {
		r.State, r.Cause, r.CompletedAt, r.Snapshot = idemkit.StateCompleted, "", at, snap
	}
}

func markedUnknown(at time.Time) func(*idemkit.Record) {
	return func(r *idemkit.Record) {
		r.State, r.Cause, r.LeaseUntil = idemkit.StateIndeterminate, idemkit.CauseOutcomeUnknown, at
	}
}

func markedStale(r *idemkit.Record) {
	r.State, r.Cause = idemkit.StateIndeterminate, idemkit.CauseLeaseExpired
}

func releasedAt(at time.Time) func(*idemkit.Record) {
	return func(r *idemkit.Record) {
		*r = idemkit.Record{ID: r.ID, Scope: r.Scope, State: idemkit.StateReleased, Fingerprint: r.Fingerprint, Owner: r.Owner,
			LeaseUntil: at, ExpiresAt: at, CreatedAt: at}
	}
}

func resolvedFailed(at time.Time) func(*idemkit.Record) {
	return func(r *idemkit.Record) {
		r.State, r.Resolution = idemkit.StateFailed, &idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops", Reason: "declined", ResolvedAt: at}
	}
}

// get reads id through s, fatal unless a record is stored.
func get(t testing.TB, s idemkit.Store, id string) *idemkit.Record {
	t.Helper()
	r, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return r
}

func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func N(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// guard returns a Guard over s with the default configuration.
func guard(t *testing.T, s idemkit.Store) *idemkit.Guard {
	t.Helper()
	return guardWith(t, idemkit.Config{Store: s})
}

// guardWith returns the Guard of cfg, failing t when New refuses it.
func guardWith(t *testing.T, cfg idemkit.Config) *idemkit.Guard {
	t.Helper()
	g, err := idemkit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// observed returns a Guard over s and the log of what it observes.
func observed(t *testing.T, s idemkit.Store) (*idemkit.Guard, *eventlog.Log) {
	t.Helper()
	obs := &eventlog.Log{}
	return guardWith(t, idemkit.Config{Store: s, Observer: obs}), obs
}

func okHandler(execs *atomic.Int32, body string) idemkit.Handler {
	return func(context.Context) (*idemkit.Snapshot, error) {
		execs.Add(1)
		return &idemkit.Snapshot{Status: 201, Body: []byte(body)}, nil
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(7)).Read(b)
	return b
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
