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
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/internal/testing/testclock"
)

// TestRenewalCalls: a renewal (a Replace of the run's in_flight record by
// one with a later lease) is one UpdateItem that writes the lease and the
// version alone. One whose version was replaced meanwhile (a late copy of
// an earlier renewal, after a later one; a renewal after a mark or a
// release) is refused by its condition and returns the record stored, with
// the refusal, or, where the server does not return it, read by one
// consistent GetItem; over no record it is ErrNotFound. A refusal writes
// nothing: the lease never moves back. (That a renewal never asks for an
// earlier lease is the engine's rule: idemkit's transition tests.)
func TestRenewalCalls(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before func(t *testing.T, s *dynamo.Store, rec *idemkit.Record, now time.Time) *idemkit.Record // the record stored then
		want   idemkit.State                                                                           // the state met; "": stored
		absent bool                                                                                    // ErrNotFound
	}{
		{name: "later"},
		{name: "after a later renewal", before: func(t *testing.T, s *dynamo.Store, rec *idemkit.Record, now time.Time) *idemkit.Record {
			return change(t, s, rec, func(r *idemkit.Record) { r.LeaseUntil = r.LeaseUntil.Add(2 * time.Minute) })
		}, want: idemkit.StateInFlight},
		{name: "after a mark", before: func(t *testing.T, s *dynamo.Store, rec *idemkit.Record, now time.Time) *idemkit.Record {
			return change(t, s, rec, markedUnknown(now))
		}, want: idemkit.StateIndeterminate},
		{name: "after a release", before: func(t *testing.T, s *dynamo.Store, rec *idemkit.Record, now time.Time) *idemkit.Record {
			return change(t, s, rec, releasedAt(now))
		}, want: idemkit.StateReleased},
		{name: "never created", before: func(t *testing.T, s *dynamo.Store, rec *idemkit.Record, now time.Time) *idemkit.Record {
			rec.ID += "-never-created"
			return nil
		}, absent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, cs, ft := faultyPair(t, http.DefaultTransport, dynamo.Options{})
			ctx := context.Background()
			rec, now := inFlightRecord(t, cs, "renew-"+tc.name, 10*time.Second)
			stored := rec
			if tc.before != nil {
				stored = tc.before(t, cs, rec, now)
			}
			renewed := rec.Clone()
			renewed.Version, renewed.LeaseUntil = "v-renewed", rec.LeaseUntil.Add(time.Minute)
			met, err := s.Replace(ctx, renewed, rec)
			switch {
			case tc.absent:
				if !errors.Is(err, idemkit.ErrNotFound) || met != nil {
					t.Fatalf("Replace: %+v, %v; want ErrNotFound", met, err)
				}
			case tc.want == "":
				if err != nil || met != nil {
					t.Fatalf("Replace: %+v, %v; want stored", met, err)
				}
			case err != nil || met == nil || met.State != tc.want || met.Version != stored.Version:
				t.Fatalf("Replace: %+v, %v; want the %s record of version %s", met, err, tc.want, stored.Version)
			}
			refused := tc.want != "" || tc.absent
			wantGets := 0
			if refused && (tc.absent || !dynalite.Has(t, dynalite.AllOldOnConditionFailure)) {
				wantGets = 1
			}
			if n, g := ft.Calls("UpdateItem"), ft.Calls("GetItem"); n != 1 || g != wantGets {
				t.Errorf("%d UpdateItem, %d GetItem calls; want 1 and %d", n, g, wantGets)
			}
			if tc.absent {
				return
			}
			want := renewed
			if refused {
				want = stored
			}
			got := get(t, cs, rec.ID)
			if got.Version != want.Version || !got.LeaseUntil.Equal(want.LeaseUntil) || got.State != want.State {
				t.Fatalf("stored %+v; want version %s, lease until %v", got, want.Version, want.LeaseUntil)
			}
		})
	}
}

