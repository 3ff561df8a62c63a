package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/eventlog"
	"github.com/idemkit/idemkit/internal/testing/faults"
)

// markUpdate and resolveUpdate tell a mark's UpdateItem (a record made
// indeterminate) and a resolution's (one that writes a Resolution) from a
// renewal's.
func markUpdate(b []byte) bool { return bytes.Contains(b, []byte(`{"S":"indeterminate"}`)) }

func resolveUpdate(b []byte) bool { return bytes.Contains(b, []byte("ra = :")) }

// stateChange is a change the engine makes to an in_flight record whose
// lease has ended, at: marked before it when marked.
type stateChange struct {
	marked bool
	change func(at time.Time) func(*idemkit.Record)
	want   idemkit.State
}

var stateChanges = map[string]stateChange{
	"mark indeterminate": {false, func(time.Time) func(*idemkit.Record) { return markedStale }, idemkit.StateIndeterminate},
	"mark unknown":       {false, markedUnknown, idemkit.StateIndeterminate},
	"resolve failed":     {true, resolvedFailed, idemkit.StateFailed},
	"resolve completed": {true, func(at time.Time) func(*idemkit.Record) {
		return func(r *idemkit.Record) {
			r.State, r.CompletedAt, r.Snapshot = idemkit.StateCompleted, at, &idemkit.Snapshot{Status: 201, Body: []byte(`{"id":"ord_1"}`)}
			r.Resolution = &idemkit.Resolution{As: idemkit.StateCompleted, Operator: "ops", Reason: "checked", ResolvedAt: at}
		}
	}, idemkit.StateCompleted},
}

// apply stores through cs (which sees no faults) an in_flight record of
// key whose lease of a second has ended, marked when sc.marked, and makes
// the change through s, with version "v-change": it returns the record it
// replaced, the change, and the answer of s.Replace.
func (sc stateChange) apply(t *testing.T, s, cs *dynamo.Store, key string) (rec, next, met *idemkit.Record, err error) {
	t.Helper()
	rec, now := inFlightRecord(t, cs, key, time.Second)
	if sc.marked {
		rec = change(t, cs, rec, markedStale)
	}
	next = rec.Clone()
	sc.change(now.Add(2 * time.Second))(next)
	next.Version = "v-change"
	met, err = s.Replace(context.Background(), next, rec)
	return rec, next, met, err
}

// TestLostStateChangeAnswers: a mark or a resolution whose first attempt
// lands with its answer lost is refused on the SDK's retry (the version
// stored is its own now); the store returns the record stored as met,
// which carries the write's own version: the engine recognises its write.
// A later, distinct write of the same change, in place of the version
// first read, is refused with that record.
func TestLostStateChangeAnswers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kind  faults.Kind
		match func([]byte) bool
	}{
		{"mark indeterminate", faults.LostAck, markUpdate},
		{"mark indeterminate", faults.LostAckBody, markUpdate},
		{"mark unknown", faults.LostAck, markUpdate},
		{"mark unknown", faults.LostAckBody, markUpdate},
		{"resolve failed", faults.LostAck, resolveUpdate},
		{"resolve completed", faults.LostAckBody, resolveUpdate},
	} {
		sc := stateChanges[tc.name]
		t.Run(tc.name+"/"+tc.kind.String(), func(t *testing.T) {
			s, cs, ft := faultyPair(t, http.DefaultTransport, dynamo.Options{MaxBackoff: time.Millisecond},
				faults.Rule{Op: "UpdateItem", Match: tc.match, Times: 1, Kind: tc.kind})
			ctx := context.Background()
			rec, next, met, err := sc.apply(t, s, cs, "change-"+tc.name+tc.kind.String())
			if n := ft.Calls("UpdateItem"); n != 2 || len(ft.Events()) != 1 {
				t.Fatalf("%d UpdateItem calls, %d faults; want the answer lost once and the SDK's retry", n, len(ft.Events()))
			}
			if err != nil || met == nil || met.Version != next.Version || met.State != sc.want || met.Owner != rec.Owner {
				t.Fatalf("a change whose answer was lost: %+v, %v; want met: the record it stored", met, err)
			}
			// The refusal carries the item where the server returns it
			// (DynamoDB); otherwise one consistent read fetches it.
			wantGets := 1
			if dynalite.Has(t, dynalite.AllOldOnConditionFailure) {
				wantGets = 0
			}
			if n := ft.Calls("GetItem"); n != wantGets {
				t.Errorf("%d GetItem calls, want %d", n, wantGets)
			}
			if stored := get(t, cs, rec.ID); stored.State != sc.want || stored.Version != next.Version {
				t.Fatalf("stored record %+v, want %s", stored, sc.want)
			}
			// The same change made again, by another call: refused, with
			// the record stored.
			again := next.Clone()
			again.Version = "v-again"
			if met, err := cs.Replace(ctx, again, rec); err != nil || met == nil || met.Version != next.Version {
				t.Fatalf("the change made again: %+v, %v; want met by the first", met, err)
			}
		})
	}
}

