package httpguard_test

import (
	"testing"

	"github.com/idemkit/idemkit/internal/problemtype/problemtypetest"
)

// TestExportsEveryProblemType: the package names every problem type of
// the one table, and only those.
func TestExportsEveryProblemType(t *testing.T) {
	problemtypetest.Exports(t, ".")
}
