package idemkit

import (
	"bytes"
	"context"
	"crypto/rand"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit/observe"
)

// TestRenewalStartsLazily: a request without a deadline whose handler
// returns within the first interval starts no goroutine for its lease
// renewal, and stopping it adds no usage to the request.
func TestRenewalStartsLazily(t *testing.T) {
	ctx, acc := withUsage(context.Background())
	stop := renewClaim(ctx, &Guard{}, Policy{MaxRenewals: 3})
	if renewalRuns() {
		t.Error("a goroutine of the renewal runs before its first interval")
	}
	stop()
	if u := acc.Load(); u != (observe.Usage{}) {
		t.Fatalf("stopped before the first interval: usage %+v, want none", u)
	}
}

// renewingGuard returns a Guard over s whose writes time out after
// writeTimeout, as New would set it up for a renewal.
func renewingGuard(s Store, writeTimeout time.Duration) *Guard {
	g := &Guard{cfg: Config{Store: s}, now: time.Now, writeTimeout: writeTimeout}
	g.newToken = rand.Text
	g.setWriters()
	return g
}

// renewClaim starts g's renewal under pol of an in_flight claim of owner
// "o" whose lease ends in an hour, and returns its stop.
func renewClaim(ctx context.Context, g *Guard, pol Policy) (stop func()) {
	start := time.Now()
	rec := &Record{ID: "r", State: StateInFlight, Owner: "o", LeaseUntil: start.Add(time.Hour), ExpiresAt: start.Add(2 * time.Hour)}
	return g.renew(ctx, &run{claim: rec, cur: rec, version: &versions{owner: "o"}}, pol, start, nil)
}

// extendCounter is a Store whose Replace (a renewal) counts its calls and reports one
// store call each; no other method is used by a renewal.
//
// The stores of this file are not faultstore.Stores: a test of package
// idemkit itself cannot import a package that imports idemkit.
type extendCounter struct {
	Store
	n atomic.Int64
}

func (s *extendCounter) Replace(ctx context.Context, _, _ *Record) (*Record, error) {
	s.n.Add(1)
	AddUsage(ctx, 0, 1)
	return nil, nil
}

// TestRenewalStopRaces: stop called around the moment the timer fires
// either prevents the renewal or waits for it: when it returns, the
// request's usage counts exactly the renewals made, and none follow (run
// with -race).
func TestRenewalStopRaces(t *testing.T) {
	for i := 0; i < 200; i++ {
		s := &extendCounter{}
		ctx, acc := withUsage(context.Background())
		stop := renewClaim(ctx, renewingGuard(s, time.Second), Policy{Heartbeat: time.Duration(i%20) * time.Microsecond, MaxRenewals: 2})
		if i%20 == 0 {
			// Heartbeat 0 and no deadline: a third of the lease.
			stop()
			continue
		}
		time.Sleep(time.Duration(i%7) * 10 * time.Microsecond)
		stop()
		u := acc.Load()
		if got := s.n.Load(); int64(u.Calls) != got {
			t.Fatalf("round %d: the request counts %d calls, %d renewals were made", i, u.Calls, got)
		}
		stop()
		if u2 := acc.Load(); u2 != u {
			t.Fatalf("round %d: a second stop changed the usage from %+v to %+v", i, u, u2)
		}
		if got := s.n.Load(); int64(u.Calls) != got {
			t.Fatalf("round %d: a renewal after stop returned (%d, reported %d)", i, got, u.Calls)
		}
	}
}

// TestLostLead: a lease nobody renewed is given up LeaseMargin before
// its end, but never so early that fewer than two renewals fit before
// that point, and never after the end.
func TestLostLead(t *testing.T) {
	s := time.Second
	for _, tt := range []struct{ margin, length, every, want time.Duration }{
		{2 * s, 30 * s, 10 * s, 2 * s},                        // the default lease without a deadline
		{2 * s, 2 * s, s / 5, 2*s - 2*s/5},                    // a short lease: two renewals before giving up
		{s, 2 * s, s / 5, s},                                  // the margin fits
		{2 * s, 2 * s, s, 0},                                  // renewals every half lease: at the end
		{0, 30 * s, 10 * s, 0},                                // no margin
		{2 * s, 30 * s, 20 * s, 0},                            // never negative
		{500 * time.Millisecond, 3 * s, s, s / 2},             // the margin, well inside
		{5 * s, 3 * s, s, s},                                  // the margin over the room left
		{time.Minute, 24 * time.Hour, time.Hour, time.Minute}, // a long lease
	} {
		if got := lostLead(tt.margin, tt.length, tt.every); got != tt.want {
			t.Errorf("lostLead(%v, %v, %v) = %v, want %v", tt.margin, tt.length, tt.every, got, tt.want)
		}
	}
}

