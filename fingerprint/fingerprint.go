package fingerprint

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"slices"
	"strings"
	"sync"
	"unsafe"
)

// CurrentVersion is the version [Compute] and [Fingerprinter.Compute] use.
const CurrentVersion = "v2"

// DefaultMaxDepth is the nesting limit used when Options.MaxDepth is zero.
const DefaultMaxDepth = 64

// MaxDepthLimit is the largest Options.MaxDepth [New] accepts. The time a
// JSON body takes grows with its size times its object nesting depth.
const MaxDepthLimit = 256

// Mode says how the body is read.
type Mode int

const (
	// ModeAuto, the zero value, picks the mode from the body and its
	// content type (media type compared without parameters, ignoring case):
	//   - an empty body (after base64 decoding) is hashed as raw bytes;
	//   - application/json and any */*+json type: JSON, and a body that is
	//     not valid JSON is an error;
	//   - application/x-www-form-urlencoded: form;
	//   - no content type: JSON if the body starts (after whitespace) with
	//     "{" or "[", and then a body that is not valid I-JSON is an error
	//     (v1 hashed such a body as raw bytes); raw bytes otherwise;
	//   - anything else: raw bytes.
	ModeAuto Mode = iota
	// ModeJSON always reads the body as JSON; invalid JSON, including an
	// empty body, is an error.
	ModeJSON
	// ModeRaw hashes the body bytes as they are. Include and Exclude are
	// not used.
	ModeRaw
	// ModeForm reads the body as application/x-www-form-urlencoded.
	ModeForm
)

// Options says what is part of the fingerprint. The zero value hashes the
// whole body (mode chosen by [ModeAuto]) and the whole query string, and
// nothing else: no method, path or header, with a nesting limit of
// [DefaultMaxDepth]. (v1 did not hash the query string unless Query named
// parameters.)
//
// Changing Options changes fingerprints: records stored under one set of
// Options compare unequal to requests fingerprinted under another.
type Options struct {
	Mode Mode

	// Include, when not empty, restricts the body to the values at these
	// JSON Pointers (RFC 6901, e.g. "/amount", "/items/0/sku"). For each
	// pointer the fingerprint records whether a value is there and, if so,
	// the value; a missing value and a null are therefore different.
	// Order and duplicates do not matter.
	Include []string

	// Exclude removes the values at these JSON Pointers before hashing. A
	// removed member disappears from its object, a removed element from
	// its array. A pointer that matches nothing is ignored. Exclude may be
	// combined with Include. It is applied first, so it can remove volatile
	// fields inside an included value, and an included pointer at or under
	// an excluded one selects nothing. The empty pointer (the whole body)
	// cannot be excluded. Pointers in both lists always refer to the body
	// as sent, so excluding "/items/0" does not renumber "/items/1".
	Exclude []string

	// Method and Path add the request method and the path, as given.
	Method, Path bool

	// Query lists the query parameter names (case-sensitive) to hash,
	// instead of the whole query string. For each name all its values are
	// hashed in order; a missing parameter and one with an empty value
	// differ. Empty: every parameter is hashed, names sorted bytewise and
	// each name's values in order, unless IgnoreQuery is set.
	Query []string

	// IgnoreQuery leaves the query string out of the fingerprint, for an
	// operation whose query never changes what it does. It cannot be
	// combined with Query.
	IgnoreQuery bool

	// Headers lists header names (case-insensitive) to add. Values are
	// hashed in order with surrounding spaces and tabs removed. Never list
	// headers that vary between retries (User-Agent, Date, trace ids).
	Headers []string

	// MaxDepth limits the nesting of objects and arrays in a JSON body;
	// zero means DefaultMaxDepth. At most MaxDepthLimit (256): the time a
	// body takes grows with its size times its depth.
	MaxDepth int
}

// Input is one request as the fingerprint sees it. Query and Header accept
// url.Values and http.Header directly.
type Input struct {
	Method string
	Path   string
	Query  map[string][]string // parameter names are case-sensitive
	// RawQuery is the query string as sent, without "?". It is read when
	// Query is nil, and hashes as the parameters url.ParseQuery returns for
	// it, so a net/http request's URL.RawQuery gives r.URL.Query()'s
	// fingerprint. It is read in place, with 4 bytes per parameter and no
	// limit on their number. A query that url.ParseQuery does not read
	// whole (a pair with ";", a malformed escape) hashes as one parameter,
	// named by the whole raw query, without a value. No query that parses
	// cleanly reads so, so it matches only the very same text.
	RawQuery    string
	Header      map[string][]string // names are matched case-insensitively
	ContentType string              // used by ModeAuto; when empty, Header's Content-Type is used
	Body        []byte

	// BodyString is the body when Body is nil, for callers that hold it as
	// a string (Lambda events). It is read in place, never copied.
	BodyString string

	// IsBase64Encoded says Body holds standard base64 text to decode first,
	// as API Gateway and Lambda function URLs deliver binary bodies.
	IsBase64Encoded bool
}

