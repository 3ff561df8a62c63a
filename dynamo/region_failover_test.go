package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
	"github.com/idemkit/idemkit/internal/uuidv7"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/policydefault"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

// ledger is a handler's own table: every run adds one to its key's
// counter, so that runs in any region are counted from the data.
type ledger struct {
	c     *dynamodb.Client
	table string
}

func newLedger(t *testing.T, c *dynamodb.Client) *ledger {
	t.Helper()
	return &ledger{c: c, table: dynalite.CreateTable(t, c, &dynamodb.CreateTableInput{
		TableName:            aws.String("ledger"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})}
}

// handler returns a handler that records a run of key and answers 201
// with the run's number.
func (l *ledger) handler(key string) idemkit.Handler {
	return func(ctx context.Context) (*idemkit.Snapshot, error) {
		out, err := l.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(l.table),
			Key:                       map[string]types.AttributeValue{"pk": S(key)},
			UpdateExpression:          aws.String("ADD n :one"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": N(1)},
			ReturnValues:              types.ReturnValueUpdatedNew,
		})
		if err != nil {
			return nil, err
		}
		return &idemkit.Snapshot{Status: 201, Body: []byte("run " + out.Attributes["n"].(*types.AttributeValueMemberN).Value)}, nil
	}
}

// runs returns how many times key ran.
func (l *ledger) runs(t *testing.T, key string) int {
	t.Helper()
	out, err := l.c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(l.table), Key: map[string]types.AttributeValue{"pk": S(key)}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Item == nil {
		return 0
	}
	n, _ := strconv.Atoi(out.Item["n"].(*types.AttributeValueMemberN).Value)
	return n
}

// failoverRegions returns Regions where acme is homed in eu-west-1 and
// re-homed by the Failover fo holds (nil: not failed over).
func failoverRegions(eu, us dynamo.Client, fo *atomic.Pointer[dynamo.Failover]) dynamo.Regions {
	return dynamo.Regions{
		Clients: map[string]dynamo.Client{"eu-west-1": eu, "us-east-1": us},
		Home:    func(string) string { return "eu-west-1" },
		Override: func(tenant string) (dynamo.Failover, bool) {
			if f := fo.Load(); f != nil && tenant == "acme" {
				return *f, true
			}
			return dynamo.Failover{}, false
		},
		Local: "us-east-1",
	}
}

// failoverStores returns, on two fresh regions, the regional store
// (failoverRegions) of us under fo's failover of acme, a store of us's
// replica alone, and fo.
func failoverStores(t *testing.T) (moved, plain *dynamo.Store, fo *atomic.Pointer[dynamo.Failover]) {
	t.Helper()
	eu, us, table := twoRegions(t)
	fo = &atomic.Pointer[dynamo.Failover]{}
	return regional(t, failoverRegions(eu, us, fo), table, testOptions()), storeOn(t, us, table, testOptions()), fo
}

// outcome names what a Do returned.
func outcome(replayed bool, err error) string {
	var fe *dynamo.FailoverError
	switch {
	case err == nil && replayed:
		return "replay"
	case err == nil:
		return "run"
	case errors.As(err, &fe):
		return "refused"
	case errors.Is(err, idemkit.ErrInFlight):
		return "in-flight"
	case errors.Is(err, idemkit.ErrIndeterminate):
		return "indeterminate"
	case errors.Is(err, idemkit.ErrOutcomePending):
		return "pending"
	}
	return err.Error()
}

