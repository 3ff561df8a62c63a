// Package testclock is the settable clock the tests share.
//
// A Clock starts at the real time.Now(), truncated to the second, so a test
// that also builds a real deadline, timer or timeout from it keeps working on
// any calendar day. A test that needs a fixed calendar date may pin one with
// At, but only when nothing real-time is built from it: Deadline refuses a
// clock that has drifted more than MaxDrift from the wall clock.
//
// Every clock here is an [clock.Clock] whose timers are the system's: a
// timer fires after d of real time, whatever Advance does.
package testclock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idemkit/clock"
)

// MaxDrift is how far a Clock may be from the wall clock when a real deadline
// is built from it.
const MaxDrift = time.Minute

// Clock is a settable time source. Its zero value is not usable; call New.
type Clock struct {
	mu  sync.Mutex // guards now
	now time.Time
}

// New returns a Clock at the real time.Now(), truncated to the second.
func New() *Clock { return &Clock{now: time.Now().UTC().Truncate(time.Second)} }

// At returns a Clock pinned to t. Use it only where no real deadline, timer
// or timeout is built from the clock.
func At(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// AfterFunc calls f in its own goroutine after d of real time.
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer { return time.AfterFunc(d, f) }

// Ahead returns a clock that reads c's time plus d (minus, when d is
// negative). It is another instance's clock, skewed from c's, and it
// follows c's Advance and Set.
func (c *Clock) Ahead(d time.Duration) clock.Clock { return skewed{now: c.Now, skew: d} }

// Skewed returns a clock that runs with the wall clock, d ahead of it
// (behind it when d is negative).
func Skewed(d time.Duration) clock.Clock { return skewed{now: time.Now, skew: d} }

// skewed is a clock off by skew from the clock now reads.
type skewed struct {
	now  func() time.Time
	skew time.Duration
}

func (s skewed) Now() time.Time { return s.now().Add(s.skew) }

func (s skewed) AfterFunc(d time.Duration, f func()) clock.Timer { return time.AfterFunc(d, f) }

// Deadline returns a context whose real deadline is the clock's time plus d.
// It fails the test when the clock is more than MaxDrift from the wall
// clock: such a deadline would already have passed, or lie far ahead, on the
// day the test runs.
func (c *Clock) Deadline(t testing.TB, parent context.Context, d time.Duration) context.Context {
	t.Helper()
	now := c.Now()
	if drift := time.Until(now); drift > MaxDrift || drift < -MaxDrift {
		t.Fatalf("testclock: clock is %s from the wall clock; a real deadline built from it is a clock bomb (start the clock with testclock.New)", drift.Round(time.Second))
	}
	ctx, cancel := context.WithDeadline(parent, now.Add(d))
	t.Cleanup(cancel)
	return ctx
}