// TestLostResolutionEngine: idemkit.Resolve through a store whose
// resolution's answer is lost once resolves the record, once.
func TestLostResolutionEngine(t *testing.T) {
	s, cs, ft := faultyPair(t, http.DefaultTransport, dynamo.Options{MaxBackoff: time.Millisecond},
		faults.Rule{Op: "UpdateItem", Match: resolveUpdate, Times: 1, Kind: faults.LostAck})
	rec, now := inFlightRecord(t, cs, "resolve-lost", time.Second)
	change(t, cs, rec, markedStale)
	at := now.Add(time.Second + time.Minute)
	got, was, err := idemkit.Resolve(context.Background(), s, rec.ID, idemkit.Resolution{As: idemkit.StateCompleted, Operator: "ops", Reason: "checked",
		Snapshot: &idemkit.Snapshot{Status: 201, Body: []byte(`{"id":"ord_1"}`)}}, at)
	if err != nil || was != idemkit.StateIndeterminate || got.State != idemkit.StateCompleted {
		t.Fatalf("Resolve: %+v, %s, %v", got, was, err)
	}
	if len(ft.Events()) != 1 {
		t.Fatalf("faults %v, want the resolution's answer lost once", ft.Events())
	}
	if stored := get(t, cs, rec.ID); stored.State != idemkit.StateCompleted || stored.Version != got.Version || string(stored.Snapshot.Body) != `{"id":"ord_1"}` {
		t.Fatalf("stored %+v", stored)
	}
}

// TestLostStateChangeErrors: a mark or a resolution that fails is a
// StoreError, neither a record met nor ErrNotFound, whether the write
// itself fails or it is refused (its answer lost, then its retry refused)
// and the record cannot be read to return it.
func TestLostStateChangeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, change string
		rules        []faults.Rule
	}{
		{"unavailable", "mark unknown", []faults.Rule{{Op: "UpdateItem", Times: -1, Kind: faults.ServerError}}},
		{"unreadable", "mark indeterminate", []faults.Rule{{Op: "UpdateItem", Match: markUpdate, Times: 1, Kind: faults.LostAck}, {Op: "GetItem", Times: -1, Kind: faults.ServerError}}},
		{"unavailable", "resolve failed", []faults.Rule{{Op: "UpdateItem", Match: resolveUpdate, Times: -1, Kind: faults.ServerError}}},
		{"unreadable", "resolve failed", []faults.Rule{{Op: "UpdateItem", Match: resolveUpdate, Times: 1, Kind: faults.LostAck}, {Op: "GetItem", Times: -1, Kind: faults.ServerError}}},
	} {
		sc := stateChanges[tc.change]
		t.Run(tc.change+"/"+tc.name, func(t *testing.T) {
			// A refusal carries no item, as on a server that does not
			// return it: the store must read the record.
			s, cs, ft := faultyPair(t, faults.WithoutConditionItem(http.DefaultTransport), dynamo.Options{MaxBackoff: time.Millisecond}, tc.rules...)
			_, _, met, err := sc.apply(t, s, cs, "change-err-"+tc.change+tc.name)
			var se *idemkit.StoreError
			if !errors.As(err, &se) || errors.Is(err, idemkit.ErrNotFound) || met != nil {
				t.Fatalf("change: %+v %v; want a StoreError", met, err)
			}
			if len(ft.Events()) < 2 {
				t.Fatalf("faults injected: %v, want the failed write or the lost answer and the failed read", ft.Events())
			}
		})
	}
}

// TestRefusedMarkUsage: a handler whose outcome is unknown has its claim
// marked; when a retry marked it first, the refused mark is still a call
// the request made and paid for (a failed conditional write costs at
// least one write unit), and so is the read that returns the record met
// where the refusal carries no item.
func TestRefusedMarkUsage(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	obs := &eventlog.Log{}
	g := guardWith(t, idemkit.Config{Store: s, Observer: obs, Policy: idemkit.Policy{Lease: time.Minute}})
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "refused-mark"}, Fingerprint: "v1:sha256:u"}
	_, _, err := g.Do(context.Background(), req, func(ctx context.Context) (*idemkit.Snapshot, error) {
		rec, err := s.Get(context.Background(), req.Scope.ID(false))
		if err != nil {
			return nil, err
		}
		// A retry, its lease over by its clock, marks the claim first
		// (outside this request: its calls are not this request's).
		change(t, s, rec, markedStale)
		return nil, idemkit.ErrOutcomeUnknown
	})
	if !errors.Is(err, idemkit.ErrOutcomeUnknown) {
		t.Fatalf("Do: %v, want the handler's ErrOutcomeUnknown", err)
	}
	u := obs.Last().Usage
	// The claim, the refused mark, and the read after it where the
	// refusal carries no item.
	calls := 3
	if dynalite.Has(t, dynalite.AllOldOnConditionFailure) {
		calls = 2
	}
	if u.Calls != calls || u.WriteUnits < 2 {
		t.Fatalf("usage %+v, want %d calls and at least 2 write units (the claim and the refused mark)", u, calls)
	}
}

// TestOutcomeUnknownEngine: a handler's ErrOutcomeUnknown leaves an
// indeterminate record in the table at once, listed for operators.
func TestOutcomeUnknownEngine(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	g := guard(t, s)
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "unknown-1"}, Fingerprint: "v1:sha256:u"}
	_, _, err := g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
		return nil, idemkit.ErrOutcomeUnknown
	})
	if !errors.Is(err, idemkit.ErrOutcomeUnknown) {
		t.Fatal(err)
	}
	recs, _, err := s.ListIndeterminate(context.Background(), "acme", "", 10, time.Now())
	if err != nil || len(recs) != 1 || recs[0].ID != req.Scope.ID(false) {
		t.Fatalf("ListIndeterminate: %v %v", recs, err)
	}
	if _, _, err := g.Do(context.Background(), req, okHandler(new(atomic.Int32), "again")); !errors.Is(err, idemkit.ErrIndeterminate) {
		t.Fatalf("retry: %v, want ErrIndeterminate", err)
	}
}
