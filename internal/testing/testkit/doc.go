package testkit

import (
	"os"
	"strings"
	"testing"
)

// Doc returns the text of the file at path (a doc the test checks the
// code against), failing t when it cannot be read.
func Doc(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Section returns the part of the file at path after the first start,
// up to the first end after it (the rest of the file when there is
// none), failing t when the file cannot be read or holds no start.
func Section(t testing.TB, path, start, end string) string {
	t.Helper()
	_, s, ok := strings.Cut(Doc(t, path), start)
	if !ok {
		t.Fatalf("%s has no %q", path, start)
	}
	s, _, _ = strings.Cut(s, end)
	return s
}