// TestFailoverFence: acme, homed in eu, is failed over to us, whose
// replica lacks what eu wrote after the last replication (the two servers
// never replicate; a test copies an item to stand for its replication).
// Under the fence a retry of a key us holds no record of is refused
// (ErrStoreUnavailable, a *FailoverError naming the failover), runs
// nothing and stores nothing; a key us holds a live record of is answered
// from it, except that a failed record or a stale lease is neither claimed
// nor marked (eu may hold a later write of it); a UUIDv7 key first used
// after the failover runs. Once the operator reconciles (eu's items reach
// us, Reconciled set), each key replays or runs as it would have without
// the failover. Runs are counted from the handler's ledger.
func TestFailoverFence(t *testing.T) {
	eu, us, table := twoRegions(t)
	led := newLedger(t, us)
	ctx := context.Background()
	skew := policydefault.KeyClockSkew
	var fo atomic.Pointer[dynamo.Failover]
	inEU := regional(t, failoverRegions(eu, us, &atomic.Pointer[dynamo.Failover]{}), table, testOptions())
	moved := regional(t, failoverRegions(eu, us, &fo), table, testOptions())
	// replicate copies eu's item of id to us unless us wrote the item
	// since it last replicated (the last writer wins).
	copied := map[string]map[string]types.AttributeValue{} // id -> the item last copied to us
	replicate := func(t *testing.T, id string) {
		t.Helper()
		k := map[string]types.AttributeValue{dynamo.AttrID: S(id)}
		src, err := eu.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: k, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		dst, err := us.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: k, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if src.Item == nil || dst.Item != nil && !reflect.DeepEqual(dst.Item, copied[id]) {
			return
		}
		if _, err := us.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: src.Item}); err != nil {
			t.Fatal(err)
		}
		copied[id] = src.Item
	}
	inUS := func(t *testing.T, id string) bool {
		t.Helper()
		out, err := us.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{dynamo.AttrID: S(id)}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		// A released key's tombstone (the guard frees the claim it could
		// not confirm) counts as no record.
		st, _ := out.Item[dynamo.AttrState].(*types.AttributeValueMemberS)
		return out.Item != nil && (st == nil || st.Value != "released")
	}
	// What eu did with the key before the failover.
	type before func(t *testing.T, req idemkit.Request)
	claim := func(lease time.Duration) func(t *testing.T, req idemkit.Request) *idemkit.Record {
		return func(t *testing.T, req idemkit.Request) *idemkit.Record {
			now := time.Now()
			return create(t, inEU, &idemkit.Record{ID: req.Scope.ID(false), Scope: req.Scope, State: idemkit.StateInFlight, Fingerprint: req.Fingerprint, Owner: "o-eu",
				LeaseUntil: now.Add(lease), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now})
		}
	}
	var (
		ran before = func(t *testing.T, req idemkit.Request) {
			if _, _, err := guard(t, inEU).Do(ctx, req, led.handler(req.Scope.Key)); err != nil {
				t.Fatalf("run in eu: %v", err)
			}
		}
		inFlight before = func(t *testing.T, req idemkit.Request) { claim(time.Hour)(t, req) }
		stale    before = func(t *testing.T, req idemkit.Request) { claim(-time.Second)(t, req) }
		// completes is the late completion of the run whose claim stale
		// made: in eu, after its claim replicated.
		completes before = func(t *testing.T, req idemkit.Request) {
			now := time.Now()
			change(t, inEU, get(t, inEU, req.Scope.ID(false)), completedAt(now, &idemkit.Snapshot{Status: 201, Body: []byte("run in eu")}))
		}
		failed before = func(t *testing.T, req idemkit.Request) {
			rec := claim(-time.Second)(t, req)
			change(t, inEU, change(t, inEU, rec, markedStale), resolvedFailed(time.Now()))
		}
	)
	// The operator failed acme over a minute ago: a key minted after it
	// (and the clock skew) is not ahead of the clock.
	at := time.Now().Add(-time.Minute)
	for _, tc := range []struct {
		name       string
		key        string
		eu         before // nil: eu never saw the key
		replicated bool   // eu's item reached us before the failover
		later      before // what eu did after that, before the failover (nil: nothing)
		failover   dynamo.Failover
		policy     idemkit.StalePolicy
		want       string
		state      idemkit.State // the refused claim's FailoverError.State
		reconciled string        // the retry once the operator reconciled
		runs       int
	}{
		{name: "unreplicated run, plain key", key: "ch-plain", eu: ran, want: "refused", reconciled: "replay", runs: 1},
		{name: "unreplicated run, UUIDv4 key", key: uuid.NewString(), eu: ran, want: "refused", reconciled: "replay", runs: 1},
		{name: "unreplicated run, UUIDv7 before the failover", key: uuidv7.At(at.Add(-time.Minute)), eu: ran, want: "refused", reconciled: "replay", runs: 1},
		{name: "unreplicated run, UUIDv7 inside the skew", key: uuidv7.At(at.Add(skew - time.Second)), eu: ran, want: "refused", reconciled: "replay", runs: 1},
		{name: "UUIDv7 after the failover", key: uuidv7.At(at.Add(skew + time.Second)), want: "run", reconciled: "replay", runs: 1},
		{name: "UUIDv7 ahead of every clock", key: uuidv7.At(time.Now().Add(3 * skew)), want: "refused", reconciled: "run", runs: 1},
		{name: "never used, plain key", key: "ch-new", want: "refused", reconciled: "run", runs: 1},
		{name: "replicated completion", key: "ch-done", eu: ran, replicated: true, want: "replay", reconciled: "replay", runs: 1},
		{name: "replicated live claim", key: "ch-live", eu: inFlight, replicated: true, want: "in-flight", reconciled: "in-flight", runs: 0},
		{name: "replicated stale lease, fail-closed", key: "ch-stale-fc", eu: stale, replicated: true,
			want: "refused", state: idemkit.StateInFlight, reconciled: "pending", runs: 0},
		// eu completed the run after its claim replicated: marked
		// indeterminate in us, the mark would win over that completion.
		{name: "replicated claim completed later, fail-closed", key: "ch-late-done-fc", eu: stale, replicated: true, later: completes,
			want: "refused", state: idemkit.StateInFlight, reconciled: "replay", runs: 0},
		{name: "replicated claim completed later, takeover", key: "ch-late-done-to", eu: stale, replicated: true, later: completes, policy: idemkit.Takeover,
			want: "refused", state: idemkit.StateInFlight, reconciled: "replay", runs: 0},
		{name: "replicated stale lease, takeover", key: "ch-stale-to", eu: stale, replicated: true, policy: idemkit.Takeover,
			want: "refused", state: idemkit.StateInFlight, reconciled: "run", runs: 1},
		{name: "replicated failed record", key: "ch-failed", eu: failed, replicated: true, want: "refused", state: idemkit.StateFailed, reconciled: "run", runs: 1},
		{name: "reconciled", key: "ch-rec", eu: ran, replicated: true, failover: dynamo.Failover{Reconciled: true}, want: "replay", reconciled: "replay", runs: 1},
		{name: "reconciled, never used", key: "ch-rec-new", failover: dynamo.Failover{Reconciled: true}, want: "run", reconciled: "replay", runs: 1},
		// The window an operator accepts: eu's record did not reach us,
		// and the retry runs again.
		{name: "unreplicated run, accepted", key: "ch-accept", eu: ran, failover: dynamo.Failover{AcceptUnreplicated: true}, want: "run", reconciled: "replay", runs: 2},
		{name: "no At", key: uuidv7.At(time.Now()), failover: dynamo.Failover{At: time.Time{}}, want: "refused", reconciled: "run", runs: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fo.Store(nil)
			req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /charges", Key: tc.key}, Fingerprint: "v1:sha256:r"}
			id := req.Scope.ID(false)
			if tc.eu != nil {
				tc.eu(t, req)
			}
			if tc.replicated {
				replicate(t, id)
			}
			if tc.later != nil {
				tc.later(t, req)
			}
			had := inUS(t, id)
			f := tc.failover
			f.Region = "us-east-1"
			if tc.name != "no At" {
				f.At = at
			}
			fo.Store(&f)
			g := guardWith(t, idemkit.Config{Store: moved, Policy: idemkit.Policy{OnStaleLease: tc.policy}})
			_, replayed, err := g.Do(ctx, req, led.handler(tc.key))
			if got := outcome(replayed, err); got != tc.want {
				t.Fatalf("retry after the failover: %s (the handler ran %d times), want %s", got, led.runs(t, tc.key), tc.want)
			}
			if tc.want == "refused" {
				var fe *dynamo.FailoverError
				errors.As(err, &fe)
				if !errors.Is(err, idemkit.ErrStoreUnavailable) || fe.State != tc.state || fe.Failover.Region != "us-east-1" ||
					!strings.Contains(err.Error(), "failed over to us-east-1 at "+f.At.UTC().Format(time.RFC3339)) {
					t.Fatalf("refusal %v (state %q); want ErrStoreUnavailable naming the failover, state %q", err, fe.State, tc.state)
				}
				if !had && inUS(t, id) {
					t.Fatal("the refused claim stored a record in us")
				}
			}
			// The operator reconciles: eu came back and replication
			// caught up.
			replicate(t, id)
			f.Reconciled = true
			fo.Store(&f)
			_, replayed, err = g.Do(ctx, req, led.handler(tc.key))
			if got := outcome(replayed, err); got != tc.reconciled {
				t.Fatalf("retry once reconciled: %s, want %s", got, tc.reconciled)
			}
			if n := led.runs(t, tc.key); n != tc.runs {
				t.Fatalf("the handler ran %d times, want %d", n, tc.runs)
			}
		})
	}
}

