package idemkit_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/policydefault"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/memstore"
)

// TestRenewedLeaseOutlivesRetention: a handler whose lease is renewed
// (no deadline) may run longer than a short record retention. The record
// must outlive every lease its renewals can reach: a retry while the
// first execution still runs, after the retention but within the renewed
// lease, must not find the key free and run the handler a second time.
//
// Real time, because renewals run on real timers: the retention is 300 ms,
// the lease 200 ms renewed every 20 ms, and the retry comes 400 ms after
// the handler started.
func TestRenewedLeaseOutlivesRetention(t *testing.T) {
	fs := faultstore.New(memstore.New())
	extended := make(chan struct{}, 1)
	fs.OnOp(faultstore.OpExtend, notify(extended))
	pol := idemkit.Policy{Lease: 200 * time.Millisecond, Heartbeat: 20 * time.Millisecond,
		ReplayWindow: 300 * time.Millisecond, RecordRetention: 300 * time.Millisecond}
	g, err := idemkit.New(idemkit.Config{Store: fs, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	started, finish := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := g.Do(context.Background(), req("long"), func(context.Context) (*idemkit.Snapshot, error) {
			runs.Add(1)
			close(started)
			<-finish
			return &idemkit.Snapshot{Status: 201, Body: []byte("first")}, nil
		})
		done <- err
	}()
	<-started
	// Wait past the retention, following the renewals; a renewal refused
	// (the record gone) stops them, and then the bounded wait ends it.
	begin := time.Now()
	for time.Since(begin) < pol.RecordRetention+pol.Lease/2 {
		select {
		case <-extended:
		case <-time.After(time.Second):
			t.Logf("no renewal for 1s after %s: the renewals stopped", time.Since(begin).Round(time.Millisecond))
		}
	}
	_, _, err = g.Do(context.Background(), req("long"), func(context.Context) (*idemkit.Snapshot, error) {
		runs.Add(1)
		return &idemkit.Snapshot{Status: 201, Body: []byte("second")}, nil
	})
	if !errors.Is(err, idemkit.ErrInFlight) && !errors.Is(err, idemkit.ErrIndeterminate) {
		t.Errorf("retry while the first execution runs on a renewed lease: %v, want in flight", err)
	}
	close(finish)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times", n)
	}
}

