package adapter

import (
	"net/url"
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
