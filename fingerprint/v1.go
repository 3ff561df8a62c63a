package fingerprint

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// Version 1. Its output must never change: a change of any rule below
// (framing, number rule, mode choice, header trimming…) is a new version
// with its own function, and v1 stays as it is so that stored records can
// still be compared. golden_test.go pins v1 outputs. Since v2 it refuses
// more than it used to, never hashing anything differently: a request with
// a query string that the Options hash under v2 (ErrNotComparable), and
// integers beyond the float64 range.
//
// The SHA-256 input is a sequence of parts, each self-delimiting, so that
// the byte string can be split back into its parts and no two different
// requests produce the same input:
//
//	input   = "idemkit.fingerprint.v1" 0x00
//	          [ 'M' str(method) ]                      Options.Method
//	          [ 'P' str(path) ]                        Options.Path
//	          [ 'Q' uvarint(n) n*( str(name) list ) ]  Options.Query, sorted
//	          [ 'H' uvarint(n) n*( str(name) list ) ]  Options.Headers, lower case, sorted
//	          'B' body
//	list    = uvarint(k) k*str(value)
//	body    = 'r' str(bytes)                             raw
//	        | 'j' 'a' json                               JSON, whole
//	        | 'j' 's' uvarint(n) n*( str(ptr) sel-json ) JSON, Include
//	        | 'f' 'a' form                               form, whole
//	        | 'f' 's' uvarint(n) n*( str(ptr) sel-form ) form, Include
//	json    = canonical JSON text (valid UTF-8) 0xFF     0xFF never occurs in UTF-8
//	sel-json= 0x00 | 0x01 json                           absent | present
//	form    = uvarint(n) n*( str(name) list )            names sorted bytewise
//	sel-form= 0x00 | 0x01 ( list | form )                field | whole body ("")
//	str(s)  = uvarint(len(s)) s
const v1Magic = "idemkit.fingerprint.v1\x00"

func (f *Fingerprinter) v1(in *Input) (string, error) {
	if !f.noQuery && len(f.query) == 0 && hasQuery(in) {
		return "", fmt.Errorf("%w: v1 does not hash the query string", ErrNotComparable)
	}
	return f.sum(in, v1Magic, false, f.v1JSON, "v1:sha256:")
}

// sum returns the fingerprint of in under one version, given its magic,
// whether it hashes the whole query, its JSON rule and its prefix.
func (f *Fingerprinter) sum(in *Input, magic string, wholeQuery bool, json func(st *state, body []byte, sniffed bool) error, prefix string) (string, error) {
	st := getState()
	defer putState(st)
	st.e.out = append(st.e.out, magic...)
	f.writeRequest(st, in, wholeQuery)
	if err := f.writeBody(st, in, json); err != nil {
		return "", err
	}
	return st.finish(prefix), nil
}

// writeRequest writes the optional parts of the input before the body:
// method, path, query and headers, as the Options select them; the whole
// query ('A') when no parameters are selected, with wholeQuery (v2 on,
// unless IgnoreQuery).
func (f *Fingerprinter) writeRequest(st *state, in *Input, wholeQuery bool) {
	e := &st.e
	if f.method {
		e.byte('M')
		e.str(in.Method)
	}
	if f.path {
		e.byte('P')
		e.str(in.Path)
	}
	switch {
	case wholeQuery && f.noQuery:
	case len(f.query) > 0:
		e.byte('Q')
		st.writeQuery(in, f.query)
	case wholeQuery:
		e.byte('A')
		st.writeQuery(in, nil)
	}
	if len(f.headers) > 0 {
		e.byte('H')
		e.uvarint(len(f.headers))
		for _, name := range f.headers {
			e.str(name)
			writeHeaderValues(e, in.Header, name)
		}
	}
}

// v1JSON writes a JSON body under v1: 'j' and its JSON, or, when the body
// was only sniffed as JSON and is not valid JSON, 'r' and its bytes.
func (f *Fingerprinter) v1JSON(st *state, body []byte, sniffed bool) error {
	e := &st.e
	err := st.p.validate(body, f.maxDepth)
	if err == nil && sniffed {
		err = st.p.checkNames()
	}
	if err != nil {
		if !sniffed {
			return err
		}
		e.byte('r')
		e.bytes(body)
		return nil
	}
	e.byte('j')
	return f.writeJSON(st)
}

