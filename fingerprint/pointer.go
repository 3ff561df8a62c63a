package fingerprint

import (
	"strings"
	"unicode/utf8"
)

// pointer is a parsed RFC 6901 JSON Pointer.
type pointer struct {
	text  string   // as given; hashed in Include mode
	toks  []string // unescaped reference tokens; empty for the whole document
	btoks [][]byte // toks as bytes, for comparing with member names
}

// parsePointer parses an RFC 6901 JSON Pointer in its string form
// (not the URI fragment form).
func parsePointer(p string) (pointer, error) {
	if p == "" {
		return pointer{text: p}, nil
	}
	if p[0] != '/' {
		return pointer{}, &PointerError{Pointer: p, Reason: `must be empty or start with "/"`}
	}
	if !utf8.ValidString(p) {
		return pointer{}, &PointerError{Pointer: p, Reason: "invalid UTF-8"}
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		if strings.IndexByte(t, '~') < 0 {
			continue
		}
		var b strings.Builder
		for j := 0; j < len(t); j++ {
			c := t[j]
			if c != '~' {
				b.WriteByte(c)
				continue
			}
			if j+1 < len(t) && (t[j+1] == '0' || t[j+1] == '1') {
				if t[j+1] == '0' {
					b.WriteByte('~')
				} else {
					b.WriteByte('/')
				}
				j++
				continue
			}
			return pointer{}, &PointerError{Pointer: p, Reason: `"~" must be followed by "0" or "1"`}
		}
		toks[i] = b.String()
	}
	btoks := make([][]byte, len(toks))
	for i, t := range toks {
		btoks[i] = []byte(t)
	}
	return pointer{text: p, toks: toks, btoks: btoks}, nil
}

// arrayIndex reports the array index a reference token denotes:
// "0" or a decimal number without leading zeros. "-" and anything else
// denote no element.
func arrayIndex(tok string) (int, bool) {
	if tok == "" || len(tok) > 9 || (tok[0] == '0' && len(tok) > 1) {
		return 0, false
	}
	n := 0
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// trie holds the Exclude pointers. A node with cut set removes the value
// at its path; kids are keyed by reference token.
type trie struct {
	cut  bool
	kids map[string]*trie
}

func (t *trie) add(toks []string) {
	n := t
	for _, tok := range toks {
		if n.cut {
			return // an ancestor is already removed
		}
		if n.kids == nil {
			n.kids = make(map[string]*trie)
		}
		k := n.kids[tok]
		if k == nil {
			k = new(trie)
			n.kids[tok] = k
		}
		n = k
	}
	n.cut = true
	n.kids = nil
}

// child returns the node for a member name or array index, or nil.
func (t *trie) child(name []byte) *trie {
	if t == nil || t.kids == nil {
		return nil
	}
	return t.kids[string(name)]
}
