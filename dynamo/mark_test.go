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
	"github.com/idemkit/idemkit/internal/dynalite"
	"github.com/idemkit/idemkit/internal/eventlog"
	"github.com/idemkit/idemkit/internal/faults"
)

// markUpdate and resolveUpdate tell a mark's UpdateItem (MarkUnknown,
// MarkIndeterminate) and a resolution's from a lease renewal's.
func markUpdate(b []byte) bool { return bytes.Contains(b, []byte("SET #st = :indeterminate")) }

func resolveUpdate(b []byte) bool { return bytes.Contains(b, []byte("REMOVE #ix, #it")) }

// TestLostStateChangeAnswers: a mark or a resolution whose first attempt
// lands with its answer lost is refused on the SDK's retry (the record is
// no longer in the state the condition asks for); the store recognises
// its own write by the token it wrote and reports it made (a resolution
// returns the changed record). A later, distinct write of the same kind
// is still refused.
func TestLostStateChangeAnswers(t *testing.T) {
	type change func(s *dynamo.Store, ctx context.Context, id, owner string, now time.Time) (*idemkit.Record, error)
	// A mark returns no record: the stored one is checked below.
	mark := func(f func(*dynamo.Store, context.Context, string, string, time.Time) error) change {
		return func(s *dynamo.Store, ctx context.Context, id, owner string, now time.Time) (*idemkit.Record, error) {
			return nil, f(s, ctx, id, owner, now)
		}
	}
	resolveAs := func(as idemkit.State) change {
		return func(s *dynamo.Store, ctx context.Context, id, owner string, now time.Time) (*idemkit.Record, error) {
			res := idemkit.Resolution{As: as, Operator: "ops", Reason: "checked"}
			if as == idemkit.StateCompleted {
				res.Snapshot = &idemkit.Snapshot{Status: 201, Body: []byte(`{"id":"ord_1"}`)}
			}
			return s.Resolve(ctx, id, owner, res, now)
		}
	}
	for _, tc := range []struct {
		name   string
		kind   faults.Kind
		marked bool // the record is indeterminate before the change
		match  func([]byte) bool
		change change
		want   idemkit.State
		refuse error
	}{
		{"MarkIndeterminate/lost-ack", faults.LostAck, false, markUpdate, mark((*dynamo.Store).MarkIndeterminate), idemkit.StateIndeterminate, idemkit.ErrNotOwner},
		{"MarkIndeterminate/lost-ack-body", faults.LostAckBody, false, markUpdate, mark((*dynamo.Store).MarkIndeterminate), idemkit.StateIndeterminate, idemkit.ErrNotOwner},
		{"MarkUnknown/lost-ack", faults.LostAck, false, markUpdate, mark((*dynamo.Store).MarkUnknown), idemkit.StateIndeterminate, idemkit.ErrNotOwner},
		{"MarkUnknown/lost-ack-body", faults.LostAckBody, false, markUpdate, mark((*dynamo.Store).MarkUnknown), idemkit.StateIndeterminate, idemkit.ErrNotOwner},
		{"Resolve-failed/lost-ack", faults.LostAck, true, resolveUpdate, resolveAs(idemkit.StateFailed), idemkit.StateFailed, idemkit.ErrNotIndeterminate},
		{"Resolve-completed/lost-ack-body", faults.LostAckBody, true, resolveUpdate, resolveAs(idemkit.StateCompleted), idemkit.StateCompleted, idemkit.ErrNotIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, cs, ft := faultyPair(t, http.DefaultTransport, dynamo.Options{MaxBackoff: time.Millisecond},
				faults.Rule{Op: "UpdateItem", Match: tc.match, Times: 1, Kind: tc.kind})
			ctx := context.Background()
			rec, now := inFlightRecord(t, cs, "change-"+tc.name, time.Second)
			at := now.Add(2 * time.Second) // the lease has ended
			if tc.marked {
				if err := cs.MarkIndeterminate(ctx, rec.ID, rec.Owner, at); err != nil {
					t.Fatal(err)
				}
			}
			got, err := tc.change(s, ctx, rec.ID, rec.Owner, at)
			if n := ft.Calls("UpdateItem"); n != 2 || len(ft.Events()) != 1 {
				t.Fatalf("%d UpdateItem calls, %d faults; want the answer lost once and the SDK's retry", n, len(ft.Events()))
			}
			if err != nil {
				t.Fatalf("a change whose answer was lost: %v, want the changed record", err)
			}
			if got != nil && (got.State != tc.want || got.Owner != rec.Owner || got.ID != rec.ID) {
				t.Fatalf("change returned %+v", got)
			}
			// The refusal carries the item where the server returns it
			// (DynamoDB); otherwise one consistent read fetches it.
			wantGets := 1
			if dynalite.Has(t, dynalite.AllOldOnConditionFailure) {
				wantGets = 0
			}
			if tc.marked {
				// A resolution reads the item first: the owner it is fenced
				// on and, completed, the size of its answer.
				wantGets++
			}
			if n := ft.Calls("GetItem"); n != wantGets {
				t.Errorf("%d GetItem calls, want %d", n, wantGets)
			}
			stored, err := cs.Get(ctx, rec.ID, at)
			if err != nil || stored.State != tc.want || stored.Owner != rec.Owner {
				t.Fatalf("stored record %+v %v, want %s", stored, err, tc.want)
			}
			// The same change made again, by another call: the contract's
			// refusal.
			if _, err := tc.change(cs, ctx, rec.ID, rec.Owner, at); !errors.Is(err, tc.refuse) {
				t.Fatalf("the change made again: %v, want %v", err, tc.refuse)
			}
		})
	}
}

