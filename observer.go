package idemkit

import (
	"context"
	"sync"

	"github.com/idemkit/idemkit/observe"
)

type usageKey struct{}

// usageAcc accumulates one request's usage. Store calls made from the
// handler's goroutines and the engine's own (lease renewal) may add to it
// at the same time.
type usageAcc struct {
	mu sync.Mutex // guards u
	u  observe.Usage
}

func (a *usageAcc) add(calls int, readUnits, writeUnits float64) {
	a.mu.Lock()
	a.u.Calls += calls
	a.u.ReadUnits += readUnits
	a.u.WriteUnits += writeUnits
	a.mu.Unlock()
}

func (a *usageAcc) load() observe.Usage {
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
func UsageFrom(ctx context.Context) (observe.Usage, bool) {
	a, ok := ctx.Value(usageKey{}).(*usageAcc)
	if !ok {
		return observe.Usage{}, false
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
