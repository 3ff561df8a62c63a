// Package clock holds the time source an idemkit.Guard reads and the
// timers it sets, so that a simulation or a test can step time. The
// packages that must agree with the guard's time take the same [Clock]:
// warmcache, lambda/batch, and observe's EMF. Nil, wherever one is
// taken, is the system clock.
package clock

import "time"

// Clock is the time a Guard reads and the timers it sets: the lease
// renewals, the watch that tells a handler its run can no longer be
// protected, and the pauses between store attempts.
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
