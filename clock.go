package idemkit

import "time"

// Clock is the time a Guard reads and the timers it sets: the lease
// renewals, the watch that tells a handler its run can no longer be
// protected, and the pauses between store attempts. A simulation or a
// test that steps time gives the Guard its own Clock; nil in Config is the
// system clock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed, as
	// time.AfterFunc does.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer set by a [Clock], as a *time.Timer from time.AfterFunc.
type Timer interface {
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
	// Reset makes the timer fire d from now; it reports whether it was
	// active.
	Reset(d time.Duration) bool
}

// afterFunc sets a timer on the guard's clock.
func (g *Guard) afterFunc(d time.Duration, f func()) Timer {
	if g.cfg.Clock != nil {
		return g.cfg.Clock.AfterFunc(d, f)
	}
	return time.AfterFunc(d, f)
}

// after returns a channel closed once d has passed on the guard's clock,
// and the timer behind it.
func (g *Guard) after(d time.Duration) (<-chan struct{}, Timer) {
	c := make(chan struct{})
	return c, g.afterFunc(d, func() { close(c) })
}

// until returns the time left before t on the guard's clock. A context
// deadline is on the same clock: the system's, or the Clock's own.
func (g *Guard) until(t time.Time) time.Duration {
	if g.cfg.Clock != nil {
		return t.Sub(g.cfg.Clock.Now())
	}
	return time.Until(t)
}
