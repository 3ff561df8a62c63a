package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/policydefault"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

// fixture is a store table on the test server and an Env that opens it.
type fixture struct {
	t     *testing.T
	table string
	store *dynamo.Store
	env   Env
	// operators counts the identity lookups.
	operators atomic.Int32
}

const testOperator = "arn:aws:iam::123456789012:user/alice"

// newFixture's store indexes in_flight records, as the application's
// stores must for list --state stale.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixtureWith(t, dynamo.Options{IndexInFlight: true})
}

// newFixtureWith is newFixture with a store of the given options, on a
// table laid out as they say.
func newFixtureWith(t *testing.T, opts dynamo.Options) *fixture {
	t.Helper()
	c := dynalite.Client(t)
	table := dynalite.CreateTable(t, c, dynamo.TableDefinition("idemkit", opts))
	if opts.CallTimeout == 0 {
		opts.CallTimeout = dynalite.Scale(30 * time.Second)
	}
	s, err := dynamo.New(c, table, opts)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, table: table, store: s}
	f.env = Env{
		OpenStore: func(_ context.Context, o StoreOptions) (idemkit.OperatorStore, error) {
			if o.Table != table {
				t.Errorf("OpenStore: table %q, want %q", o.Table, table)
			}
			return s, nil
		},
		Operator: func(context.Context, StoreOptions) (string, error) {
			f.operators.Add(1)
			return testOperator, nil
		},
		Getenv: func(string) string { return "" },
	}
	return f
}

// run runs the command line with the fixture's table and returns the exit
// code, stdout and stderr.
func (f *fixture) run(args ...string) (int, string, string) {
	f.t.Helper()
	if len(args) > 0 && args[0] != "help" && !strings.HasPrefix(args[0], "-") {
		args = append([]string{args[0], "--table", f.table}, args[1:]...)
	}
	return runWith(f.t, f.env, args...)
}

func runWith(t *testing.T, env Env, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), args, &stdout, &stderr, env)
	return code, stdout.String(), stderr.String()
}

func scopeOf(key string) idemkit.Scope {
	return idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: key}
}

func scopeArgs(s idemkit.Scope) []string {
	return []string{"--tenant", s.Tenant, "--operation", s.Operation, "--key", s.Key}
}

const testFingerprint = "v1:sha256:0f1e2d"

// seed stores an in_flight record for s whose lease ends at leaseUntil.
func (f *fixture) seed(s idemkit.Scope, leaseUntil time.Time) *idemkit.Record {
	f.t.Helper()
	now := time.Now()
	rec := &idemkit.Record{
		ID:          s.ID(false),
		Scope:       s,
		State:       idemkit.StateInFlight,
		Fingerprint: testFingerprint,
		Owner:       "owner-" + s.Key,
		Version:     "claim-" + s.Key,
		LeaseUntil:  leaseUntil,
		ReplayUntil: now.Add(policydefault.ReplayWindow),
		ExpiresAt:   now.Add(policydefault.RecordRetention),
		CreatedAt:   leaseUntil.Add(-30 * time.Second),
	}
	if met, err := f.store.Create(f.t.Context(), rec); err != nil || met != nil {
		f.t.Fatalf("seed %s: met %+v, err %v", s.Key, met, err)
	}
	return rec
}

// write replaces prev with next in the fixture's store, as the engine
// does.
func (f *fixture) write(next, prev *idemkit.Record) {
	f.t.Helper()
	if met, err := f.store.Replace(f.t.Context(), next, prev); err != nil || met != nil {
		f.t.Fatalf("write %s %s: met %+v, err %v", next.Scope.Key, next.State, met, err)
	}
}

// markedOf is rec marked indeterminate, as a retry marks a stale lease.
func markedOf(rec *idemkit.Record) *idemkit.Record {
	m := rec.Clone()
	m.State, m.Cause, m.Version = idemkit.StateIndeterminate, idemkit.CauseLeaseExpired, "marked-"+rec.Scope.Key
	return m
}

