// Package eventlog records the events a Guard reports, for tests and
// benchmarks.
package eventlog

import (
	"context"
	"sync"

	"github.com/idemkit/idemkit/observe"
)

// Log is an [observe.Observer] that keeps the events it is given. Its zero
// value keeps every event and is safe for concurrent use.
type Log struct {
	// KeepLast keeps only the last event, so that a benchmark's memory
	// does not grow with its iterations.
	KeepLast bool

	mu     sync.Mutex
	events []observe.Event // guarded by mu
}

// Observe records e.
func (l *Log) Observe(_ context.Context, e observe.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.KeepLast && len(l.events) > 0 {
		l.events[0] = e
		return
	}
	l.events = append(l.events, e)
}

// Events returns the events recorded, oldest first.
func (l *Log) Events() []observe.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]observe.Event(nil), l.events...)
}

// Kinds returns the kind of each event recorded, oldest first.
func (l *Log) Kinds() []observe.EventKind {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ks []observe.EventKind
	for _, e := range l.events {
		ks = append(ks, e.Kind)
	}
	return ks
}

// Last returns the last event recorded. It returns the zero Event when
// none was.
func (l *Log) Last() observe.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.events) == 0 {
		return observe.Event{}
	}
	return l.events[len(l.events)-1]
}
