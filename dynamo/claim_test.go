package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/observe"
)

// racyGets stands for other requests changing the record between a
// write's refusal and its GetItem: before and after run around every
// GetItem. It drops the item a refused write returns, as a server without
// ReturnValuesOnConditionCheckFailure does (dynalite), so that the store
// reads the record whatever the test server is.
type racyGets struct {
	dynamo.Client
	before, after func()
	puts          atomic.Int32
}

func (r *racyGets) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.puts.Add(1)
	out, err := r.Client.PutItem(ctx, in, optFns...)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		ccf.Item = nil
	}
	return out, err
}

func (r *racyGets) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if r.before != nil {
		r.before()
	}
	out, err := r.Client.GetItem(ctx, in, optFns...)
	if r.after != nil {
		r.after()
	}
	return out, err
}

// TestCreateRecordVanishes: when the item that refused a Create is gone by
// the time it is read, the put is made again; a Create never reports a
// record stored unless its put succeeded, nor met unless one was read.
func TestCreateRecordVanishes(t *testing.T) {
	c := client(t)
	table := newTable(t, c)
	ctx := context.Background()
	now := base()
	direct, _ := dynamo.New(c, table, testOptions())
	rec := func(key, owner string) *idemkit.Record {
		sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: key}
		return &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v1:sha256:v", Owner: owner, Version: "v-" + owner,
			LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	}
	hold := func(r *idemkit.Record) func() {
		return func() {
			if met, err := direct.Create(ctx, r); err != nil || met != nil {
				t.Errorf("holder's create: %+v, %v", met, err)
			}
		}
	}
	release := func(r *idemkit.Record) func() {
		return func() {
			_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{dynamo.AttrID: S(r.ID)}})
			if err != nil {
				t.Error(err)
			}
		}
	}

	t.Run("deleted between the calls", func(t *testing.T) {
		holder, mine := rec("once", "holder"), rec("once", "mine")
		hold(holder)()
		racy := &racyGets{Client: c, before: release(holder)}
		s, _ := dynamo.New(racy, table, testOptions())
		if met, err := s.Create(ctx, mine); err != nil || met != nil {
			t.Fatalf("create: %+v, %v; want it stored once the holder's item is gone", met, err)
		}
		if n := racy.puts.Load(); n != 2 {
			t.Fatalf("%d PutItem calls, want 2", n)
		}
		if got := get(t, direct, mine.ID); got.Owner != "mine" || got.Version != mine.Version {
			t.Fatalf("stored %+v", got)
		}
	})

	// The item read after the refusal changed but is still there: the
	// Create returns it as it is now, for the engine to decide, and stores
	// nothing.
	for _, tc := range []struct {
		name   string
		state  idemkit.State
		change func(holder *idemkit.Record)
	}{
		{"resolved as failed between the calls", idemkit.StateFailed, func(holder *idemkit.Record) {
			change(t, direct, change(t, direct, holder, markedUnknown(now)), resolvedFailed(now))
		}},
		{"lease ended between the calls", idemkit.StateInFlight, func(holder *idemkit.Record) {
			change(t, direct, holder, func(r *idemkit.Record) { r.LeaseUntil = now.Add(-time.Second) })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holder, mine := rec(tc.name, "holder"), rec(tc.name, "mine")
			hold(holder)()
			racy := &racyGets{Client: c, before: func() { tc.change(holder) }}
			s, _ := dynamo.New(racy, table, testOptions())
			met, err := s.Create(ctx, mine)
			if err != nil || met == nil || met.State != tc.state || met.Owner != "holder" {
				t.Fatalf("create: %+v, %v; want the holder's %s record as read", met, err, tc.state)
			}
			if n := racy.puts.Load(); n != 1 {
				t.Fatalf("%d PutItem calls, want 1", n)
			}
			if got := get(t, direct, mine.ID); got.Owner != "holder" {
				t.Fatalf("stored %+v; want the holder's record", got)
			}
		})
	}

	t.Run("keeps changing", func(t *testing.T) {
		// Before each read the holder's item is deleted; after it, it is
		// created again: every put is refused and every read finds nothing.
		holder, mine := rec("churn", "holder"), rec("churn", "mine")
		hold(holder)()
		racy := &racyGets{Client: c, before: release(holder), after: hold(holder)}
		s, _ := dynamo.New(racy, table, testOptions())
		met, err := s.Create(ctx, mine)
		if !errors.Is(err, idemkit.ErrStoreUnavailable) || met != nil {
			t.Fatalf("create: %+v, %v; want ErrStoreUnavailable after three puts", met, err)
		}
		if n := racy.puts.Load(); n != 3 {
			t.Fatalf("%d PutItem calls, want 3", n)
		}
		if got := get(t, direct, holder.ID); got.Owner != "holder" {
			t.Fatalf("stored %+v; want the holder's record", got)
		}
		// Through the engine the churn is a store failure; nothing runs.
		g, _ := idemkit.New(idemkit.Config{Store: s, ClaimBackoff: time.Millisecond})
		_, _, err = g.Do(ctx, idemkit.Request{Scope: mine.Scope, Fingerprint: mine.Fingerprint}, func(context.Context) (*idemkit.Snapshot, error) {
			t.Error("handler ran without a claim")
			return nil, errors.New("ran")
		})
		if !errors.Is(err, idemkit.ErrStoreUnavailable) {
			t.Fatalf("Do: %v, want ErrStoreUnavailable", err)
		}
	})
}