// unknownOf is rec made indeterminate by its run at now, its outcome
// unknown.
func unknownOf(rec *idemkit.Record, now time.Time) *idemkit.Record {
	m := markedOf(rec)
	m.Cause, m.LeaseUntil = idemkit.CauseOutcomeUnknown, now
	return m
}

// seedStale stores an in_flight record for s whose lease ended twenty
// minutes ago, past the time resolve waits before any decision (a minute
// of clock skew, and for --as failed idemkit.MaxWriteDelay more).
func (f *fixture) seedStale(s idemkit.Scope) *idemkit.Record {
	return f.seed(s, time.Now().Add(-20*time.Minute))
}

// seedIndeterminate stores an indeterminate record for s whose lease ended
// at leaseUntil (in the past).
func (f *fixture) seedIndeterminate(s idemkit.Scope, leaseUntil time.Time) *idemkit.Record {
	f.t.Helper()
	rec := f.seed(s, leaseUntil)
	f.write(markedOf(rec), rec)
	return f.get(s)
}

// seedCompleted stores a completed record for s with snap.
func (f *fixture) seedCompleted(s idemkit.Scope, snap *idemkit.Snapshot) *idemkit.Record {
	f.t.Helper()
	rec := f.seed(s, time.Now().Add(time.Minute))
	done := rec.Clone()
	done.State, done.CompletedAt, done.Snapshot, done.Version = idemkit.StateCompleted, time.Now(), snap, "done-"+s.Key
	f.write(done, rec)
	return done
}

func (f *fixture) get(s idemkit.Scope) *idemkit.Record {
	f.t.Helper()
	rec, err := f.store.Get(f.t.Context(), s.ID(false))
	if err != nil {
		f.t.Fatalf("get %s: %v", s.Key, err)
	}
	return rec
}

// guard returns a Guard on the fixture's store with the given stale-lease
// policy.
func (f *fixture) guard(p idemkit.StalePolicy) *idemkit.Guard {
	f.t.Helper()
	g, err := idemkit.New(idemkit.Config{Store: f.store, Policy: idemkit.Policy{OnStaleLease: p, Lease: time.Minute}})
	if err != nil {
		f.t.Fatal(err)
	}
	return g
}

func request(s idemkit.Scope) idemkit.Request {
	return idemkit.Request{Scope: s, Fingerprint: testFingerprint}
}

// handler counts its runs and answers 201.
func handler(runs *atomic.Int32) idemkit.Handler {
	return func(context.Context) (*idemkit.Snapshot, error) {
		runs.Add(1)
		return &idemkit.Snapshot{Status: 201, Header: http.Header{"Location": {"/orders/from-handler"}}, Body: []byte(`{"id":"handler"}`)}, nil
	}
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, s)
	}
	return v
}

func wantCode(t *testing.T, got int, want int, stdout, stderr string) {
	t.Helper()
	if got != want {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", got, want, stdout, stderr)
	}
}

// failingStore is a store failing every call as unavailable.
type failingStore struct{}

var _ idemkit.StaleLister = failingStore{}

func (failingStore) fail(op string) error {
	return &idemkit.StoreError{Op: op, Err: errors.New("connection refused")}
}

func (f failingStore) Get(context.Context, string) (*idemkit.Record, error) {
	return nil, f.fail("get")
}

func (f failingStore) Create(context.Context, *idemkit.Record) (*idemkit.Record, error) {
	return nil, f.fail("create")
}

func (f failingStore) Replace(context.Context, *idemkit.Record, *idemkit.Record) (*idemkit.Record, error) {
	return nil, f.fail("replace")
}

func (f failingStore) ListIndeterminate(context.Context, string, string, int, time.Time) ([]*idemkit.Record, string, error) {
	return nil, "", f.fail("list indeterminate")
}

func (failingStore) ListsStale() bool { return true }

func (f failingStore) ListStale(context.Context, string, string, int, time.Time) ([]*idemkit.Record, string, error) {
	return nil, "", f.fail("list stale")
}
