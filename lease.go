package idemkit

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/idemkit/idemkit/clock"
)

// renew extends rec's lease while the handler runs, when the request has no
// deadline or pol.Heartbeat is set: every interval, up to pol.MaxRenewals
// times, to the time of the renewal plus the first lease's length, but
// never past the record's expiry less its margin (record makes it live
// long enough for every renewal made on time). It stops when the store
// refuses (the claim is no longer ours) and when stop is called; stop
// waits for it to end, so that the renewals' store usage, added to ctx's
// request like any other call's, is complete when it returns. stop may be
// called more than once. Nothing runs before the first interval has
// passed: a handler that returns within it costs a stopped timer, not a
// goroutine.
//
// A non-nil lost is called when the run can no longer be protected: no
// renewal has landed by lostLead before the end of the last lease that did
// (or of the first), under either policy, and under Takeover also when the
// store refused a renewal (the key is no longer ours). Past its lease a
// run is not protected under FailClosed either: a retry marks the record
// indeterminate and an operator may resolve it a minute later, and the
// renewals never reach past the record's expiry.
func (g *Guard) renew(ctx context.Context, run *run, pol Policy, start time.Time, lost func()) (stop func()) {
	rec := run.claim
	length := rec.LeaseUntil.Sub(start)
	every := pol.heartbeat(ctx, length)
	if every <= 0 {
		return func() {}
	}
	r := &renewal{g: g, ctx: ctx, held: run, max: pol.MaxRenewals, length: length, every: every, margin: pol.expiryMargin(),
		takeover: pol.OnStaleLease == Takeover, lost: lost}
	if lost != nil {
		r.lead = lostLead(pol.LeaseMargin, length, every)
		r.watch = g.afterFunc(g.until(rec.LeaseUntil)-r.lead, lost)
	}
	r.timer = g.afterFunc(every, r.run)
	return r.stop
}

// lostLead is how long before its end a lease of length, renewed every
// interval, is given up when no renewal has landed: margin, the clock skew
// a lease tolerates, but no more than leaves two renewals (each with an
// interval to answer) before it, so that one slow renewal does not give
// up a healthy lease.
func lostLead(margin, length, every time.Duration) time.Duration {
	return max(0, min(margin, length-2*every))
}

// renewal is the lease renewal of one request, started by its timer.
type renewal struct {
	g             *Guard
	ctx           context.Context
	held          *run
	max           int
	length, every time.Duration
	margin        time.Duration // the record outlives every lease by this much
	takeover      bool          // the policy is Takeover: a lost lease may be run again
	timer         clock.Timer
	lost          func()      // nil, or called when the run can no longer be protected
	watch         clock.Timer // calls lost lead before what protects the run ends
	lead          time.Duration
	once          sync.Once
	mu            sync.Mutex
	stopped       bool               // stop was called; run must not start
	cancel        context.CancelFunc // set by run, under mu
	exited        chan struct{}      // set by run, under mu; closed when it returns
}

// run renews the lease at once (one interval has passed), then every
// interval, in the timer's goroutine.
func (r *renewal) run() {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	// The request's context values stay: Extend's usage is the request's.
	rctx, cancel := context.WithCancel(context.WithoutCancel(r.ctx))
	r.cancel, r.exited = cancel, make(chan struct{})
	r.mu.Unlock()
	defer close(r.exited)
	for n := 0; n < r.max; n++ {
		if n > 0 {
			tick, t := r.g.after(r.every)
			select {
			case <-rctx.Done():
				t.Stop()
				return
			case <-tick:
			}
		}
		until, err := r.renewNow(rctx)
		if errors.Is(err, ErrNotOwner) {
			// Under FailClosed a retry marked the record indeterminate:
			// the run's late completion still wins, so it goes on.
			if r.takeover && r.lost != nil && rctx.Err() == nil {
				r.lost()
			}
			return
		}
		// A watch that has fired stays fired: the handler was told.
		if err == nil && r.watch != nil && r.watch.Stop() {
			r.watch.Reset(r.g.until(until) - r.lead)
		}
	}
}

// renewNow renews the lease now, and returns the lease end it asked for. A
// renewal that would move the lease back writes nothing and is no error.
func (r *renewal) renewNow(ctx context.Context) (until time.Time, err error) {
	// A late renewal must not extend the lease past the record's life: the
	// lease then ends first, and the outcome counts as unknown, instead of
	// the key being freed while the handler runs.
	until = r.g.now().Add(r.length)
	if end := r.held.claim.ExpiresAt.Add(-r.margin); until.After(end) {
		until = end
	}
	wctx, cancel := context.WithTimeout(ctx, r.g.writeTimeout)
	defer cancel()
	cur, _, err := r.g.renewals.apply(wctx, r.held.get(), change{op: opExtend, rec: r.held.claim, until: until, version: r.held.version})
	switch {
	case err == nil:
		r.held.set(cur)
	case errors.Is(err, errNoChange):
		err = nil
	case !errors.Is(err, ErrNotOwner):
		// The renewal may have landed with its answer lost: the next one
		// replaces the version stored, read now.
		r.refresh(ctx)
	}
	return until, err
}

// refresh reads the run's record after a renewal whose answer was lost,
// and takes it as the version the run's next write replaces when it is
// still the run's in_flight record.
func (r *renewal) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, r.g.writeTimeout)
	defer cancel()
	claim := r.held.claim
	if cur, err := read(ctx, r.g.cfg.Store, claim.ID); err == nil && cur != nil && cur.Owner == claim.Owner && cur.State == StateInFlight {
		r.held.set(cur)
	}
}

// stop ends the renewal, waiting for a running one to return.
func (r *renewal) stop() {
	r.once.Do(func() {
		r.timer.Stop()
		r.mu.Lock()
		r.stopped = true
		cancel, exited := r.cancel, r.exited
		r.mu.Unlock()
		if cancel != nil {
			cancel()
			<-exited
		}
		// After run has returned: it resets the watch.
		if r.watch != nil {
			r.watch.Stop()
		}
	})
}