// TestRenewalErrors: a renewal that fails, or is refused and its record
// cannot be read, is a StoreError, neither a record met nor ErrNotFound:
// the renewal may well have landed, and the lease is not given up on a
// call that failed.
func TestRenewalErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rule  faults.Rule
		stale bool // the renewal replaces a version no longer stored
	}{
		{"unavailable", faults.Rule{Op: "UpdateItem", Times: -1, Kind: faults.ServerError}, false},
		{"refused/unreadable", faults.Rule{Op: "GetItem", Times: -1, Kind: faults.ServerError}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A refusal carries no item, as on a server that does not
			// return it: the store must read the record.
			s, cs, ft := faultyPair(t, faults.WithoutConditionItem(http.DefaultTransport), dynamo.Options{MaxBackoff: time.Millisecond}, tc.rule)
			ctx := context.Background()
			rec, _ := inFlightRecord(t, cs, "renew-"+tc.name, 10*time.Second)
			prev := rec
			if tc.stale {
				prev = rec.Clone()
				prev.Version = "v-earlier"
			}
			renewed := rec.Clone()
			renewed.Version, renewed.LeaseUntil = "v-renewed", rec.LeaseUntil.Add(time.Minute)
			met, err := s.Replace(ctx, renewed, prev)
			var se *idemkit.StoreError
			if !errors.As(err, &se) || errors.Is(err, idemkit.ErrNotFound) || met != nil {
				t.Fatalf("Replace: %+v, %v; want a StoreError", met, err)
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
	g := guardWith(t, idemkit.Config{Store: s, Policy: idemkit.Policy{Lease: 10 * time.Second, Heartbeat: 20 * time.Millisecond}})
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "renew-1"}, Fingerprint: "v1:sha256:r"}
	var first, renewed time.Time
	_, _, err := g.Do(context.Background(), req, func(ctx context.Context) (*idemkit.Snapshot, error) {
		stop := time.Now().Add(10 * time.Second)
		for time.Now().Before(stop) {
			rec, err := s.Get(ctx, req.Scope.ID(false))
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
	ec := &renewals{Store: s, renewed: make(chan struct{}, 1)}
	pol := idemkit.Policy{Lease: 2 * time.Second, Heartbeat: 20 * time.Millisecond}
	a := guardWith(t, idemkit.Config{Store: ec, Policy: pol})
	b := guardWith(t, idemkit.Config{Store: s, Policy: pol, Clock: testclock.Skewed(pol.Lease + time.Minute)})
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
	case <-ec.renewed:
	case <-time.After(10 * time.Second):
		t.Fatal("no renewal")
	}
	_, _, err := b.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
		runs.Add(1)
		return &idemkit.Snapshot{Status: 201, Body: []byte("again")}, nil
	})
	if !errors.Is(err, idemkit.ErrIndeterminate) {
		t.Fatalf("request seeing the lease ended: %v, want ErrIndeterminate", err)
	}
	// The next renewal is refused; none follows it.
	deadline := time.Now().Add(10 * time.Second)
	for ec.refused.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("renewals of a record marked indeterminate were not refused")
		}
		time.Sleep(5 * time.Millisecond) // poll for the refused renewal
	}
	calls := ec.calls.Load()
	close(finish)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := ec.calls.Load(); n != calls {
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

// renewals wraps a store, counting the renewals written through it (a
// Replace of an in_flight record by its owner's in_flight record): every
// one, the refused ones, and a value on renewed for each one stored, when
// there is room.
type renewals struct {
	*dynamo.Store
	calls, refused atomic.Int32
	renewed        chan struct{}
}

func (r *renewals) Replace(ctx context.Context, rec, prev *idemkit.Record) (*idemkit.Record, error) {
	renewal := rec.State == idemkit.StateInFlight && prev.State == idemkit.StateInFlight && rec.Owner == prev.Owner
	met, err := r.Store.Replace(ctx, rec, prev)
	if renewal {
		r.calls.Add(1)
		switch {
		case err == nil && met != nil && met.Version != rec.Version:
			r.refused.Add(1)
		case err == nil:
			select {
			case r.renewed <- struct{}{}:
			default:
			}
		}
	}
	return met, err
}
