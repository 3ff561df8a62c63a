// Package usage accumulates the store usage of one guarded request in its
// context: the guard starts it, a store adds to it (idemkit.AddUsage), and
// the guard's Observer gets the sum. Tests read it mid-request with From.
package usage

import (
	"context"
	"sync"

	"github.com/idemkit/idemkit/observe"
)

type key struct{}

// Acc accumulates one request's usage. Store calls made from the
// handler's goroutines and the engine's own (lease renewal) may add to it
// at the same time.
type Acc struct {
	mu sync.Mutex // guards u
	u  observe.Usage
}

// Add adds one store round trip and the capacity units it consumed.
func (a *Acc) Add(readUnits, writeUnits float64) {
	a.mu.Lock()
	a.u.Calls++
	a.u.ReadUnits += readUnits
	a.u.WriteUnits += writeUnits
	a.mu.Unlock()
}

// Load returns the usage accumulated so far.
func (a *Acc) Load() observe.Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.u
}

// With returns ctx carrying a new accumulator, and the accumulator.
func With(ctx context.Context) (context.Context, *Acc) {
	a := new(Acc)
	return context.WithValue(ctx, key{}, a), a
}

// Of returns the accumulator ctx carries, or nil.
func Of(ctx context.Context) *Acc {
	a, _ := ctx.Value(key{}).(*Acc)
	return a
}

// From returns the usage accumulated so far by the guarded request ctx
// belongs to, and false outside one.
func From(ctx context.Context) (observe.Usage, bool) {
	a := Of(ctx)
	if a == nil {
		return observe.Usage{}, false
	}
	return a.Load(), true
}