// TestFailoverUnfencedCalls: under the fence, every call but a new claim
// reaches the records the failover region holds: reads, renewals,
// completions, releases, marks, listings, and a retried claim of our own
// record.
func TestFailoverUnfencedCalls(t *testing.T) {
	moved, plain, fo := failoverStores(t)
	ctx := context.Background()
	now := time.Now()
	fo.Store(&dynamo.Failover{Region: "us-east-1", At: now})
	rec := func(key string, lease time.Duration) *idemkit.Record {
		sc := idemkit.Scope{Tenant: "acme", Operation: "POST /charges", Key: key}
		return create(t, plain, &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v1:f", Owner: "o-" + key,
			LeaseUntil: now.Add(lease), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now})
	}
	// write makes the engine's change f of r through moved.
	write := func(r *idemkit.Record, f func(*idemkit.Record)) error {
		next := r.Clone()
		f(next)
		next.Version = "v-" + next.Version
		met, err := moved.Replace(ctx, next, r)
		if err == nil && met != nil {
			err = fmt.Errorf("met %+v", met)
		}
		return err
	}
	for _, tc := range []struct {
		name string
		call func(r *idemkit.Record) error
	}{
		{"get", func(r *idemkit.Record) error { _, err := moved.Get(ctx, r.ID); return err }},
		{"extend", func(r *idemkit.Record) error {
			return write(r, func(n *idemkit.Record) { n.LeaseUntil = now.Add(2 * time.Minute) })
		}},
		{"complete", func(r *idemkit.Record) error { return write(r, completedAt(now, &idemkit.Snapshot{Status: 201})) }},
		{"release", func(r *idemkit.Record) error { return write(r, releasedAt(now)) }},
		{"mark unknown", func(r *idemkit.Record) error { return write(r, markedUnknown(now)) }},
		{"list", func(r *idemkit.Record) error {
			_, _, err := moved.ListIndeterminate(ctx, "acme", "", 0, now)
			return err
		}},
		{"retried claim of our own", func(r *idemkit.Record) error {
			met, err := moved.Create(ctx, r)
			if err == nil && (met == nil || met.Version != r.Version) {
				err = fmt.Errorf("met %+v, want our own record", met)
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(rec("k-"+strings.ReplaceAll(tc.name, " ", "-"), time.Minute)); err != nil {
				t.Fatalf("%s under the fence: %v", tc.name, err)
			}
		})
	}
}

