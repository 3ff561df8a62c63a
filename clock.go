package idemkit

import (
	"time"

	"github.com/idemkit/idemkit/clock"
)

// afterFunc sets a timer on the guard's clock.
func (g *Guard) afterFunc(d time.Duration, f func()) clock.Timer {
	if g.cfg.Clock != nil {
		return g.cfg.Clock.AfterFunc(d, f)
	}
	return time.AfterFunc(d, f)
}

// after returns a channel closed once d has passed on the guard's clock,
// and the timer behind it.
func (g *Guard) after(d time.Duration) (<-chan struct{}, clock.Timer) {
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
