package adapter

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
)

func TestProblemForUnknownOutcomes(t *testing.T) {
	lease := time.Now().Add(20 * time.Second)
	for _, tc := range []struct {
		err        error
		typ        string
		retryAfter bool
	}{
		{fmt.Errorf("put order: %w", idemkit.ErrOutcomeUnknown), TypeOutcomeUnknown, false},
		{&idemkit.ClaimUnknownError{LeaseUntil: lease, Err: &idemkit.StoreError{Op: "claim", Err: fmt.Errorf("reset")}}, TypeStoreUnavailable, true},
		{&idemkit.StoreError{Op: "claim", Err: fmt.Errorf("reset")}, TypeStoreUnavailable, true},
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
