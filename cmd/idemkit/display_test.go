package main

import (
	"strings"
	"testing"

	"github.com/idemkit/idemkit"
)

// TestDisplayText: stored text is printed as it is unless it holds a
// character a terminal acts on (C0 and C1 controls, DEL, line and
// paragraph separators, invalid UTF-8), which is quoted instead, so it can
// neither send escape sequences nor forge a line.
func TestDisplayText(t *testing.T) {
	for _, s := range []string{"POST /orders", "acme-é", "€ 10"} {
		if got := displayText(s); got != s {
			t.Errorf("displayText(%q) = %q, want it as it is", s, got)
		}
	}
	for _, s := range []string{"a\tb", "a\nb", "\x1b[2J", "a\x7fb", "\u009b2J", "\u0085next", "a\u2028b", "a\u2029b", "bad \xff"} {
		got := displayText(s)
		if !strings.HasPrefix(got, `"`) || strings.ContainsAny(got, "\t\n\x1b\x7f\u009b\u0085\u2028\u2029") {
			t.Errorf("displayText(%q) = %q, want it quoted", s, got)
		}
	}
}

// TestDisplayKey: a key is shown as --key takes it back: bare when it can
// be, else as a structured-field string, so a key with a space, a quote or
// a backslash round-trips. No key holds a comma.
func TestDisplayKey(t *testing.T) {
	for _, k := range []string{"order-1", "a b", `a"b`, `a\b`, ` lead`} {
		shown := displayKey(k)
		back, err := idemkit.ParseKey([]string{shown}, idemkit.KeyOptions{MaxLen: maxKeyLen})
		if err != nil || back != k {
			t.Errorf("displayKey(%q) = %s, read back as %q, %v", k, shown, back, err)
		}
	}
	if got := displayKey("order-1"); got != "order-1" {
		t.Errorf("displayKey(order-1) = %s, want it bare", got)
	}
}