// A Fingerprinter holds validated Options. It is safe for concurrent use.
type Fingerprinter struct {
	mode     Mode
	noQuery  bool      // IgnoreQuery
	include  []pointer // sorted by text, without duplicates
	exclude  *trie     // nil without Exclude
	method   bool
	path     bool
	query    []string // sorted, without duplicates
	headers  []string // lower case, sorted, without duplicates
	maxDepth int
	formCuts map[string]bool // one-token Exclude pointers, for form bodies
}

// New validates opts and returns a Fingerprinter for them. Errors match
// [ErrInvalidOptions]; a bad pointer is a [*PointerError].
func New(opts Options) (*Fingerprinter, error) {
	f := &Fingerprinter{
		mode:     opts.Mode,
		noQuery:  opts.IgnoreQuery,
		method:   opts.Method,
		path:     opts.Path,
		maxDepth: opts.MaxDepth,
	}
	if opts.Mode < ModeAuto || opts.Mode > ModeForm {
		return nil, fmt.Errorf("%w: unknown Mode %d", ErrInvalidOptions, opts.Mode)
	}
	switch {
	case f.maxDepth == 0:
		f.maxDepth = DefaultMaxDepth
	case f.maxDepth < 0 || f.maxDepth > MaxDepthLimit:
		return nil, fmt.Errorf("%w: MaxDepth %d is outside 0..%d (MaxDepthLimit)", ErrInvalidOptions, opts.MaxDepth, MaxDepthLimit)
	}
	if err := f.setInclude(opts.Include); err != nil {
		return nil, err
	}
	if err := f.setExclude(opts.Exclude); err != nil {
		return nil, err
	}
	if opts.IgnoreQuery && len(opts.Query) > 0 {
		return nil, fmt.Errorf("%w: IgnoreQuery with Query %q", ErrInvalidOptions, opts.Query)
	}
	f.query = slices.Compact(slices.Sorted(slices.Values(opts.Query)))
	if err := f.setHeaders(opts.Headers); err != nil {
		return nil, err
	}
	return f, nil
}

// setInclude parses the Include pointers into f.include, sorted by text
// and without duplicates.
func (f *Fingerprinter) setInclude(include []string) error {
	for _, s := range include {
		p, err := parsePointer(s)
		if err != nil {
			return err
		}
		f.include = append(f.include, p)
	}
	slices.SortFunc(f.include, func(a, b pointer) int { return strings.Compare(a.text, b.text) })
	f.include = slices.CompactFunc(f.include, func(a, b pointer) bool { return a.text == b.text })
	return nil
}

// setExclude parses the Exclude pointers into the f.exclude trie, and the
// one-token ones into f.formCuts. The whole body cannot be excluded.
func (f *Fingerprinter) setExclude(exclude []string) error {
	for _, s := range exclude {
		p, err := parsePointer(s)
		if err != nil {
			return err
		}
		if len(p.toks) == 0 {
			return &PointerError{Pointer: s, Reason: "the whole body cannot be excluded"}
		}
		if f.exclude == nil {
			f.exclude = new(trie)
		}
		f.exclude.add(p.toks)
		if len(p.toks) == 1 {
			if f.formCuts == nil {
				f.formCuts = make(map[string]bool)
			}
			f.formCuts[p.toks[0]] = true
		}
	}
	return nil
}

// setHeaders sets f.headers to the header names in lower case, sorted and
// without duplicates, refusing an empty name.
func (f *Fingerprinter) setHeaders(headers []string) error {
	for _, h := range headers {
		if h == "" {
			return fmt.Errorf("%w: empty header name", ErrInvalidOptions)
		}
		f.headers = append(f.headers, strings.ToLower(h))
	}
	slices.Sort(f.headers)
	f.headers = slices.Compact(f.headers)
	return nil
}

// Compute returns the fingerprint of in under opts with the current
// version, "v2:sha256:" followed by 64 lower-case hex digits.
func Compute(in Input, opts Options) (string, error) {
	return ComputeVersion(CurrentVersion, in, opts)
}

// ComputeVersion returns the fingerprint of in under opts with the rules
// of the given version. Use it to compare a request with a record stored
// under an older version:
//
//	fp, err := fingerprint.ComputeVersion(fingerprint.Version(stored), in, opts)
//	same := err == nil && fp == stored
//
// Versions are never removed, so every fingerprint this package ever wrote
// can be recomputed. An unknown version is an error matching
// [ErrUnknownVersion]. When the older version's rules leave out a part of
// the request that opts hash today (v1 and a query string), the result is
// an error matching [ErrNotComparable], because an old fingerprint cannot
// show that such a request is the same.
func ComputeVersion(version string, in Input, opts Options) (string, error) {
	f, err := New(opts)
	if err != nil {
		return "", err
	}
	return f.ComputeVersion(version, in)
}

// Compute returns the fingerprint of in with the current version.
func (f *Fingerprinter) Compute(in Input) (string, error) {
	return f.ComputeVersion(CurrentVersion, in)
}

