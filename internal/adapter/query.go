package adapter

import (
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/httpconfig"
)

// readQuery sets in's query from r: the parameters r.Query returns, or else
// r.RawQuery, which the fingerprint reads in place, as url.ParseQuery reads
// it (see fingerprint.Input.RawQuery). A query of more than
// httpconfig.MaxQueryParams parameters, counted as net/url counts them, is
// ErrQueryTooLarge: net/url refuses it, so the handler reads none of its
// parameters, and reading it costs memory.
func readQuery(r *Request, in *fingerprint.Input) error {
	if r.Query == nil {
		if strings.Count(r.RawQuery, "&") >= httpconfig.MaxQueryParams {
			return httpconfig.ErrQueryTooLarge
		}
		in.RawQuery = r.RawQuery
		return nil
	}
	q := r.Query()
	n := 0
	for _, vs := range q {
		n += len(vs)
	}
	if n > httpconfig.MaxQueryParams {
		return httpconfig.ErrQueryTooLarge
	}
	in.Query = q
	return nil
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
// and as url.ParseQuery reads a raw query: "+" is a space. A name or value
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
