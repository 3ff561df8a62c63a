// Package httpheader holds the rules for response header names and values
// that every part of idemkit applies alike: which names are never stored
// or replayed, what a valid name and value are, and how names compare.
// Header names are ASCII tokens (RFC 9110, section 5.1): every comparison
// here folds ASCII letters only, so that no Unicode case folding (U+017F
// folds to "s") can make one name pass for another.
package httpheader

import "strings"

// Names that are never stored or replayed, lower case, by what they
// describe of one exchange rather than of its outcome.
var (
	// cookies and the exchange's own time and caching
	exchange = []string{"set-cookie", "set-cookie2", "date", "age", "expires", "retry-after", "server-timing"}
	// hop-by-hop fields and the message framing (RFC 9110, section 7.6.1)
	hopByHop = []string{"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
		"te", "trailer", "transfer-encoding", "upgrade", "via", "content-length"}
	// request and trace ids of this exchange
	ids = []string{"x-request-id", "request-id", "x-correlation-id", "traceparent", "tracestate", "baggage", "b3",
		"x-cloud-trace-context", "uber-trace-id", "cf-ray"}
	// the mark of a replay, added by idemkit itself
	replayed = []string{"idempotent-replayed"}
	// prefixes: AWS's per-request headers, trace headers, rate limits
	prefixes = []string{"x-amz-", "x-amzn-", "x-b3-", "x-datadog-", "ratelimit", "x-ratelimit", "x-rate-limit"}
)

// NeverReplayed reports whether a response header name may never be
// stored or replayed: cookies, dates and retry hints, hop-by-hop fields,
// request and trace ids (AWS's x-amz-* and x-amzn-* included), rate
// limits, and Idempotent-Replayed. A name that is not a valid token is
// never replayed either.
func NeverReplayed(name string) bool {
	if !ValidName(name) {
		return true
	}
	n := lower(name)
	for _, list := range [][]string{exchange, hopByHop, ids, replayed} {
		for _, v := range list {
			if n == v {
				return true
			}
		}
	}
	for _, p := range prefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// HopByHop reports whether a header name describes one connection or the
// message framing (Connection, Transfer-Encoding, Content-Length, ...),
// not the response: such a field is never stored, and one a hook sets is
// dropped, as the server frames each response itself.
func HopByHop(name string) bool {
	n := lower(name)
	for _, v := range hopByHop {
		if n == v {
			return true
		}
	}
	return false
}

// ValidName reports whether name is an HTTP field name: a non-empty token
// of ASCII letters, digits and !#$%&'*+-.^_`|~.
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !tokenChar(name[i]) {
			return false
		}
	}
	return true
}

func tokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// ValidValue reports whether v is an HTTP field value a response may
// carry: visible ASCII, spaces and tabs, and bytes of 0x80 and above
// (obs-text), with no other control character and no space or tab at
// either end (RFC 9110, section 5.5).
func ValidValue(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\t' || c == ' ' {
			if i == 0 || i == len(v)-1 {
				return false
			}
			continue
		}
		if c < 0x21 || c == 0x7f {
			return false
		}
	}
	return true
}

// EqualFold reports whether two header names are equal, folding ASCII
// letters only.
func EqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerByte(a[i]) != lowerByte(b[i]) {
			return false
		}
	}
	return true
}

func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				b[j] = lowerByte(b[j])
			}
			return string(b)
		}
	}
	return s
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
