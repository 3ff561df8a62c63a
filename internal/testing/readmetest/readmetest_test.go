package readmetest

import (
	"os"
	"path/filepath"
	"testing"
)

type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true; panic(r) }

// TestInExample: a snippet found in the example passes; one that differs,
// or is missing, fails.
func TestInExample(t *testing.T) {
	dir := t.TempDir()
	readme := filepath.Join(dir, "README.md")
	example := filepath.Join(dir, "example_test.go")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(example, "func Example() {\n\tx := f(1)\n\tg(x)\n}\n")
	for _, tc := range []struct {
		name, readme string
		fails        bool
	}{
		{"same", "intro\n```go\nx := f(1)\ng(x)\n```\n", false},
		{"differs", "intro\n```go\nx := f(2)\ng(x)\n```\n", true},
		{"missing", "intro\n```go\ny := 1\n```\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(readme, tc.readme)
			r := &recorder{TB: t}
			func() {
				defer func() { _ = recover() }()
				InExample(r, readme, "x := f(", example)
			}()
			if r.failed != tc.fails {
				t.Errorf("failed = %v, want %v", r.failed, tc.fails)
			}
		})
	}
}
