package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestString: the result is at most max bytes of valid UTF-8, s itself
// when that fits, cut on a rune boundary with an ellipsis otherwise.
func TestString(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"short", "abc", 8, "abc"},
		{"exactly the bound", "abcdefgh", 8, "abcdefgh"},
		{"one over", "abcdefghi", 8, "abcde..."},
		{"cut inside a rune", "abcdé€", 8, "abcd..."},
		{"invalid UTF-8 that fits", "ab\xffc", 8, "ab\uFFFDc"},
		{"invalid UTF-8 that grows past the bound", "ab\xffc\xffd\xff", 8, "ab\uFFFD..."},
		{"1 MB", strings.Repeat("k", 1<<20), 4096, strings.Repeat("k", 4093) + "..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := String(tc.in, tc.max)
			if got != tc.want {
				t.Errorf("String(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
			if len(got) > tc.max || !utf8.ValidString(got) {
				t.Errorf("%d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
			}
		})
	}
}
