package dynamo_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/eventlog"
)

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
	res, err := s.Claim(context.Background(), rec, now, idemkit.ClaimOptions{})
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
