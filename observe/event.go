package observe

import (
	"context"
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
	EventOutcomeUnknown   EventKind = "outcome_unknown"   // the handler returned idemkit.ErrOutcomeUnknown; the key is kept (indeterminate)
)

// Event describes one guarded request to an [Observer].
type Event struct {
	Kind EventKind
	// Tenant, Operation and Key are the request's idemkit.Scope, as far
	// as it is known (a request refused before the store may lack some).
	Tenant, Operation, Key string
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

// Observer receives every outcome of an idemkit.Guard (its
// Config.Observer). Implementations must be safe for concurrent use and
// should not block. A nil Observer costs nothing.
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