// TestFailoverFencesMarksAndResolutions: under the fence an operator's
// resolution of a record us holds for a key not shown new is refused
// (idemkit.Resolve of an indeterminate record at the resolution, of a
// stale lease at its mark), and the record is left as it was: us's copy
// may lack a later write of it in eu (its completion, say), which the
// resolution, the later write, would overwrite once it replicated. A
// record of a key first used after the failover is resolved, and so is
// any record once the operator reconciles.
func TestFailoverFencesMarksAndResolutions(t *testing.T) {
	moved, plain, fo := failoverStores(t)
	ctx := context.Background()
	now := time.Now()
	at := now.Add(-time.Minute)
	f := dynamo.Failover{Region: "us-east-1", At: at}
	fo.Store(&f)
	// put stores in us, as replication would, a record of key whose lease
	// ended an hour ago: in_flight, or marked indeterminate.
	put := func(key string, marked bool) string {
		sc := idemkit.Scope{Tenant: "acme", Operation: "POST /charges", Key: key}
		r := create(t, plain, &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v1:f", Owner: "o-" + key,
			LeaseUntil: now.Add(-time.Hour), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now.Add(-time.Hour)})
		if marked {
			change(t, plain, r, markedStale)
		}
		return r.ID
	}
	resolve := func(id string) error {
		_, _, err := idemkit.Resolve(ctx, moved, id, idemkit.Resolution{As: idemkit.StateCompleted, Operator: "alice", Reason: "charged",
			Snapshot: &idemkit.Snapshot{Status: 201}}, now)
		return err
	}
	state := func(id string) idemkit.State {
		rec, err := plain.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return rec.State
	}
	for _, tc := range []struct {
		name, key string
		marked    bool
		op        string // the refused call; "": resolved
	}{
		{"indeterminate, old key", "r-ind", true, "resolve"},
		{"stale lease, old key", "r-stale", false, "mark indeterminate"},
		{"stale lease, UUIDv7 before the failover", uuidv7.At(at.Add(-time.Minute)), false, "mark indeterminate"},
		{"indeterminate, UUIDv7 after the failover", uuidv7.At(at.Add(policydefault.KeyClockSkew + time.Second)), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fo.Store(&f)
			id := put(tc.key, tc.marked)
			was := state(id)
			err := resolve(id)
			var fe *dynamo.FailoverError
			switch {
			case tc.op == "" && err != nil:
				t.Fatalf("resolve under the fence: %v; want it resolved", err)
			case tc.op == "":
				return
			case !errors.As(err, &fe) || fe.Op != tc.op || fe.Key != tc.key || !errors.Is(err, idemkit.ErrStoreUnavailable) ||
				!strings.Contains(err.Error(), tc.op+" of key"):
				t.Fatalf("resolve under the fence: %v; want a *FailoverError refusing the %s", err, tc.op)
			}
			if got := state(id); got != was {
				t.Fatalf("the refused resolution left the record %s, was %s", got, was)
			}
			reconciled := f
			reconciled.Reconciled = true
			fo.Store(&reconciled)
			if err := resolve(id); err != nil {
				t.Fatalf("resolve once reconciled: %v", err)
			}
			if got := state(id); got != idemkit.StateCompleted {
				t.Fatalf("resolved once reconciled: %s, want completed", got)
			}
		})
	}
}
