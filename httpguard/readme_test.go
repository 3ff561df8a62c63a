package httpguard_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeExample: README.md's hooks snippet is ExampleSettings's
// Settings, so that it compiles.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const start = "\n```go\nsettings := httpguard.Settings{"
	_, block, ok := strings.Cut(string(readme), start)
	if !ok {
		t.Fatal("README.md has no Go block starting with settings := httpguard.Settings{")
	}
	block, _, _ = strings.Cut(start[7:]+block, "\n```\n")
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var indented []string
	for _, l := range strings.Split(block, "\n") {
		indented = append(indented, "\t"+l)
	}
	if !strings.Contains(string(src), strings.Join(indented, "\n")+"\n") {
		t.Errorf("README.md's hooks snippet is not ExampleSettings's Settings:\n%s", block)
	}
}