// ComputeVersion returns the fingerprint of in with the rules of the given
// version; see the package function [ComputeVersion].
func (f *Fingerprinter) ComputeVersion(version string, in Input) (string, error) {
	switch version {
	case "v2":
		return f.v2(&in)
	case "v1":
		return f.v1(&in)
	}
	return "", fmt.Errorf("%w %q", ErrUnknownVersion, version)
}

// Version returns the version prefix of a fingerprint ("v2" for
// "v2:sha256:…"), or "" when fp has no such prefix. It does not check that
// the version is known; ComputeVersion does.
func Version(fp string) string {
	i := strings.IndexByte(fp, ':')
	if i <= 0 {
		return ""
	}
	return fp[:i]
}

// state is the per-call scratch space, reused through statePool.
type state struct {
	p     parser
	e     emitter
	h     hash.Hash
	b64   []byte
	names []string
	pairs []uint32 // form fields
	sum   [sha256.Size]byte
}

var statePool = sync.Pool{New: func() any { return &state{h: sha256.New()} }}

// maxPooled bounds the buffers a pooled state keeps, so that one huge
// request does not pin its memory.
const maxPooled = 1 << 20

func getState() *state {
	st := statePool.Get().(*state)
	st.h.Reset()
	st.e = emitter{out: st.e.out[:0], h: st.h}
	return st
}

func putState(st *state) {
	st.p.release()
	clear(st.names)
	st.names = st.names[:0]
	if cap(st.b64) > maxPooled || cap(st.e.out) > maxPooled || cap(st.p.key) > maxPooled ||
		cap(st.p.stack) > maxPooled/4 || cap(st.pairs) > maxPooled/4 || cap(st.names) > maxPooled/16 {
		return
	}
	statePool.Put(st)
}

// decodeBody returns the body bytes, decoding base64 if flagged. A body
// given as BodyString is read in place: nothing here writes to it.
func (st *state) decodeBody(in *Input) ([]byte, error) {
	body := in.Body
	if body == nil {
		body = unsafe.Slice(unsafe.StringData(in.BodyString), len(in.BodyString))
	}
	if !in.IsBase64Encoded {
		return body, nil
	}
	n := base64.StdEncoding.DecodedLen(len(body))
	if cap(st.b64) < n {
		st.b64 = make([]byte, n) // not slices.Grow: under -race it allocates twice
	}
	st.b64 = st.b64[:n]
	m, err := base64.StdEncoding.Decode(st.b64, body)
	if err != nil {
		return nil, &bodyError{kind: ErrInvalidBase64, cause: err, msg: err.Error()}
	}
	return st.b64[:m], nil
}

// contentType returns in.ContentType, or else the first Content-Type
// header value: under the key "Content-Type", else "content-type", else
// the first other spelling of the name in byte order that has a value,
// so that the choice never depends on map iteration order.
func contentType(in *Input) string {
	if in.ContentType != "" || len(in.Header) == 0 {
		return in.ContentType
	}
	for _, k := range [...]string{"Content-Type", "content-type"} {
		if v := in.Header[k]; len(v) > 0 {
			return v[0]
		}
	}
	key, found := "", false
	for k, v := range in.Header {
		if len(v) > 0 && strings.EqualFold(k, "content-type") && (!found || k < key) {
			key, found = k, true
		}
	}
	if !found {
		return ""
	}
	return in.Header[key][0]
}

// resolveMode applies the ModeAuto rules. sniffed reports a JSON guess made
// without a content type; under v1 such a body falls back to raw bytes
// when it does not parse.
func (f *Fingerprinter) resolveMode(contentType string, body []byte) (mode Mode, sniffed bool) {
	if f.mode != ModeAuto {
		return f.mode, false
	}
	if len(body) == 0 {
		return ModeRaw, false
	}
	mt := contentType
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	mt = strings.Trim(mt, " \t")
	switch {
	case strings.EqualFold(mt, "application/json"),
		len(mt) > len("+json") && strings.EqualFold(mt[len(mt)-len("+json"):], "+json"):
		return ModeJSON, false
	case strings.EqualFold(mt, "application/x-www-form-urlencoded"):
		return ModeForm, false
	case mt == "":
		if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
			return ModeJSON, true
		}
	}
	return ModeRaw, false
}

// resourceMagic starts the hash input of Resource.
const resourceMagic = "idemkit.resource.v1\x00"

// Resource returns an identity of the resource in acts on. It is the path
// and the query parameters f reads, as the current version reads them
// (every parameter unless Options.IgnoreQuery, or Options.Query's
// selection), however the query spells them. It depends on neither the
// body nor the fingerprint version, so every retry of one request shares
// it. Two requests the fingerprint tells apart by their path or query
// never share it.
// It reads a raw query in place, as Compute does.
func (f *Fingerprinter) Resource(in Input) string {
	st := getState()
	defer putState(st)
	e := &st.e
	e.out = append(e.out, resourceMagic...)
	e.str(in.Path)
	switch {
	case f.noQuery:
	case len(f.query) > 0:
		e.byte('Q')
		st.writeQuery(&in, f.query)
	default:
		e.byte('A')
		st.writeQuery(&in, nil)
	}
	return st.finish("r1:sha256:")
}
