package adapter

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/httpheader"
)

// ReplayedHeader marks a replayed response. Only replays carry it: a
// handler's own (any spelling) is removed from its fresh response and is
// never stored.
const ReplayedHeader = "Idempotent-Replayed"

// WithoutReplayed returns m without the ReplayedHeader in any spelling:
// m itself when it has none, otherwise a copy, so that a map the handler
// shares (a package-level one) is never written to.
func WithoutReplayed[V any](m map[string]V) map[string]V {
	var out map[string]V
	for k := range m {
		if httpheader.EqualFold(k, ReplayedHeader) {
			if out == nil {
				out = maps.Clone(m)
			}
			delete(out, k)
		}
	}
	if out == nil {
		return m
	}
	return out
}

// DefaultReplayHeaders are the response headers a snapshot keeps.
var DefaultReplayHeaders = []string{"Content-Type", "Content-Encoding", "Location"}

// allowList returns the canonical replay allow-list: the defaults plus
// extra, without duplicates. It refuses names that must never be replayed.
func allowList(extra []string) ([]string, error) {
	out := slices.Clone(DefaultReplayHeaders)
	for _, n := range extra {
		if n == "" {
			return nil, fmt.Errorf("empty header name in ReplayHeaders")
		}
		if !httpheader.ValidName(n) {
			return nil, fmt.Errorf("header name %q in ReplayHeaders is not an HTTP token (ASCII letters, digits and !#$%%&'*+-.^_`|~)", n)
		}
		if httpheader.NeverReplayed(n) {
			return nil, fmt.Errorf("header %q may never be replayed", n)
		}
		c := http.CanonicalHeaderKey(n)
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// allowed returns the canonical allow-listed spelling of name, or "".
func (a *Adapter) allowed(name string) string {
	if i := a.allowedIndex(name); i >= 0 {
		return a.replay[i]
	}
	return ""
}

// allowedIndex returns the index of name in the allow-list, or -1.
func (a *Adapter) allowedIndex(name string) int {
	for i, n := range a.replay {
		if httpheader.EqualFold(n, name) {
			return i
		}
	}
	return -1
}

// FilterHeader returns the allow-listed headers among a Lambda proxy
// response's single-value and multi-value headers, canonical names. Values
// of a name in multi replace its value in single, as API Gateway merges
// them. A name set under several spellings in one map (Content-Type and
// content-type) keeps the values of the spelling that sorts first
// bytewise: the Lambda runtime serializes map keys in that order, and API
// Gateway delivers the first. The result never depends on map order.
func (a *Adapter) FilterHeader(single map[string]string, multi map[string][]string) http.Header {
	var (
		h http.Header
		// spell[i] is the spelling whose values h holds for a.replay[i];
		// fromMulti[i] says it came from multi, which wins.
		spellBuf [8]string
		multiBuf [8]bool
		spell    = spellBuf[:0]
		multiSrc = multiBuf[:0]
	)
	if n := len(a.replay); n <= len(spellBuf) {
		spell, multiSrc = spellBuf[:n], multiBuf[:n]
	} else {
		spell, multiSrc = make([]string, n), make([]bool, n)
	}
	for k, vs := range multi {
		i := a.allowedIndex(k)
		if i < 0 || len(vs) == 0 || spell[i] != "" && spell[i] < k {
			continue
		}
		if h == nil {
			h = make(http.Header, len(a.replay))
		}
		spell[i], multiSrc[i] = k, true
		h[a.replay[i]] = slices.Clone(vs)
	}
	for k, v := range single {
		i := a.allowedIndex(k)
		if i < 0 || multiSrc[i] || spell[i] != "" && spell[i] < k {
			continue
		}
		if h == nil {
			h = make(http.Header, len(a.replay))
		}
		spell[i] = k
		h[a.replay[i]] = []string{v}
	}
	return h
}

// FilterSent returns the allow-listed headers of a net/http response,
// canonical names. A name set under several spellings (a handler writing
// to the map directly) keeps every spelling's values, spellings in
// bytewise order, as net/http writes their lines.
func (a *Adapter) FilterSent(sent http.Header) http.Header {
	var buf [8]string
	keys := buf[:0]
	for k, vs := range sent {
		if a.allowedIndex(k) >= 0 && len(vs) > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	h := make(http.Header, len(keys))
	for _, k := range keys {
		c := a.allowed(k)
		h[c] = append(h[c], sent[k]...)
	}
	return h
}

// Multi returns a single-valued map (an event's headers or query
// parameters) as a multi-valued one.
func Multi(m map[string]string) map[string][]string {
	out := make(map[string][]string, len(m))
	for k, v := range m {
		out[k] = []string{v}
	}
	return out
}

// MultiOr returns multi, an event's multi-value headers or query
// parameters, or single as a multi-valued map when the event has no
// multi-value form (v1 and ALB events carry one or both).
func MultiOr(single map[string]string, multi map[string][]string) map[string][]string {
	if multi != nil {
		return multi
	}
	return Multi(single)
}

// LambdaSnapshot returns what may be stored of a Lambda proxy response:
// its status, the allow-listed headers of single and multi, its body.
func (a *Adapter) LambdaSnapshot(status int, single map[string]string, multi map[string][]string, body string, base64 bool) *idemkit.Snapshot {
	return &idemkit.Snapshot{Status: status, Header: a.FilterHeader(single, multi),
		Body: SnapshotBody(body, base64), Base64: base64}
}

// Values returns the values of header name (any case) in a request's
// single-value and multi-value headers. The values of a name in multi are
// all taken; a name only in single adds its one value. Values of several
// spellings of the name are sorted so the result does not depend on map
// order.
func Values(single map[string]string, multi map[string][]string, name string) []string {
	var out []string
	names := 0
	for k, vs := range multi {
		if httpheader.EqualFold(k, name) {
			out = append(out, vs...)
			names++
		}
	}
	for k, v := range single {
		if httpheader.EqualFold(k, name) {
			out = append(out, v)
			names++
		}
	}
	if names > 1 {
		slices.Sort(out)
	}
	return out
}

// First returns the first value of header name (any case), or "": from
// multi when it has the header, else from single. Where the map holds the
// name under several spellings, the bytewise-first spelling's value is
// returned, the same on every call whatever the map's order.
func First(single map[string]string, multi map[string][]string, name string) string {
	var key string
	found := false
	for k, vs := range multi {
		if httpheader.EqualFold(k, name) && len(vs) > 0 && (!found || k < key) {
			key, found = k, true
		}
	}
	if found {
		return multi[key][0]
	}
	for k := range single {
		if httpheader.EqualFold(k, name) && (!found || k < key) {
			key, found = k, true
		}
	}
	if found {
		return single[key]
	}
	return ""
}

// SnapshotBody returns the bytes of a Lambda proxy response body as the
// caller receives them, to be stored and replayed. A body without the
// base64 flag travels as a JSON string, and the Lambda runtime's JSON
// encoder replaces each byte that is not part of valid UTF-8 with U+FFFD:
// the stored body gets the same replacements, so a replay equals the first
// response as delivered. A base64 body is kept as it is. A body kept as it
// is shares body's bytes: it must never be written to.
func SnapshotBody(body string, isBase64 bool) []byte {
	if isBase64 || utf8.ValidString(body) {
		// The response's own bytes, not a copy: a snapshot is only read
		// (a store may not modify it, idemkit.Store), and a copy of a
		// 64 KB body, a new allocation, costs 15-25 µs (a fifth of the
		// fresh path with dynamo.CodecS2).
		return unsafe.Slice(unsafe.StringData(body), len(body))
	}
	size := len(body)
	for i := 0; i < len(body); {
		r, n := utf8.DecodeRuneInString(body[i:])
		if r == utf8.RuneError && n == 1 {
			size += utf8.RuneLen(utf8.RuneError) - 1
		}
		i += n
	}
	out := make([]byte, 0, size)
	for i := 0; i < len(body); {
		r, n := utf8.DecodeRuneInString(body[i:])
		if r == utf8.RuneError && n == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, body[i:i+n]...)
		}
		i += n
	}
	return out
}

// LambdaBody returns a snapshot's body as a Lambda proxy response carries
// it. A body stored without the base64 flag that is not valid UTF-8 (a
// binary body captured by the net/http middleware) is base64-encoded, as a
// JSON string could not carry it intact. A body returned as it is shares
// s.Body's bytes, without a copy: s must be the replay's own snapshot (as
// a store returns it, shared with nothing), never written to afterwards.
func LambdaBody(s *idemkit.Snapshot) (body string, isBase64 bool) {
	if s.Base64 || utf8.Valid(s.Body) {
		return unsafe.String(unsafe.SliceData(s.Body), len(s.Body)), s.Base64
	}
	return base64.StdEncoding.EncodeToString(s.Body), true
}

// ResponseBody returns b as a Lambda proxy response body: as it is when
// it is valid UTF-8, which the Lambda runtime carries intact as a JSON
// string, base64-encoded otherwise.
func ResponseBody(b []byte) (body string, isBase64 bool) {
	if utf8.Valid(b) {
		return string(b), false
	}
	return base64.StdEncoding.EncodeToString(b), true
}

// Single returns h as single-value headers, several values joined by ", ".
func Single(h http.Header, extra int) map[string]string {
	out := make(map[string]string, len(h)+extra)
	for k, vs := range h {
		out[k] = strings.Join(vs, ", ")
	}
	return out
}

// Split returns h as single-value headers and, for names with several
// values, multi-value headers (nil when there are none).
func Split(h http.Header, extra int) (map[string]string, map[string][]string) {
	single := make(map[string]string, len(h)+extra)
	var multi map[string][]string
	for k, vs := range h {
		switch len(vs) {
		case 0:
		case 1:
			single[k] = vs[0]
		default:
			if multi == nil {
				multi = make(map[string][]string)
			}
			multi[k] = slices.Clone(vs)
		}
	}
	return single, multi
}
