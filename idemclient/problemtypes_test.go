package idemclient

import (
	"testing"

	"github.com/idemkit/idemkit/httpproblem"
)

// TestProblemTypesMatchServer: the client has decided, for every problem
// type the server answers with, whether to retry it.
func TestProblemTypesMatchServer(t *testing.T) {
	for _, e := range httpproblem.Types() {
		if _, ok := verdicts[e.Type]; !ok {
			t.Errorf("no verdict for %s: decide whether the client retries it", e.Type)
		}
	}
	if len(verdicts) != len(httpproblem.Types()) {
		t.Errorf("%d verdicts for %d problem types", len(verdicts), len(httpproblem.Types()))
	}
}