// TestLateRenewalStaysWithinTheRecord: a renewal made late (here the clock
// jumps 31.5 s past a 2 ms heartbeat) never sets a lease that ends after the
// record expires: the lease would claim to protect a key the store has
// already forgotten. The record is also made to live through every
// renewal made on time.
func TestLateRenewalStaysWithinTheRecord(t *testing.T) {
	f, fs := faultFixture(t, func(c *idemkit.Config) {
		c.Policy = idemkit.Policy{Heartbeat: 2 * time.Millisecond, MaxRenewals: 1000,
			ReplayWindow: 10 * time.Second, RecordRetention: 10 * time.Second}
	})
	extended := make(chan struct{}, 1)
	fs.OnOp(faultstore.OpExtend, notify(extended))
	start := f.clock.Now()
	f.do(t, req("late"), func(context.Context) (*idemkit.Snapshot, error) {
		rec, err := getLive(context.Background(), f.store, req("late").Scope.ID(false), f.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		// The first lease is the default 30 s; 1000 renewals every 2 ms
		// can reach 2 s past it.
		if want := start.Add(policydefault.Lease + 2*time.Second); rec.ExpiresAt.Before(want) {
			t.Errorf("record expires at +%s, before the last renewal can end (+%s)", rec.ExpiresAt.Sub(start), want.Sub(start))
		}
		f.clock.Advance(31*time.Second + 500*time.Millisecond)
		for i := 0; i < 2; i++ { // the second one began after the jump
			select {
			case <-extended:
			case <-time.After(5 * time.Second):
				t.Fatal("no renewal after the clock jumped: the record expired under its lease")
			}
		}
		rec, err = getLive(context.Background(), f.store, rec.ID, f.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if !rec.LeaseUntil.Before(rec.ExpiresAt) {
			t.Errorf("renewed lease ends at +%s, not before the record expires (+%s)", rec.LeaseUntil.Sub(start), rec.ExpiresAt.Sub(start))
		}
		// A late renewal stops LeaseMargin short of the record's expiry,
		// the clock skew a lease tolerates.
		if gap := rec.ExpiresAt.Sub(rec.LeaseUntil); gap < policydefault.LeaseMargin {
			t.Errorf("renewed lease ends %s before the record expires, want at least %s", gap, policydefault.LeaseMargin)
		}
		return &idemkit.Snapshot{Status: 201}, nil
	})
	if f.runs != 1 {
		t.Fatalf("ran %d times", f.runs)
	}
}

// TestPanicStopsRenewals: a handler that panics while its lease is being
// renewed frees the key, and no renewal is sent after the panic has left
// Do (a late renewal of a freed key could not land, but it would be a
// write for nothing and a goroutine outliving the request).
func TestPanicStopsRenewals(t *testing.T) {
	f, fs := faultFixture(t, func(c *idemkit.Config) { c.Policy.Heartbeat = time.Millisecond })
	extended := make(chan struct{}, 1)
	fs.OnOp(faultstore.OpExtend, notify(extended))
	var extends int // the renewals begun before the panic left Do
	func() {
		defer func() {
			extends = fs.CountOp(faultstore.OpExtend)
			if p := recover(); p != "renewing" {
				t.Fatalf("recovered %v, want the handler's panic", p)
			}
		}()
		f.do(t, req("panic"), func(context.Context) (*idemkit.Snapshot, error) {
			for i := 0; i < 2; i++ {
				<-extended
			}
			panic("renewing")
		})
	}()
	if releases := fs.CountOp(faultstore.OpRelease); releases != 1 {
		t.Fatalf("%d releases after the panic, want 1", releases)
	}
	// A bounded wait for a renewal, which must not come. The store counts
	// the renewals: one sent before the panic left Do may still sit in
	// the extended channel, so the channel does not tell.
	time.Sleep(20 * time.Millisecond)
	if n := fs.CountOp(faultstore.OpExtend); n != extends {
		t.Fatalf("%d renewals after the panic left Do", n-extends)
	}
	f.mustRun(t, req("panic"), respond(201, "ok"), 2, "retry after the panic")
}

// TestUnboundedRenewalsKeepASaneExpiry: a MaxRenewals that means "no
// bound" must not overflow the renewal span into a record that expires at
// once or never: the record keeps its retention, and its renewals stop
// short of its expiry.
func TestUnboundedRenewalsKeepASaneExpiry(t *testing.T) {
	// 1e8 renewals every 10 s span 31 years; 2044674408 of them overflow
	// to 63 years; the others overflow to a negative span.
	for _, n := range []int{100_000_000, 2044674408, 1 << 30, int(^uint(0) >> 1)} {
		f := newFixture(t, func(c *idemkit.Config) {
			c.Policy = idemkit.Policy{Heartbeat: 10 * time.Second, MaxRenewals: n}
		})
		start := f.clock.Now()
		f.do(t, req("unbounded"), func(context.Context) (*idemkit.Snapshot, error) {
			rec, err := getLive(context.Background(), f.store, req("unbounded").Scope.ID(false), f.clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			if life := rec.ExpiresAt.Sub(start); life < policydefault.RecordRetention || life > 11*365*24*time.Hour {
				t.Errorf("MaxRenewals %d: the record expires %s after the request", n, life)
			}
			return &idemkit.Snapshot{Status: 201}, nil
		})
	}
}

// TestRecordOutlivesLeaseByMargin: with a record retention shorter than
// the lease, the in_flight record still lives a minute past the lease (or
// LeaseMargin, when longer), the clock skew a record's life tolerates: an
// instance whose clock runs up to that much ahead finds the record, not a
// free key, while the owner's run may go on.
func TestRecordOutlivesLeaseByMargin(t *testing.T) {
	for _, margin := range []time.Duration{0, 100 * time.Millisecond, 5 * time.Second, 2 * time.Minute} {
		t.Run(margin.String(), func(t *testing.T) {
			clk := testclock.New()
			store := memstore.New()
			pol := idemkit.Policy{ReplayWindow: time.Second, RecordRetention: time.Second, LeaseMargin: margin}
			g, err := idemkit.New(idemkit.Config{Store: store, Policy: pol, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			// A minute, or the margin when longer (Policy.RecordRetention).
			want := max(margin, time.Minute)
			r := req("short-retention")
			ctx := clk.Deadline(t, context.Background(), 10*time.Second)
			_, _, err = g.Do(ctx, r, func(context.Context) (*idemkit.Snapshot, error) {
				rec, err := getLive(context.Background(), store, r.Scope.ID(false), clk.Now())
				if err != nil || rec == nil {
					t.Fatalf("Get: %v %v", rec, err)
				}
				if got := rec.ExpiresAt.Sub(rec.LeaseUntil); got < want {
					t.Errorf("the record expires %s after its lease, want at least %s", got, want)
				}
				return &idemkit.Snapshot{Status: 201}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRecordOutlivesDeadline: a Policy.Lease shorter than the request's
// deadline, without renewals, still keeps the record until after the
// deadline: the handler may run until then, and an expired record would
// free the key while it runs.
func TestRecordOutlivesDeadline(t *testing.T) {
	s := memstore.New()
	g, err := idemkit.New(idemkit.Config{Store: s, Policy: idemkit.Policy{
		Lease: time.Second, ReplayWindow: time.Millisecond, RecordRetention: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	r := req("deadline-outlived")
	var rec *idemkit.Record
	if _, _, err := g.Do(ctx, r, seeing(s, r.Scope.ID(false), time.Now, &rec)); err != nil {
		t.Fatal(err)
	}
	if !rec.ExpiresAt.After(deadline) {
		t.Fatalf("the record expires at %v, before the handler's deadline %v", rec.ExpiresAt, deadline)
	}
}