// allOldServer answers every PutItem with the ConditionalCheckFailedException
// DynamoDB returns for ReturnValuesOnConditionCheckFailure=ALL_OLD, carrying
// the item in testdata, and counts every operation it is asked for.
func allOldServer(t *testing.T) (*dynamo.Store, func() map[string]int) {
	t.Helper()
	body := readFile(t, "testdata/conditional_check_failed_item.json")
	var mu sync.Mutex
	ops := map[string]int{}
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		op := target(r)
		mu.Lock()
		ops[op]++
		mu.Unlock()
		if op != "PutItem" {
			jsonError(w, 400, []byte(`{"__type":"com.amazon.coral.validate#ValidationException","message":"unexpected call in this test"}`))
			return
		}
		w.Header().Set("X-Amzn-Requestid", "8G2K0QF7C1R4T5U6V7W8X9Y0Z1A2B3C4D5E6F7G8H9I0J1K2L3M")
		jsonError(w, http.StatusBadRequest, body)
	})
	s := storeOn(t, c, "idem", dynamo.Options{})
	return s, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		m := map[string]int{}
		for k, v := range ops {
			m[k] = v
		}
		return m
	}
}

var allOldScope = idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k-001"}

// TestCreateMetALLOLD: a refused Create uses the item returned with the
// condition failure and makes no second call.
func TestCreateMetALLOLD(t *testing.T) {
	s, ops := allOldServer(t)
	now := time.Now()
	rec := &idemkit.Record{ID: allOldScope.ID(false), Scope: allOldScope, State: idemkit.StateInFlight, Owner: "other", Version: "v-other",
		LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
	ex, err := s.Create(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	if ex == nil || ex.ID != rec.ID || ex.State != idemkit.StateCompleted || ex.Owner != "5b7f7a1e-6a55-4c36-9a53-0d1f3d2e9c41" || ex.Scope != allOldScope || ex.Version != "" {
		t.Fatalf("met %+v", ex)
	}
	if ex.Snapshot == nil || ex.Snapshot.Status != 201 || string(ex.Snapshot.Body) != `{"id":"ord_1","status":"accepted"}` || ex.Snapshot.Header.Get("Location") != "/orders/ord_1" {
		t.Fatalf("met snapshot %+v", ex.Snapshot)
	}
	if got := ops(); got["PutItem"] != 1 || len(got) != 1 {
		t.Fatalf("calls %v, want one PutItem and nothing else", got)
	}
}

// TestReplayUsageALLOLD: a replay through the engine is one round trip.
func TestReplayUsageALLOLD(t *testing.T) {
	s, ops := allOldServer(t)
	g, obs := observed(t, s)
	snap, replayed, err := g.Do(context.Background(), idemkit.Request{Scope: allOldScope, Fingerprint: "v1:sha256:3f0c5b2a"}, func(context.Context) (*idemkit.Snapshot, error) {
		t.Error("handler ran on a replay")
		return nil, errors.New("ran")
	})
	if err != nil || !replayed || snap.Status != 201 {
		t.Fatalf("Do = %+v, %v, %v; want a replay of 201", snap, replayed, err)
	}
	ev := obs.Last()
	if ev.Kind != observe.EventReplayed || ev.Usage.Calls != 1 || ev.Usage.WriteUnits < 1 {
		t.Fatalf("event %s usage %+v, want replayed in 1 call with write units", ev.Kind, ev.Usage)
	}
	if got := ops(); got["PutItem"] != 1 || len(got) != 1 {
		t.Fatalf("calls %v, want one PutItem", got)
	}
}

// claimPut tells a claim's PutItem (a Create of an in_flight record) from
// a release's; releaseWrite tells a release, a Create or a Replace that
// stores a tombstone.
func claimPut(b []byte) bool { return bytes.Contains(b, []byte(`"st":{"S":"in_flight"}`)) }

func releaseWrite(b []byte) bool { return bytes.Contains(b, []byte(`{"S":"released"}`)) }

// TestLostClaimAnswers: a claim whose every SDK attempt is applied with
// its answer lost is made again by the engine with the same owner token,
// recognised as ours, and run once.
func TestLostClaimAnswers(t *testing.T) {
	s, _, clean, table := faultyStore(t, dynamo.Options{MaxBackoff: time.Millisecond},
		faults.Rule{Op: "PutItem", Match: claimPut, Times: dynamo.DefaultMaxAttempts, Kind: faults.LostAck})
	g := guardWith(t, idemkit.Config{Store: s, ClaimBackoff: time.Millisecond})
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "lost-1"}, Fingerprint: "v1:sha256:l"}
	runs := 0
	snap, replayed, err := g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
		runs++
		return &idemkit.Snapshot{Status: 201, Body: []byte("ok")}, nil
	})
	if err != nil || replayed || snap.Status != 201 || runs != 1 {
		t.Fatalf("Do: %+v replayed %v err %v runs %d", snap, replayed, err, runs)
	}
	cs, _ := dynamo.New(clean, table, dynamo.Options{})
	if rec, err := cs.Get(context.Background(), req.Scope.ID(false)); err != nil || rec.State != idemkit.StateCompleted {
		t.Fatalf("record %+v %v, want completed", rec, err)
	}
}

