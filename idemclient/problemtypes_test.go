package idemclient

import (
	"testing"

	"github.com/idemkit/idemkit/internal/problemtype"
	"github.com/idemkit/idemkit/internal/problemtype/problemtypetest"
)

// TestProblemTypesMatchServer: the client names every problem type the
// server answers with, and has decided for each whether to retry it.
func TestProblemTypesMatchServer(t *testing.T) {
	problemtypetest.Exports(t, ".")
	for _, e := range problemtype.All {
		if _, ok := verdicts[e.Type]; !ok {
			t.Errorf("no verdict for %s: decide whether the client retries it", e.Type)
		}
	}
	if len(verdicts) != len(problemtype.All) {
		t.Errorf("%d verdicts for %d problem types", len(verdicts), len(problemtype.All))
	}
}
