package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/eventlog"
	"github.com/idemkit/idemkit/internal/faults"
)

// racyGets stands for other requests changing the record between a
// claim's failed PutItem and its GetItem: before and after run around
// every GetItem. It drops the item a failed PutItem returns, as a server
// without ReturnValuesOnConditionCheckFailure does (dynalite), so that the
// claim reads the record whatever the test server is.
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

// TestClaimRecordVanishes: when the record that failed a claim's condition
// is gone by the time it is read, the claim is tried again; it is never
// reported won unless its write succeeded.
func TestClaimRecordVanishes(t *testing.T) {
	c := client(t)
	table := newTable(t, c)
	ctx := context.Background()
	now := base()
	direct, _ := dynamo.New(c, table, testOptions())
	rec := func(key, owner string) *idemkit.Record {
		sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: key}
		return &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v1:sha256:v", Owner: owner, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	}
	hold := func(r *idemkit.Record) func() {
		return func() {
			if res, err := direct.Claim(ctx, r, now); err != nil || !res.Won {
				t.Errorf("holder claim: %+v, %v", res, err)
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

	t.Run("released between the calls", func(t *testing.T) {
		holder, mine := rec("once", "holder"), rec("once", "mine")
		hold(holder)()
		racy := &racyGets{Client: c, before: release(holder)}
		s, _ := dynamo.New(racy, table, testOptions())
		res, err := s.Claim(ctx, mine, now)
		if err != nil || !res.Won {
			t.Fatalf("claim: %+v, %v; want a win once the holder released", res, err)
		}
		if n := racy.puts.Load(); n != 2 {
			t.Fatalf("%d PutItem calls, want 2", n)
		}
		if got, err := direct.Get(ctx, mine.ID, now); err != nil || got.Owner != "mine" {
			t.Fatalf("stored %+v, %v", got, err)
		}
	})

	// The record read after the failed write changed (its key may run
	// again) but is still there: the claim is shown it as it is now, for
	// the engine to decide, and stores nothing.
	for _, tc := range []struct {
		name   string
		state  idemkit.State
		change func(holder *idemkit.Record)
	}{
		{"resolved as failed between the calls", idemkit.StateFailed, func(holder *idemkit.Record) {
			if err := direct.MarkUnknown(ctx, holder.ID, "holder", now); err != nil {
				t.Error(err)
			}
			if _, err := direct.Resolve(ctx, holder.ID, holder.Owner, idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops"}, now); err != nil {
				t.Error(err)
			}
		}},
		{"lease ended between the calls", idemkit.StateInFlight, func(holder *idemkit.Record) {
			// The lease's end moved into the past (Extend never moves it
			// back): as if the holder's lease had ended.
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(table), Key: map[string]types.AttributeValue{dynamo.AttrID: S(holder.ID)},
				UpdateExpression:          aws.String("SET #lu = :lu"),
				ExpressionAttributeNames:  map[string]string{"#lu": dynamo.AttrLeaseUntil},
				ExpressionAttributeValues: map[string]types.AttributeValue{":lu": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(-time.Second).UnixMilli(), 10)}},
			})
			if err != nil {
				t.Error(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holder, mine := rec(tc.name, "holder"), rec(tc.name, "mine")
			hold(holder)()
			racy := &racyGets{Client: c, before: func() { tc.change(holder) }}
			s, _ := dynamo.New(racy, table, testOptions())
			res, err := s.Claim(ctx, mine, now)
			if err != nil || res.Won || res.Existing == nil || res.Existing.State != tc.state || res.Existing.Owner != "holder" {
				t.Fatalf("claim: %+v, %v; want lost to the holder's %s record as read", res, err, tc.state)
			}
			if n := racy.puts.Load(); n != 1 {
				t.Fatalf("%d PutItem calls, want 1", n)
			}
			if got, err := direct.Get(ctx, mine.ID, now); err != nil || got.Owner != "holder" {
				t.Fatalf("stored %+v, %v; want the holder's record", got, err)
			}
		})
	}

	t.Run("keeps changing", func(t *testing.T) {
		// Before each read the holder releases; after it, a holder claims
		// again: every write of ours fails and every read finds nothing.
		holder, mine := rec("churn", "holder"), rec("churn", "mine")
		hold(holder)()
		racy := &racyGets{Client: c, before: release(holder), after: hold(holder)}
		s, _ := dynamo.New(racy, table, testOptions())
		res, err := s.Claim(ctx, mine, now)
		if err != nil || res.Won || res.Existing != nil {
			t.Fatalf("claim: %+v, %v; want lost with no record, for the engine to retry", res, err)
		}
		if n := racy.puts.Load(); n != 3 {
			t.Fatalf("%d PutItem calls, want 3", n)
		}
		if got, err := direct.Get(ctx, holder.ID, now); err != nil || got.Owner != "holder" {
			t.Fatalf("stored %+v, %v; want the holder's record", got, err)
		}
		// Through the engine the churn ends in a conflict; nothing runs.
		g, _ := idemkit.New(idemkit.Config{Store: s})
		_, _, err = g.Do(ctx, idemkit.Request{Scope: mine.Scope, Fingerprint: mine.Fingerprint}, func(context.Context) (*idemkit.Snapshot, error) {
			t.Error("handler ran without a claim")
			return nil, errors.New("ran")
		})
		if !errors.Is(err, idemkit.ErrInFlight) {
			t.Fatalf("Do: %v, want ErrInFlight", err)
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
	s, err := dynamo.New(c, "idem", dynamo.Options{})
	if err != nil {
		t.Fatal(err)
	}
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

// TestClaimLostALLOLD: a lost claim uses the item returned with the
// condition failure and makes no second call.
func TestClaimLostALLOLD(t *testing.T) {
	s, ops := allOldServer(t)
	now := time.Now()
	rec := &idemkit.Record{ID: allOldScope.ID(false), Scope: allOldScope, State: idemkit.StateInFlight, Owner: "other", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
	res, err := s.Claim(context.Background(), rec, now)
	if err != nil {
		t.Fatal(err)
	}
	if res.Won || res.Existing == nil {
		t.Fatalf("claim result %+v, want lost with the existing record", res)
	}
	ex := res.Existing
	if ex.ID != rec.ID || ex.State != idemkit.StateCompleted || ex.Owner != "5b7f7a1e-6a55-4c36-9a53-0d1f3d2e9c41" || ex.Scope != allOldScope {
		t.Fatalf("existing record %+v", ex)
	}
	if ex.Snapshot == nil || ex.Snapshot.Status != 201 || string(ex.Snapshot.Body) != `{"id":"ord_1","status":"accepted"}` || ex.Snapshot.Header.Get("Location") != "/orders/ord_1" {
		t.Fatalf("existing snapshot %+v", ex.Snapshot)
	}
	if got := ops(); got["PutItem"] != 1 || len(got) != 1 {
		t.Fatalf("calls %v, want one PutItem and nothing else", got)
	}
}

// TestReplayUsageALLOLD: a replay through the engine is one round trip.
func TestReplayUsageALLOLD(t *testing.T) {
	s, ops := allOldServer(t)
	obs := &eventlog.Log{}
	g, err := idemkit.New(idemkit.Config{Store: s, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	snap, replayed, err := g.Do(context.Background(), idemkit.Request{Scope: allOldScope, Fingerprint: "v1:sha256:3f0c5b2a"}, func(context.Context) (*idemkit.Snapshot, error) {
		t.Error("handler ran on a replay")
		return nil, errors.New("ran")
	})
	if err != nil || !replayed || snap.Status != 201 {
		t.Fatalf("Do = %+v, %v, %v; want a replay of 201", snap, replayed, err)
	}
	ev := obs.Last()
	if ev.Kind != idemkit.EventReplayed || ev.Usage.Calls != 1 || ev.Usage.WriteUnits < 1 {
		t.Fatalf("event %s usage %+v, want replayed in 1 call with write units", ev.Kind, ev.Usage)
	}
	if got := ops(); got["PutItem"] != 1 || len(got) != 1 {
		t.Fatalf("calls %v, want one PutItem", got)
	}
}

// claimPut tells a claim's PutItem from a completion's and a release's;
// releasePut a release's.
func claimPut(b []byte) bool { return bytes.Contains(b, []byte(`"st":{"S":"in_flight"}`)) }

func releasePut(b []byte) bool { return bytes.Contains(b, []byte(`"st":{"S":"released"}`)) }

// TestLostClaimAnswers: a claim whose every SDK attempt is applied with
// its answer lost is made again by the engine with the same owner token,
// recognised as ours, and run once.
func TestLostClaimAnswers(t *testing.T) {
	s, _, clean, table := faultyStore(t, dynamo.Options{MaxBackoff: time.Millisecond},
		faults.Rule{Op: "PutItem", Match: claimPut, Times: dynamo.DefaultMaxAttempts, Kind: faults.LostAck})
	g, err := idemkit.New(idemkit.Config{Store: s, ClaimBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
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
	if rec, err := cs.Get(context.Background(), req.Scope.ID(false), time.Now()); err != nil || rec.State != idemkit.StateCompleted {
		t.Fatalf("record %+v %v, want completed", rec, err)
	}
}

// TestLostClaimNotFreed: when the claims' answers are all lost and the
// release fails too, the caller is told a claim may be held, and the
// claim left behind is listed as a stale lease once its lease ends.
func TestLostClaimNotFreed(t *testing.T) {
	s, _, clean, table := faultyStore(t, dynamo.Options{MaxBackoff: time.Millisecond, IndexInFlight: true},
		faults.Rule{Op: "PutItem", Match: claimPut, Times: -1, Kind: faults.LostAck},
		faults.Rule{Op: "PutItem", Match: releasePut, Times: -1, Kind: faults.ServerError})
	g, err := idemkit.New(idemkit.Config{Store: s, ClaimBackoff: time.Millisecond, Policy: idemkit.Policy{Lease: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "lost-2"}, Fingerprint: "v1:sha256:l"}
	_, _, err = g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
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
