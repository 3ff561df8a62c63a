package testkit

import (
	"strings"
	"testing"
)

// Has fails t for each string of want that out lacks and each of not
// that it holds, naming out by what (say "stdout") and showing it.
func Has(t testing.TB, what, out string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
	for _, w := range not {
		if strings.Contains(out, w) {
			t.Errorf("%s has %q:\n%s", what, w, out)
		}
	}
}