// TestLostClaimNotFreed: when the claims' answers are all lost and the
// release fails too, the caller is told a claim may be held, and the
// claim left behind is listed as a stale lease once its lease ends.
func TestLostClaimNotFreed(t *testing.T) {
	s, _, clean, table := faultyStore(t, dynamo.Options{MaxBackoff: time.Millisecond, IndexInFlight: true},
		faults.Rule{Op: "PutItem", Match: claimPut, Times: -1, Kind: faults.LostAck},
		faults.Rule{Op: "PutItem", Match: releaseWrite, Times: -1, Kind: faults.ServerError},
		faults.Rule{Op: "UpdateItem", Match: releaseWrite, Times: -1, Kind: faults.ServerError})
	g := guardWith(t, idemkit.Config{Store: s, ClaimBackoff: time.Millisecond, Policy: idemkit.Policy{Lease: time.Second}})
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "lost-2"}, Fingerprint: "v1:sha256:l"}
	_, _, err := g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
		t.Error("handler ran")
		return nil, nil
	})
	var cu *idemkit.ClaimUnknownError
	if !errors.As(err, &cu) || !errors.Is(err, idemkit.ErrStoreUnavailable) {
		t.Fatalf("Do: %v, want a *ClaimUnknownError", err)
	}
	cs, _ := dynamo.New(clean, table, dynamo.Options{IndexInFlight: true})
	after := cu.LeaseUntil.Add(time.Second)
	recs, _, err := cs.ListStale(context.Background(), "acme", "", 10, after)
	if err != nil || len(recs) != 1 || recs[0].ID != req.Scope.ID(false) {
		t.Fatalf("ListStale after the lease: %v %v", recs, err)
	}
}
