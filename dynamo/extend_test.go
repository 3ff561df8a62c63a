package dynamo_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/dynalite"
	"github.com/idemkit/idemkit/internal/faults"
)

// TestExtendCalls: a renewal to a later or the same lease end (a retry of
// one whose answer was lost) is one UpdateItem; one to an earlier end (a
// late copy of an earlier renewal) is refused by the condition and told
// from a record that is no longer ours (marked, or released into a
// tombstone) by the item returned with the refusal, or, where the server
// does not return it, by one consistent GetItem. The lease never moves back.
func TestExtendCalls(t *testing.T) {
	for _, tc := range []struct {
		name    string
		before  func(t *testing.T, s *dynamo.Store, rec *idemkit.Record, now time.Time)
		lease   time.Duration // the renewal's lease end, from the claimed one
		want    error
		refused bool          // the UpdateItem's condition fails
		absent  bool          // on a record never written: no item comes with the refusal
		stored  time.Duration // the lease end stored after it, from the claimed one
	}{
		{name: "later", lease: time.Minute, stored: time.Minute},
		{name: "same", lease: 0, stored: 0},
		{name: "earlier", lease: -time.Second, refused: true, stored: 0},
		{name: "earlier/marked", before: func(t *testing.T, s *dynamo.Store, rec *idemkit.Record, now time.Time) {
			if err := s.MarkUnknown(context.Background(), rec.ID, rec.Owner, now); err != nil {
				t.Fatal(err)
			}
		}, lease: -time.Second, want: idemkit.ErrNotOwner, refused: true},
		{name: "later/released", before: func(t *testing.T, s *dynamo.Store, rec *idemkit.Record, now time.Time) {
			if err := s.Release(context.Background(), rec.ID, rec.Owner, now); err != nil {
				t.Fatal(err)
			}
		}, lease: time.Minute, want: idemkit.ErrNotOwner, refused: true}, // the release leaves a tombstone, which comes with the refusal
		{name: "later/never-claimed", before: func(t *testing.T, s *dynamo.Store, rec *idemkit.Record, now time.Time) {
			rec.ID += "-never-claimed"
		}, lease: time.Minute, want: idemkit.ErrNotOwner, refused: true, absent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, cs, ft := faultyPair(t, http.DefaultTransport, dynamo.Options{})
			ctx := context.Background()
			rec, now := inFlightRecord(t, cs, "extend-"+tc.name, 10*time.Second)
			if tc.before != nil {
				tc.before(t, cs, rec, now)
			}
			err := s.Extend(ctx, rec.ID, rec.Owner, rec.LeaseUntil.Add(tc.lease), now)
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("Extend: %v, want %v", err, tc.want)
			}
			wantGets := 0
			if tc.refused && (tc.absent || !dynalite.Has(t, dynalite.AllOldOnConditionFailure)) {
				wantGets = 1
			}
			if n, g := ft.Calls("UpdateItem"), ft.Calls("GetItem"); n != 1 || g != wantGets {
				t.Errorf("%d UpdateItem, %d GetItem calls; want 1 and %d", n, g, wantGets)
			}
			if tc.want != nil {
				return
			}
			got, err := cs.Get(ctx, rec.ID, now)
			if err != nil || !got.LeaseUntil.Equal(rec.LeaseUntil.Add(tc.stored)) || got.State != idemkit.StateInFlight {
				t.Fatalf("stored %+v %v; want in_flight with the lease until %v", got, err, rec.LeaseUntil.Add(tc.stored))
			}
		})
	}
}

// TestExtendErrors: a renewal that fails, or is refused and its record
// cannot be read again, is a StoreError, not ErrNotOwner: the renewal may
// well be ours (a late copy of an earlier one), and the lease is not given
// up on a call that failed.
func TestExtendErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rule  faults.Rule
		lease time.Duration // the renewal's lease end, from the claimed one
	}{
		{"unavailable", faults.Rule{Op: "UpdateItem", Times: -1, Kind: faults.ServerError}, time.Minute},
		{"refused/unreadable", faults.Rule{Op: "GetItem", Times: -1, Kind: faults.ServerError}, -time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A refusal carries no item, as on a server that does not
			// return it: the store must read the record.
			s, cs, ft := faultyPair(t, faults.WithoutConditionItem(http.DefaultTransport), dynamo.Options{MaxBackoff: time.Millisecond}, tc.rule)
			ctx := context.Background()
			rec, now := inFlightRecord(t, cs, "extend-"+tc.name, 10*time.Second)
			err := s.Extend(ctx, rec.ID, rec.Owner, rec.LeaseUntil.Add(tc.lease), now)
			var se *idemkit.StoreError
			if !errors.As(err, &se) || errors.Is(err, idemkit.ErrNotOwner) {
				t.Fatalf("Extend: %v; want a StoreError", err)
			}
			if len(ft.Events()) == 0 {
				t.Fatal("no fault injected")
			}
		})
	}
}