// TestLostStateChangeErrors: a mark or a resolution that fails is a
// StoreError, not its refusal, whether the write itself fails or it is
// refused (its answer lost, then its retry refused) and the record cannot
// be read again to tell whether the write was its own.
func TestLostStateChangeErrors(t *testing.T) {
	resolve := func(s *dynamo.Store, ctx context.Context, id, owner string, now time.Time) (*idemkit.Record, error) {
		return s.Resolve(ctx, id, owner, idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops", Reason: "checked"}, now)
	}
	mark := func(f func(*dynamo.Store, context.Context, string, string, time.Time) error) func(*dynamo.Store, context.Context, string, string, time.Time) (*idemkit.Record, error) {
		return func(s *dynamo.Store, ctx context.Context, id, owner string, now time.Time) (*idemkit.Record, error) {
			return nil, f(s, ctx, id, owner, now)
		}
	}
	for _, tc := range []struct {
		name   string
		marked bool // the record is indeterminate before the change
		rules  []faults.Rule
		change func(s *dynamo.Store, ctx context.Context, id, owner string, now time.Time) (*idemkit.Record, error)
		refuse error
	}{
		{"MarkUnknown/unavailable", false, []faults.Rule{{Op: "UpdateItem", Times: -1, Kind: faults.ServerError}},
			mark((*dynamo.Store).MarkUnknown), idemkit.ErrNotOwner},
		{"MarkIndeterminate/unreadable", false, []faults.Rule{{Op: "UpdateItem", Match: markUpdate, Times: 1, Kind: faults.LostAck}, {Op: "GetItem", Times: -1, Kind: faults.ServerError}},
			mark((*dynamo.Store).MarkIndeterminate), idemkit.ErrNotOwner},
		{"Resolve/unavailable", true, []faults.Rule{{Op: "UpdateItem", Match: resolveUpdate, Times: -1, Kind: faults.ServerError}},
			resolve, idemkit.ErrNotIndeterminate},
		// The first GetItem is the resolution's read before its write.
		{"Resolve/unreadable", true, []faults.Rule{{Op: "UpdateItem", Match: resolveUpdate, Times: 1, Kind: faults.LostAck}, {Op: "GetItem", Skip: 1, Times: -1, Kind: faults.ServerError}},
			resolve, idemkit.ErrNotIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A refusal carries no item, as on a server that does not
			// return it: the store must read the record.
			s, cs, ft := faultyPair(t, faults.WithoutConditionItem(http.DefaultTransport), dynamo.Options{MaxBackoff: time.Millisecond}, tc.rules...)
			ctx := context.Background()
			rec, now := inFlightRecord(t, cs, "change-err-"+tc.name, time.Second)
			at := now.Add(2 * time.Second) // the lease has ended
			if tc.marked {
				if err := cs.MarkIndeterminate(ctx, rec.ID, rec.Owner, at); err != nil {
					t.Fatal(err)
				}
			}
			got, err := tc.change(s, ctx, rec.ID, rec.Owner, at)
			var se *idemkit.StoreError
			if !errors.As(err, &se) || errors.Is(err, tc.refuse) || got != nil {
				t.Fatalf("change: %+v %v; want a StoreError", got, err)
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
// least one write unit), and so is the read that tells it from the
// request's own mark where the refusal carries no item.
func TestRefusedMarkUsage(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	obs := &eventlog.Log{}
	g, err := idemkit.New(idemkit.Config{Store: s, Observer: obs, Policy: idemkit.Policy{Lease: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "refused-mark"}, Fingerprint: "v1:sha256:u"}
	_, _, err = g.Do(context.Background(), req, func(ctx context.Context) (*idemkit.Snapshot, error) {
		rec, err := s.Get(context.Background(), req.Scope.ID(false), time.Now())
		if err != nil {
			return nil, err
		}
		// A retry, its lease over by its clock, marks the claim first
		// (outside this request: its calls are not this request's).
		if err := s.MarkIndeterminate(context.Background(), rec.ID, rec.Owner, time.Now().Add(2*time.Minute)); err != nil {
			return nil, err
		}
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
	g, err := idemkit.New(idemkit.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "unknown-1"}, Fingerprint: "v1:sha256:u"}
	_, _, err = g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
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
