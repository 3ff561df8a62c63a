// Package clip bounds text taken from a request, or from an error about
// it, before a problem detail or a log line repeats it.
package clip

import (
	"strings"
	"unicode/utf8"
)

// Ellipsis ends a string that String cut.
const Ellipsis = "..."

// MaxLogField bounds every text field of a log line idemkit writes
// (package observe's MaxFieldBytes).
const MaxLogField = 4096

// String returns s bounded to max bytes (at least len(Ellipsis)+1): s
// itself when it is valid UTF-8 that fits; otherwise, with invalid UTF-8
// replaced by U+FFFD, cut on a UTF-8 boundary and ending in Ellipsis when
// it does not fit.
func String(s string, max int) string {
	long := len(s) > max
	if long {
		s = s[:max] // the cut below drops any rune split here
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if !long && len(s) <= max {
		return s
	}
	n := max - len(Ellipsis)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + Ellipsis
}