// finish flushes the emitter and returns prefix ("vN:sha256:") followed
// by the hex digest.
func (st *state) finish(prefix string) string {
	st.e.flush()
	sum := st.h.Sum(st.sum[:0])
	var out [len("vN:sha256:") + 2*len(st.sum)]byte
	n := copy(out[:], prefix)
	hex.Encode(out[n:], sum)
	return string(out[:])
}

// writeSelected writes the values of the named query parameters, names
// sorted: uvarint(n) n*( str(name) list ).
func writeSelected(e *emitter, names []string, q map[string][]string) {
	e.uvarint(len(names))
	for _, name := range names {
		e.str(name)
		writeList(e, q[name])
	}
}

// writeJSON writes a validated JSON body: 'a' json, or with Include
// 's' uvarint(n) n*( str(ptr) sel-json ). Both versions share it.
func (f *Fingerprinter) writeJSON(st *state) error {
	e, p := &st.e, &st.p
	if len(f.include) == 0 {
		e.byte('a')
		if err := p.emitAll(e, f.exclude); err != nil {
			return err
		}
		e.byte(0xFF)
		return nil
	}
	if err := p.checkNames(); err != nil {
		return err
	}
	e.byte('s')
	e.uvarint(len(f.include))
	for _, ptr := range f.include {
		e.str(ptr.text)
		at, ex, ok := p.lookup(ptr, f.exclude)
		if !ok {
			e.byte(0)
			continue
		}
		e.byte(1)
		if _, err := p.value(e, at, ex, true); err != nil {
			return toBodyError(err)
		}
		e.byte(0xFF)
	}
	return nil
}

// writeFormBody writes a form body: 'f' and, without Include, 'a' form;
// with Include, 's' uvarint(n) n*( str(ptr) sel-form ). A form is read as
// an object whose members are the field names and whose values are the
// lists of values, so the pointer "/name" denotes field name; longer
// pointers select nothing. Both versions share it.
func (f *Fingerprinter) writeFormBody(st *state, body []byte) error {
	pairs, err := formPairs(body, st.pairs)
	if err != nil {
		return err
	}
	st.pairs = pairs
	fm := form{body: body, pairs: pairs, cuts: f.formCuts}
	e := &st.e
	e.byte('f')
	if len(f.include) == 0 {
		e.byte('a')
		fm.writeAll(e)
		return nil
	}
	e.byte('s')
	e.uvarint(len(f.include))
	for _, ptr := range f.include {
		e.str(ptr.text)
		switch len(ptr.toks) {
		case 0:
			e.byte(1)
			fm.writeAll(e)
		case 1:
			k, j, ok := fm.field(ptr.toks[0])
			if !ok {
				e.byte(0)
				continue
			}
			e.byte(1)
			fm.writeList(e, k, j)
		default:
			e.byte(0)
		}
	}
	return nil
}

func writeList(e *emitter, vals []string) {
	e.uvarint(len(vals))
	for _, v := range vals {
		e.str(v)
	}
}

// writeHeaderValues writes the values of the header lname (lower case).
// All keys of h equal to lname ignoring case contribute, in the byte order
// of the keys, each key's values in order.
func writeHeaderValues(e *emitter, h map[string][]string, lname string) {
	var match string
	matches := 0
	for k := range h {
		if strings.EqualFold(k, lname) {
			match = k
			matches++
		}
	}
	switch matches {
	case 0:
		e.uvarint(0)
		return
	case 1:
		writeTrimmed(e, h[match])
		return
	}
	keys := make([]string, 0, matches)
	for k := range h {
		if strings.EqualFold(k, lname) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	n := 0
	for _, k := range keys {
		n += len(h[k])
	}
	e.uvarint(n)
	for _, k := range keys {
		for _, v := range h[k] {
			e.str(strings.Trim(v, " \t"))
		}
	}
}

func writeTrimmed(e *emitter, vals []string) {
	e.uvarint(len(vals))
	for _, v := range vals {
		e.str(strings.Trim(v, " \t"))
	}
}
