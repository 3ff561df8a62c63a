package idemkit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/clock"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/memstore"
)

// stepClock is a Clock that moves only when told, and whose timers fire
// as it moves: a testclock.Clock's timers run in real time.
type stepClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*stepTimer
}

type stepTimer struct {
	c      *stepClock
	at     time.Time
	f      func()
	active bool
}

func newStepClock() *stepClock {
	return &stepClock{now: time.Now()}
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	t := &stepTimer{c: c, at: c.now.Add(d), f: f, active: true}
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	return t
}

// advance moves the clock by d and fires the timers then due.
func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for _, t := range c.timers {
		if t.active && !t.at.After(c.now) {
			t.active = false
			due = append(due, t.f)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		go f()
	}
}

func (t *stepTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.active = false
	return was
}

func (t *stepTimer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.active
	t.at, t.active = t.c.now.Add(d), true
	return was
}

// TestClockDrivesRenewals: a Guard given a Clock renews its lease on that
// clock's timers and time, not the system's: a 10 s heartbeat fires when
// the clock is moved 10 s, at once, and the renewal writes the clock's
// time plus the lease.
func TestClockDrivesRenewals(t *testing.T) {
	clk := newStepClock()
	extended := make(chan time.Time, 1)
	s := faultstore.New(memstore.New())
	s.OnOp(faultstore.OpExtend, func(_ context.Context, c faultstore.Call) faultstore.Fault {
		return faultstore.Fault{Then: func(error) { extended <- c.Record.LeaseUntil }}
	})
	g, err := idemkit.New(idemkit.Config{Store: s, Clock: clk,
		Policy: idemkit.Policy{Lease: 30 * time.Second, Heartbeat: 10 * time.Second, MaxRenewals: 1}})
	if err != nil {
		t.Fatal(err)
	}
	start := clk.Now()
	running, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := g.Do(context.Background(), req("clock-renewal"), func(ctx context.Context) (*idemkit.Snapshot, error) {
			close(running)
			<-release
			return &idemkit.Snapshot{Status: 201}, nil
		})
		done <- err
	}()
	<-running // the renewal's timers are set before the handler runs
	clk.advance(10 * time.Second)
	if got, want := <-extended, start.Add(40*time.Second); !got.Equal(want) {
		t.Errorf("the renewal extended the lease to %v, want %v (the clock's time plus the lease)", got, want)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