// TestHeartbeatInterval: renewals run every Policy.Heartbeat, never above
// half the lease (a later renewal would come after the lease ended, and
// the key could be taken over while the handler runs); without one, every
// third of the lease for a request without a deadline, and none for one
// with a deadline.
func TestHeartbeatInterval(t *testing.T) {
	const lease = 30 * time.Second
	withDeadline, cancel := context.WithDeadline(context.Background(), time.Now().Add(time.Hour))
	defer cancel()
	for _, tc := range []struct {
		heartbeat time.Duration
		ctx       context.Context
		want      time.Duration
	}{
		{0, context.Background(), lease / 3},
		{0, withDeadline, 0},
		{5 * time.Second, context.Background(), 5 * time.Second},
		{5 * time.Second, withDeadline, 5 * time.Second},
		{time.Hour, context.Background(), lease / 2},
		{time.Hour, withDeadline, lease / 2},
	} {
		if got := (Policy{Heartbeat: tc.heartbeat}).heartbeat(tc.ctx, lease); got != tc.want {
			_, hasDeadline := tc.ctx.Deadline()
			t.Errorf("Heartbeat %s, deadline %v: every %s, want %s", tc.heartbeat, hasDeadline, got, tc.want)
		}
	}
}

// refusingExtend is a Store whose Replace (a renewal) finds the claim
// taken over: the claim is no longer ours. It counts its calls.
type refusingExtend struct {
	Store
	n     atomic.Int64
	first chan struct{} // closed by the first call
}

func (s *refusingExtend) Replace(_ context.Context, rec, _ *Record) (*Record, error) {
	if s.n.Add(1) == 1 {
		close(s.first)
	}
	taken := rec.Clone()
	taken.Owner, taken.Version = "another", "another's"
	return taken, nil
}

// TestRenewalStopsWhenRefused: once the store refuses a renewal (the claim
// was taken over, completed or marked), no further renewal is sent while
// the handler runs.
func TestRenewalStopsWhenRefused(t *testing.T) {
	s := &refusingExtend{first: make(chan struct{})}
	stop := renewClaim(context.Background(), renewingGuard(s, time.Second), Policy{Heartbeat: time.Millisecond, MaxRenewals: 1000})
	defer stop()
	select {
	case <-s.first:
	case <-time.After(10 * time.Second):
		t.Fatal("no renewal within 10 s of a 1 ms heartbeat")
	}
	// The renewal ends on its own, before stop, having sent no other
	// renewal: its goroutine is gone.
	for deadline := time.Now().Add(10 * time.Second); renewalRuns(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the renewal still runs 10 s after the store refused it")
		}
	}
	if n := s.n.Load() - 1; n != 0 {
		t.Fatalf("%d renewals after the store refused one, want none", n)
	}
}

// renewalRuns reports whether a lease renewal's goroutine runs.
func renewalRuns() bool {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	return bytes.Contains(buf[:n], []byte("idemkit.(*Guard).renew")) || bytes.Contains(buf[:n], []byte("idemkit.(*renewal).run"))
}

// hangingExtend is a Store whose Replace (a renewal) never answers on its own: it
// returns when its context is done. Each call is sent on calls.
type hangingExtend struct {
	Store
	calls chan struct{}
}

// Get is the read after a renewal whose answer was lost: it finds nothing.
func (s *hangingExtend) Get(context.Context, string) (*Record, error) { return nil, ErrNotFound }

func (s *hangingExtend) Replace(ctx context.Context, _, _ *Record) (*Record, error) {
	s.calls <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestRenewalOutlastsAHungWrite: a renewal the store does not answer is
// given up after the write timeout and the next one is sent: a hung call
// must not stop the renewals while the handler runs, or the lease would
// lapse under it.
func TestRenewalOutlastsAHungWrite(t *testing.T) {
	s := &hangingExtend{calls: make(chan struct{}, 100)}
	stop := renewClaim(context.Background(), renewingGuard(s, 5*time.Millisecond), Policy{Heartbeat: time.Millisecond, MaxRenewals: 1000})
	defer stop()
	for i := 0; i < 2; i++ {
		select {
		case <-s.calls:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d renewals within 10 s of a 1 ms heartbeat and a 5 ms write timeout, want 2", i)
		}
	}
}
