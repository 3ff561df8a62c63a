// Package readmetest checks that a Go snippet of README.md is the body of
// an Example function, so that the snippet compiles and runs.
package readmetest

import (
	"os"
	"strings"
	"testing"
)

// InExample fails t unless README.md at readme holds a Go block whose
// first line begins with start, and that block, indented by one tab, is
// part of the file example.
func InExample(t testing.TB, readme, start, example string) {
	t.Helper()
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "\n```go\n"+start)
	if !ok {
		t.Fatalf("%s has no Go block starting with %s", readme, start)
	}
	block, _, _ = strings.Cut(start+block, "\n```\n")
	src, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	var indented []string
	for _, l := range strings.Split(block, "\n") {
		indented = append(indented, "\t"+l)
	}
	if !strings.Contains(string(src), strings.Join(indented, "\n")+"\n") {
		t.Errorf("the snippet of %s starting with %s is not in %s:\n%s", readme, start, example, block)
	}
}
