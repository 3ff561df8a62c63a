package adapter

import (
	"maps"
	"net/url"
	"slices"
	"strings"
)

// ParseQuery returns the parameters of a raw query string, each name's
// values in the order sent, or nil when it has none. Where url.ParseQuery
// reads the query without error, the result is the same. Where it would
// drop a pair (a semicolon, an invalid escape), ParseQuery drops nothing:
// it returns the whole raw query as one name with no value. No query that
// parses cleanly reads so (each of its names has at least one value), so
// every pair a handler may read counts in the fingerprint, and a query
// that does not parse cleanly matches only the very same text: a key
// reused with another query is a mismatch, never a replay.
func ParseQuery(raw string) map[string][]string {
	var m map[string][]string
	for rest := raw; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		dk, okk := unescape(k)
		dv, okv := unescape(v)
		if !okk || !okv || strings.Contains(pair, ";") {
			return map[string][]string{raw: {}}
		}
		if m == nil {
			m = make(map[string][]string)
		}
		m[dk] = append(m[dk], dv)
	}
	return m
}

// unescape decodes a query component ("+" is a space), or returns it as
// sent and false when its escapes are invalid.
func unescape(s string) (string, bool) {
	if !strings.ContainsAny(s, "%+") {
		return s, true
	}
	u, err := url.QueryUnescape(s)
	if err != nil {
		return s, false
	}
	return u, true
}

// rawQueryMark is the name DecodeQuery adds, with no value, to parameters
// it returns as sent: no request target can hold a NUL byte, and no
// decoded parameter lacks a value.
const rawQueryMark = "\x00"

// DecodeQuery returns query parameters that arrive as sent, still
// percent-encoded (an ALB event's), decoded as API Gateway delivers them
// and as ParseQuery reads a raw query: "+" is a space. A name or value
// without "%" or "+" is unchanged, so is the fingerprint of a query of
// such parameters; m itself is returned when it has none. Names that
// decode alike are merged, their values in the bytewise order of the
// names as sent, so the result never depends on map order. When a name
// or value has an invalid escape, the parameters are returned as sent,
// with one more name that no decoded query has (a NUL byte, without a
// value): they then match only the very same parameters, never a query
// that decodes to the text of an invalid escape.
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
		d, ok := unescape(k)
		for _, v := range m[k] {
			dv, okv := unescape(v)
			if !ok || !okv {
				raw := maps.Clone(m)
				raw[rawQueryMark] = []string{}
				return raw
			}
			out[d] = append(out[d], dv)
		}
	}
	return out
}
