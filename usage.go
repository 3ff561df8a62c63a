package idemkit

import (
	"context"

	"github.com/idemkit/idemkit/internal/usage"
)

// AddUsage adds one store round trip and the capacity it consumed to the
// request's usage. A [Store] calls it for each round trip, as its contract
// says. It does nothing when ctx does not come from a guarded request. It
// is safe for concurrent use.
func AddUsage(ctx context.Context, readUnits, writeUnits float64) {
	if a := usage.Of(ctx); a != nil {
		a.Add(readUnits, writeUnits)
	}
}
