package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/idemkit/idemkit/idemkey"
)

// TestDisplayText: stored text is printed as it is unless it holds a
// character a terminal acts on (C0 and C1 controls, DEL, line and
// paragraph separators, invalid UTF-8), which is quoted instead, so it can
// neither send escape sequences nor forge a line.
func TestDisplayText(t *testing.T) {
	for _, s := range []string{"POST /orders", "acme-é", "€ 10", "東京-店", "e\u0301", "emoji-\U0001F600"} {
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
		back, err := idemkey.Parse([]string{shown}, idemkey.Options{MaxLen: maxKeyLen})
		if err != nil || back != k {
			t.Errorf("displayKey(%q) = %s, read back as %q, %v", k, shown, back, err)
		}
	}
	if got := displayKey("order-1"); got != "order-1" {
		t.Errorf("displayKey(order-1) = %s, want it bare", got)
	}
}

// TestDisplayTextInvisible: a tenant (or any stored text) that differs
// from another only by a rune a terminal draws as nothing or as a plain
// space (a zero-width mark, a variation selector, a Hangul or braille
// blank, a space other than U+0020) is printed quoted with that rune
// escaped, so the two look different; the quoted form reads back as the
// text.
func TestDisplayTextInvisible(t *testing.T) {
	for _, r := range []rune{
		0x034F,          // combining grapheme joiner
		0xFE0F, 0xE0100, // variation selectors
		0x115F, 0x1160, // Hangul choseong and jungseong fillers
		0x3164, 0xFFA0, // Hangul filler, halfwidth Hangul filler
		0x2800,         // braille pattern blank
		0x00A0, 0x3000, // no-break space, ideographic space
		0x2007, 0x202F, // figure space, narrow no-break space
		0x200B, 0x2060, // zero width space, word joiner
		0x00AD, 0x180E, // soft hyphen, Mongolian vowel separator
		0x17B4,         // Khmer vowel inherent aq
		0xE000, 0x0378, // private use, unassigned
	} {
		t.Run(fmt.Sprintf("U+%04X", r), func(t *testing.T) {
			s := "tenant-a" + string(r)
			got := displayText(s)
			if got == displayText("tenant-a") {
				t.Fatalf("displayText(%q) = %s, the same as tenant-a's", s, got)
			}
			for _, c := range got {
				if c > unicode.MaxASCII || !unicode.IsPrint(c) {
					t.Errorf("displayText(%q) = %s holds %U raw", s, got, c)
				}
			}
			if back, err := strconv.Unquote(got); err != nil || back != s {
				t.Errorf("displayText(%q) = %s reads back as %q, %v", s, got, back, err)
			}
		})
	}
	if got := displayText("bad \xff é\x1b"); got != `"bad \xff é\x1b"` {
		t.Errorf("displayText(invalid UTF-8) = %s", got)
	}
}
