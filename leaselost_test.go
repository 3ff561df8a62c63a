package idemkit_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/eventlog"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/memstore"
)

// extendAnswers is a faultstore hook: each renewal, numbered n from 1,
// fails with extend(n) when that is not nil; a nil extend lets all pass.
func extendAnswers(extend func(n int) error) faultstore.Hook {
	return func(_ context.Context, c faultstore.Call) faultstore.Fault {
		if extend == nil {
			return faultstore.Fault{}
		}
		return faultstore.Fault{Err: extend(c.N)}
	}
}

// overlaps counts the runs of a handler and those that began while
// another was running.
type overlaps struct{ running, overlapped, runs atomic.Int32 }

// count returns h counting its runs in o.
func (o *overlaps) count(h idemkit.Handler) idemkit.Handler {
	return func(ctx context.Context) (*idemkit.Snapshot, error) {
		o.runs.Add(1)
		if o.running.Add(1) > 1 {
			o.overlapped.Add(1)
		}
		defer o.running.Add(-1)
		return h(ctx)
	}
}

// firstRun sends r through g with h in a goroutine of its own, logging
// its answer, and returns a channel closed when it has returned.
func firstRun(t *testing.T, g *idemkit.Guard, r idemkit.Request, h idemkit.Handler) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _, err := g.Do(context.Background(), r, h)
		t.Logf("first: %v", err)
	}()
	return done
}

var errStoreDown = &idemkit.StoreError{Op: "extend", Err: errors.New("503 service unavailable")}

// TestLeaseLost: a handler whose lease can no longer be held is told so,
// through its context, before the lease ends, under either policy: under
// Takeover another request may take the key over then and run the handler
// again; under FailClosed a retry marks the record indeterminate and an
// operator may resolve it a minute later (failed: a retry runs it again),
// and the key is kept. While the renewals land it is never cancelled.
//
// A 2 s lease renewed every 200 ms, LeaseMargin 1 s, so that a lease
// nobody renewed is given up 1 s before it ends. The renewals run on the
// system clock's timers inside a synctest bubble: time moves only when
// every goroutine waits, so a loaded machine cannot delay a renewal past
// its lease.
func TestLeaseLost(t *testing.T) {
	const (
		lease  = 2 * time.Second
		every  = 200 * time.Millisecond
		margin = time.Second
	)
	type leaseLost struct {
		name     string
		policy   idemkit.StalePolicy
		extend   func(n int) error
		renewals int           // MaxRenewals; 0: the default
		run      time.Duration // how long the handler runs unless cancelled
		lost     bool
		short    bool // a record retention shorter than the run
	}
	fail := func(int) error { return errStoreDown }
	refuse := func(int) error { return idemkit.ErrNotOwner }
	secondLands := func(n int) error {
		if n == 1 {
			return errStoreDown
		}
		return nil
	}
	var tests []leaseLost
	// The same five under either policy; a refused renewal is a takeover
	// under Takeover, a mark under FailClosed.
	for _, p := range []struct {
		name, refused string
		policy        idemkit.StalePolicy
	}{{"takeover", "taken over", idemkit.Takeover}, {"fail-closed", "marked indeterminate", idemkit.FailClosed}} {
		tests = append(tests,
			leaseLost{p.name + ", renewals fail", p.policy, fail, 0, 3 * lease, true, false},
			leaseLost{p.name + ", " + p.refused, p.policy, refuse, 0, 3 * lease, true, false},
			leaseLost{p.name + ", renewals run out", p.policy, nil, 3, 3 * lease, true, false},
			leaseLost{p.name + ", the second renewal lands after failures", p.policy, secondLands, 0, lease + lease/2, false, false},
			leaseLost{p.name + ", renewals land", p.policy, nil, 0, lease + lease/2, false, false},
		)
	}
	tests = append(tests,
		leaseLost{"fail-closed, renewals run out before the record expires", idemkit.FailClosed, nil, 3, 3 * lease, true, true},
		leaseLost{"fail-closed, renewals fail before the record expires", idemkit.FailClosed, fail, 3, 3 * lease, true, true},
		leaseLost{"fail-closed, the record outlives the run", idemkit.FailClosed, nil, 3, lease / 2, false, true},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				s := faultstore.New(memstore.New())
				s.OnOp(faultstore.OpExtend, extendAnswers(tt.extend))
				pol := idemkit.Policy{Lease: lease, Heartbeat: every, LeaseMargin: margin, MaxRenewals: tt.renewals, OnStaleLease: tt.policy}
				if tt.short {
					pol.ReplayWindow, pol.RecordRetention = time.Millisecond, time.Millisecond
				}
				g, err := idemkit.New(idemkit.Config{Store: s, Policy: pol})
				if err != nil {
					t.Fatal(err)
				}
				var lostAt time.Time
				var cause error
				start := time.Now()
				_, _, err = g.Do(context.Background(), req("lost-"+tt.name), func(ctx context.Context) (*idemkit.Snapshot, error) {
					select {
					case <-ctx.Done():
						lostAt, cause = time.Now(), context.Cause(ctx)
						return nil, ctx.Err()
					case <-time.After(tt.run):
						return &idemkit.Snapshot{Status: 201}, nil
					}
				})
				if !tt.lost {
					if err != nil || !lostAt.IsZero() {
						t.Fatalf("Do: %v; cancelled after %v (%v), want the handler to run to its end", err, lostAt.Sub(start), cause)
					}
					return
				}
				if lostAt.IsZero() {
					t.Fatalf("Do: %v; the handler ran to its end, want it cancelled with ErrLeaseLost", err)
				}
				if !errors.Is(cause, idemkit.ErrLeaseLost) {
					t.Errorf("cause %v, want ErrLeaseLost", cause)
				}
				if kept := errors.Is(err, idemkit.ErrOutcomeUnknown); kept != (tt.policy == idemkit.FailClosed) {
					t.Errorf("Do: %v; the key kept as an unknown outcome: %v, want %v", err, kept, tt.policy == idemkit.FailClosed)
				}
				// Told before the lease ends: the first lease where no renewal
				// landed, else the one the last renewal made.
				leaseEnd := start.Add(lease)
				if tt.extend == nil {
					leaseEnd = start.Add(time.Duration(tt.renewals)*every + lease)
					if lostAt.Before(start.Add(time.Duration(tt.renewals) * every)) {
						t.Errorf("cancelled %v after the start, before the last renewal was due", lostAt.Sub(start))
					}
				}
				if !lostAt.Before(leaseEnd) {
					t.Errorf("cancelled %v after the start, at or after the lease's end (%v)", lostAt.Sub(start), leaseEnd.Sub(start))
				}
			})
		})
	}
}

