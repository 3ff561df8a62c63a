package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/dynalite"
	"github.com/idemkit/idemkit/internal/faults"
	"github.com/idemkit/idemkit/internal/faultstore"
	"github.com/idemkit/idemkit/internal/testclock"
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

// TestLeaseRenewalEngine: a request without a deadline renews its lease in
// the table while the handler runs.
func TestLeaseRenewalEngine(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{IndexInFlight: true})
	// The lease outlasts its margin (2 s) by far: a run whose first renewals
	// are slow to land (a JVM server warming up) is not told its lease is lost.
	g, err := idemkit.New(idemkit.Config{Store: s, Policy: idemkit.Policy{Lease: 10 * time.Second, Heartbeat: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "renew-1"}, Fingerprint: "v1:sha256:r"}
	var first, renewed time.Time
	_, _, err = g.Do(context.Background(), req, func(ctx context.Context) (*idemkit.Snapshot, error) {
		stop := time.Now().Add(10 * time.Second)
		for time.Now().Before(stop) {
			rec, err := s.Get(ctx, req.Scope.ID(false), time.Now())
			if err != nil {
				return nil, err
			}
			if first.IsZero() {
				first = rec.LeaseUntil
			}
			if rec.LeaseUntil.After(first) {
				renewed = rec.LeaseUntil
				break
			}
			time.Sleep(10 * time.Millisecond) // poll the table for a renewal
		}
		return &idemkit.Snapshot{Status: 201}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if renewed.IsZero() {
		t.Fatalf("the lease (until %v) was never renewed in the table", first)
	}
}

// TestClockSkewDuringRenewals: two instances share the table; the second's
// clock is ahead of the first's by more than a lease. The first runs a
// handler without a deadline, renewing its lease; to the second the lease
// has ended, so under FailClosed it marks the record indeterminate instead
// of running the handler. The first's renewals are then refused and stop,
// and its completion (a known outcome) replaces the indeterminate record:
// later requests through either instance replay it. The handler runs once.
func TestClockSkewDuringRenewals(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	// The first instance's renewals are counted: refused, and renewed (a
	// value per successful one, when there is room).
	ec := faultstore.New(s)
	var refused atomic.Int32
	renewed := make(chan struct{}, 1)
	ec.On(faultstore.Extend, faultstore.Always(faultstore.Fault{Then: func(err error) {
		switch {
		case errors.Is(err, idemkit.ErrNotOwner):
			refused.Add(1)
		case err == nil:
			select {
			case renewed <- struct{}{}:
			default:
			}
		}
	}}))
	pol := idemkit.Policy{Lease: 2 * time.Second, Heartbeat: 20 * time.Millisecond}
	a, err := idemkit.New(idemkit.Config{Store: ec, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	b, err := idemkit.New(idemkit.Config{Store: s, Policy: pol, Clock: testclock.Skewed(pol.Lease + time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /shipments", Key: "skew-1"}, Fingerprint: "v2:sha256:k"}
	var runs atomic.Int32
	started, finish := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		snap, _, err := a.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
			runs.Add(1)
			close(started)
			<-finish
			return &idemkit.Snapshot{Status: 201, Body: []byte("shipped")}, nil
		})
		if err == nil && string(snap.Body) != "shipped" {
			err = fmt.Errorf("first caller got %q", snap.Body)
		}
		done <- err
	}()
	<-started
	select {
	case <-renewed:
	case <-time.After(10 * time.Second):
		t.Fatal("no renewal")
	}
	_, _, err = b.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
		runs.Add(1)
		return &idemkit.Snapshot{Status: 201, Body: []byte("again")}, nil
	})
	if !errors.Is(err, idemkit.ErrIndeterminate) {
		t.Fatalf("request seeing the lease ended: %v, want ErrIndeterminate", err)
	}
	// The next renewal is refused; none follows it.
	deadline := time.Now().Add(10 * time.Second)
	for refused.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("renewals of a record marked indeterminate were not refused")
		}
		time.Sleep(5 * time.Millisecond) // poll for the refused renewal
	}
	calls := ec.Count(faultstore.Extend)
	close(finish)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := ec.Count(faultstore.Extend); n != calls {
		t.Errorf("%d renewals after one was refused", n-calls)
	}
	for name, g := range map[string]*idemkit.Guard{"first": a, "second": b} {
		snap, replayed, err := g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
			runs.Add(1)
			return &idemkit.Snapshot{Status: 201, Body: []byte("again")}, nil
		})
		if err != nil || !replayed || string(snap.Body) != "shipped" {
			t.Errorf("retry through the %s instance: %v replayed %v err %v, want the late completion replayed", name, snap, replayed, err)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}
