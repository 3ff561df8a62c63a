package adapter

import (
	"strings"

	"github.com/idemkit/idemkit/internal/hexdigit"
)

// NormalizePath returns a request path that arrives as sent, still
// percent-encoded, in the normal form of RFC 3986 section 6.2.2: an escape
// of an unreserved character (ALPHA, DIGIT, "-", ".", "_", "~") is
// decoded, and the hex digits of every other escape are upper case. Both
// spellings name one resource, and a client or proxy may send either on a
// retry. An escaped reserved character ("%2F") stays escaped: it is
// another resource than its literal. A path without "%" is returned as it
// is, so the operation of such a path is unchanged.
func NormalizePath(p string) string {
	i := strings.IndexByte(p, '%')
	if i < 0 {
		return p
	}
	var b strings.Builder
	b.Grow(len(p))
	b.WriteString(p[:i])
	for ; i < len(p); i++ {
		d, ok := hexdigit.Escape(p, i)
		if !ok {
			b.WriteByte(p[i])
			continue
		}
		if unreserved(d) {
			b.WriteByte(d)
		} else {
			b.WriteByte('%')
			b.WriteByte(upper(p[i+1]))
			b.WriteByte(upper(p[i+2]))
		}
		i += 2
	}
	return b.String()
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'f' {
		return c - 'a' + 'A'
	}
	return c
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
