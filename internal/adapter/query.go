package adapter

import (
	"maps"
	"net/url"
	"slices"
	"strings"
)

// ParseQuery returns the parameters of a raw query string, each name's
// values in the order sent, or nil when it has none. Unlike url.ParseQuery
// it drops no pair: a semicolon stays part of its pair's text, and a name
// or value with an invalid escape is kept as sent. Every pair a handler
// may read therefore counts in the fingerprint, and a key reused with
// another such query is a mismatch, not a replay.
func ParseQuery(raw string) map[string][]string {
	var m map[string][]string
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		if m == nil {
			m = make(map[string][]string)
		}
		k = unescape(k)
		m[k] = append(m[k], unescape(v))
	}
	return m
}

// unescape decodes a query component ("+" is a space), or returns it as
// sent when its escapes are invalid.
func unescape(s string) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// DecodeQuery returns query parameters that arrive as sent, still
// percent-encoded (an ALB event's), decoded as API Gateway delivers them
// and as ParseQuery reads a raw query: "+" is a space, and a name or
// value with an invalid escape is kept as sent. A name or value without
// "%" or "+" is unchanged, so is the fingerprint of a query of such
// parameters; m itself is returned when it has none. Names that decode
// alike are merged, their values in the bytewise order of the names as
// sent, so the result never depends on map order.
func DecodeQuery(m map[string][]string) map[string][]string {
	encoded := false
	for k, vs := range m {
		encoded = encoded || strings.ContainsAny(k, "%+")
		for _, v := range vs {
			encoded = encoded || strings.ContainsAny(v, "%+")
		}
		if encoded {
			break
		}
	}
	if !encoded {
		return m
	}
	keys := slices.Sorted(maps.Keys(m))
	out := make(map[string][]string, len(m))
	for _, k := range keys {
		d := unescape(k)
		for _, v := range m[k] {
			out[d] = append(out[d], unescape(v))
		}
	}
	return out
}