// TestLeaseLostIsReported: a handler that stops when told returns
// ctx.Err(), which says only "cancelled"; Do's error and the Observer's
// event say the lease was lost, under either policy. A handler cancelled
// by its caller while its renewals land is not said to have lost its
// lease.
func TestLeaseLostIsReported(t *testing.T) {
	for _, tt := range []struct {
		policy idemkit.StalePolicy
		lost   bool // the renewals fail; else they land and the caller cancels
	}{{idemkit.Takeover, true}, {idemkit.FailClosed, true}, {idemkit.Takeover, false}, {idemkit.FailClosed, false}} {
		policy := tt.policy
		t.Run(fmt.Sprintf("%s/lost=%v", policy, tt.lost), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := &eventlog.Log{}
				s := faultstore.New(memstore.New())
				if tt.lost {
					s.OnOp(faultstore.OpExtend, faultstore.Fail(errStoreDown))
				}
				g, err := idemkit.New(idemkit.Config{Store: s,
					Policy:   idemkit.Policy{Lease: 600 * time.Millisecond, Heartbeat: 100 * time.Millisecond, LeaseMargin: 200 * time.Millisecond, OnStaleLease: policy},
					Observer: obs})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				_, _, err = g.Do(ctx, req(fmt.Sprintf("reported-%s-%v", policy, tt.lost)), func(hctx context.Context) (*idemkit.Snapshot, error) {
					select {
					case <-hctx.Done():
					case <-time.After(2 * time.Second):
						cancel() // the renewals land: nothing cancels the handler; its caller does
						<-hctx.Done()
					}
					return nil, hctx.Err()
				})
				events := obs.Events()
				if len(events) == 0 {
					t.Fatal("no event")
				}
				ev := events[len(events)-1]
				want := tt.lost
				if errors.Is(err, idemkit.ErrLeaseLost) != want || errors.Is(ev.Err, idemkit.ErrLeaseLost) != want {
					t.Errorf("Do: %v; event %s: %v; want ErrLeaseLost in both: %v", err, ev.Kind, ev.Err, want)
				}
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Do: %v, want the handler's own error kept", err)
				}
			})
		})
	}
}

