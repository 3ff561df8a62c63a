package adapter

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpproblem"
)

func TestProblemForUnknownOutcomes(t *testing.T) {
	lease := time.Now().Add(20 * time.Second)
	for _, tc := range []struct {
		err        error
		typ        string
		retryAfter bool
	}{
		{fmt.Errorf("put order: %w", idemkit.ErrOutcomeUnknown), httpproblem.TypeOutcomeUnknown, false},
		{&idemkit.ClaimUnknownError{LeaseUntil: lease, Err: &idemkit.StoreError{Op: "claim", Err: fmt.Errorf("reset")}}, httpproblem.TypeStoreUnavailable, true},
		{&idemkit.StoreError{Op: "claim", Err: fmt.Errorf("reset")}, httpproblem.TypeStoreUnavailable, true},
	} {
		p := ProblemFor(tc.err, time.Second)
		if p.Type != tc.typ || p.Status != 503 || (p.RetryAfter > 0) != tc.retryAfter {
			t.Errorf("ProblemFor(%v) = %s %d retry %d, want %s 503", tc.err, p.Type, p.Status, p.RetryAfter, tc.typ)
		}
		// "Nothing stored" only when it is known.
		var cu *idemkit.ClaimUnknownError
		if mayBeHeld := strings.Contains(p.Detail, "may have been recorded"); mayBeHeld != errors.As(tc.err, &cu) {
			t.Errorf("ProblemFor(%v): detail %q", tc.err, p.Detail)
		}
	}
}

// An unknown outcome whose key could not be kept (the guard's mark failed)
// must not promise that the key is kept and never run again: the record
// stays in flight until its lease ends, and under Takeover a retry then
// runs the request again.
func TestProblemForUnknownOutcomeNotKept(t *testing.T) {
	herr := fmt.Errorf("put order: %w", idemkit.ErrOutcomeUnknown)
	ownStoreErr := fmt.Errorf("put order: %w: %w", idemkit.ErrOutcomeUnknown, &idemkit.StoreError{Op: "get", Err: fmt.Errorf("timeout")})
	for _, tc := range []struct {
		name string
		err  error
		kept bool
	}{
		{"kept", herr, true},
		{"mark failed", errors.Join(herr, &idemkit.StoreError{Op: "mark unknown", Err: fmt.Errorf("throttled")}), false},
		// The handler's error carries a store error of its own: the
		// guard's failed mark behind it must still be seen.
		{"handler store error, kept", ownStoreErr, true},
		{"handler store error, mark failed", errors.Join(ownStoreErr, &idemkit.StoreError{Op: "mark unknown", Err: fmt.Errorf("throttled")}), false},
		{"mark failed, wrapped", fmt.Errorf("orders: %w", errors.Join(ownStoreErr, fmt.Errorf("keep: %w", &idemkit.StoreError{Op: "mark unknown", Err: fmt.Errorf("throttled")}))), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ProblemFor(tc.err, time.Second)
			if p.Type != httpproblem.TypeOutcomeUnknown || p.Status != 503 {
				t.Fatalf("ProblemFor(%v) = %s %d, want %s 503", tc.err, p.Type, p.Status, httpproblem.TypeOutcomeUnknown)
			}
			if promised := strings.Contains(p.Detail, "its key is kept"); promised != tc.kept {
				t.Fatalf("detail %q: promises the key is kept %v, want %v", p.Detail, promised, tc.kept)
			}
			if !tc.kept && p.RetryAfter <= 0 {
				t.Fatalf("a key that may run again needs Retry-After (the lease): %+v", p)
			}
		})
	}
}
