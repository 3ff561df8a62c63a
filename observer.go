package idemkit

import (
	"context"
	"sync"
	"time"
)

// EventKind names the outcome of one guarded request.
type EventKind string

const (
	EventExecuted         EventKind = "executed"          // the handler ran and its outcome was stored
	EventReplayed         EventKind = "replayed"          // a stored response was returned
	EventConflict         EventKind = "conflict"          // another request holds the key
	EventMismatch         EventKind = "mismatch"          // same key, different request or operation
	EventTakeover         EventKind = "takeover"          // a stale lease was taken over; the handler runs again
	EventIndeterminate    EventKind = "indeterminate"     // the key is held by an indeterminate record
	EventReleased         EventKind = "released"          // the handler failed or its status is not stored; the key was freed
	EventStoreError       EventKind = "store_error"       // the store failed before the handler ran
	EventCancelled        EventKind = "cancelled"         // the caller cancelled the request (a client hung up) before its key was claimed; nothing ran
	EventCompletionFailed EventKind = "completion_failed" // the handler ran but its outcome could not be stored
	EventRefused          EventKind = "refused"           // refused before the store: no tenant, expired key
	EventOutcome          EventKind = "outcome"           // completed, but only the outcome is known (replay window passed, body too large)
	EventOutcomeUnknown   EventKind = "outcome_unknown"   // the handler returned ErrOutcomeUnknown; the key is kept (indeterminate)
)

// Event describes one guarded request to an [Observer].
type Event struct {
	Kind  EventKind
	Scope Scope
	// Status is the response status executed or replayed, if any.
	Status int
	// Err is the error returned to the caller, or the store error for
	// EventCompletionFailed.
	Err error
	// Started is when the guard began; Duration is the whole guarded call and
	// Handler the time spent in the handler.
	Started  time.Time
	Duration time.Duration
	Handler  time.Duration
	// Usage is what the store reported for this request so far.
	Usage Usage
}

// Observer receives every outcome. Implementations must be safe for
// concurrent use and should not block. A nil Observer costs nothing.
type Observer interface {
	Observe(ctx context.Context, e Event)
}

// ObserverFunc adapts a function to the Observer interface.
type ObserverFunc func(ctx context.Context, e Event)

// Observe calls f(ctx, e).
func (f ObserverFunc) Observe(ctx context.Context, e Event) { f(ctx, e) }

// Usage counts store round trips and capacity units.
type Usage struct {
	Calls      int
	ReadUnits  float64
	WriteUnits float64
}

type usageKey struct{}

// usageAcc accumulates one request's usage. Store calls made from the
// handler's goroutines and the engine's own (lease renewal) may add to it
// at the same time.
type usageAcc struct {
	mu sync.Mutex // guards u
	u  Usage
}

func (a *usageAcc) add(calls int, readUnits, writeUnits float64) {
	a.mu.Lock()
	a.u.Calls += calls
	a.u.ReadUnits += readUnits
	a.u.WriteUnits += writeUnits
	a.mu.Unlock()
}

func (a *usageAcc) load() Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.u
}

// AddUsage adds one store round trip and the capacity it consumed to the
// request's usage. A [Store] calls it for each round trip, as its contract
// says. It does nothing when ctx does not come from a guarded request. It
// is safe for concurrent use.
func AddUsage(ctx context.Context, readUnits, writeUnits float64) {
	if a, ok := ctx.Value(usageKey{}).(*usageAcc); ok {
		a.add(1, readUnits, writeUnits)
	}
}

// UsageFrom returns the usage accumulated so far by the guarded request that
// ctx belongs to.
func UsageFrom(ctx context.Context) (Usage, bool) {
	a, ok := ctx.Value(usageKey{}).(*usageAcc)
	if !ok {
		return Usage{}, false
	}
	return a.load(), true
}

func withUsage(ctx context.Context) (context.Context, *usageAcc) {
	a := new(usageAcc)
	return context.WithValue(ctx, usageKey{}, a), a
}

// Observed reports whether g has an Observer. Without one, the adapters log
// store failures through slog.Default, so that a misconfigured store is
// visible in the logs of the first request.
func (g *Guard) Observed() bool { return g.observer != nil }