// TestRecordOutlivesEveryRun: a record never expires while its handler may
// still run. A handler without a deadline that runs past every renewal its
// policy allows, on a record kept no longer than those renewals (a short
// retention), is told its lease is lost before the record can expire; a
// retry after that never runs the handler beside it.
func TestRecordOutlivesEveryRun(t *testing.T) {
	for _, pol := range []idemkit.Policy{
		{Lease: 2 * time.Second, MaxRenewals: 1, ReplayWindow: time.Second, RecordRetention: time.Second},
		{Lease: 2 * time.Second, MaxRenewals: 1, ReplayWindow: time.Second, RecordRetention: time.Second, OnStaleLease: idemkit.Takeover},
		{Lease: 3 * time.Second, Heartbeat: 2 * time.Second, MaxRenewals: 2, ReplayWindow: time.Second, RecordRetention: time.Second},
	} {
		t.Run(fmt.Sprintf("%s/lease=%v/renewals=%d", pol.OnStaleLease, pol.Lease, pol.MaxRenewals), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g, err := idemkit.New(idemkit.Config{Store: memstore.New(), Policy: pol})
				if err != nil {
					return // refusing such a policy keeps the guarantee too
				}
				r := req("outlives")
				var o overlaps
				handler := o.count(func(ctx context.Context) (*idemkit.Snapshot, error) {
					select {
					case <-ctx.Done():
						return nil, ctx.Err()
					case <-time.After(6 * time.Second):
						return &idemkit.Snapshot{Status: 201}, nil
					}
				})
				done := firstRun(t, g, r, handler)
				for i := range 8 {
					time.Sleep(time.Second)
					_, _, err := g.Do(context.Background(), r, handler)
					t.Logf("retry %d: %v", i, err)
				}
				<-done
				if n := o.overlapped.Load(); n > 0 {
					t.Fatalf("a retry ran the handler beside the first run (%d runs in all): its record expired while it ran", o.runs.Load())
				}
			})
		})
	}
}

// TestRecordOutlivesEveryRunToAFastClock: a record never expires while its
// handler may still run, by the clock of any host within the skew Resolve
// tolerates (a minute), not only within LeaseMargin. Under FailClosed a
// host whose clock runs 30 s ahead retries every second while the owner's
// handler runs past its renewals on a record kept no longer than them: the
// retries mark the record indeterminate, or are told it is in flight, and
// never run the handler beside the first run.
func TestRecordOutlivesEveryRunToAFastClock(t *testing.T) {
	for _, pol := range []idemkit.Policy{
		{Lease: 2 * time.Second, MaxRenewals: 1, ReplayWindow: time.Second, RecordRetention: time.Second},
		{Lease: 30 * time.Second, MaxRenewals: 6, ReplayWindow: time.Minute, RecordRetention: time.Minute},
	} {
		t.Run(fmt.Sprintf("lease=%v/renewals=%d", pol.Lease, pol.MaxRenewals), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				store := memstore.New()
				owner, err := idemkit.New(idemkit.Config{Store: store, Policy: pol})
				if err != nil {
					t.Fatal(err)
				}
				fast, err := idemkit.New(idemkit.Config{Store: store, Policy: pol, Clock: testclock.Skewed(30 * time.Second)})
				if err != nil {
					t.Fatal(err)
				}
				r := req("fast-clock")
				var o overlaps
				handler := o.count(func(ctx context.Context) (*idemkit.Snapshot, error) {
					<-ctx.Done() // runs until told to stop
					return nil, ctx.Err()
				})
				done := firstRun(t, owner, r, handler)
				span := pol.Lease * time.Duration(pol.MaxRenewals+2)
				for i := time.Duration(0); i < span; i += time.Second {
					time.Sleep(time.Second)
					ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
					_, _, _ = fast.Do(ctx, r, func(context.Context) (*idemkit.Snapshot, error) {
						cancel()
						return handler(ctx)
					})
					cancel()
				}
				<-done
				if n := o.overlapped.Load(); n > 0 {
					t.Fatalf("a retry from a host 30 s ahead ran the handler beside the first run (%d runs in all): the record expired to its clock while the first run went on", o.runs.Load())
				}
			})
		})
	}
}
