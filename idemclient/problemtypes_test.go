package idemclient

import (
	"os"
	"regexp"
	"testing"
)

// TestProblemTypesMatchServer: the client knows every problem type the
// server's adapters answer with, under the same constant name and URI,
// and has decided for each whether to retry it.
func TestProblemTypesMatchServer(t *testing.T) {
	decl := regexp.MustCompile(`(Type[A-Za-z]+)\s*=\s*ProblemBase \+ "([a-z-]+)"`)
	server, err := os.ReadFile("../internal/adapter/problem.go")
	if err != nil {
		t.Fatal(err)
	}
	client, err := os.ReadFile("problem.go")
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]string{}
	for _, m := range decl.FindAllStringSubmatch(string(client), -1) {
		ours[m[1]] = m[2]
	}
	types := decl.FindAllStringSubmatch(string(server), -1)
	if len(types) < 10 {
		t.Fatalf("found only %d problem types in internal/adapter/problem.go", len(types))
	}
	for _, m := range types {
		if ours[m[1]] != m[2] {
			t.Errorf("the server's %s = ProblemBase + %q; idemclient has %q", m[1], m[2], ours[m[1]])
		}
		if _, ok := verdicts[ProblemBase+m[2]]; !ok {
			t.Errorf("no verdict for %s: decide whether the client retries it", m[2])
		}
	}
	if len(ours) != len(types) || len(verdicts) != len(types) {
		t.Errorf("idemclient declares %d types and %d verdicts; the server %d", len(ours), len(verdicts), len(types))
	}
}
