package apigw_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/idemkit/idemkit/internal/testing/testkit"
)

// TestReadmeQuickstart: the first Go program in README.md is
// quickstart_example_test.go as a main package, so the README's snippet is
// compiled by every build of the tests.
func TestReadmeQuickstart(t *testing.T) {
	block := testkit.Section(t, "../../README.md", "\n```go\n", "\n```\n")

	src, err := os.ReadFile("quickstart_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	lines := strings.Split(strings.TrimSuffix(string(src), "\n"), "\n")
	for i, line := range lines {
		switch {
		case line == "package apigw_test":
			line = "package main"
		case line == "func Example_quickstart() {":
			line = "func main() {"
		case strings.HasPrefix(line, "//") && i+1 < len(lines) && isExampleDoc(lines[i+1:]):
			continue // the example's doc comment
		}
		want = append(want, line)
	}
	if got := strings.Split(block, "\n"); !slices.Equal(got, want) {
		t.Errorf("README.md's first Go block is not quickstart_example_test.go; want:\n%s", strings.Join(want, "\n"))
	}
}

// isExampleDoc reports whether rest starts with comment lines followed by
// the example function.
func isExampleDoc(rest []string) bool {
	for _, l := range rest {
		if l == "func Example_quickstart() {" {
			return true
		}
		if !strings.HasPrefix(l, "//") {
			return false
		}
	}
	return false
}
