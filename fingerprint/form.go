package fingerprint

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/url"
	"slices"
)

// Form bodies (application/x-www-form-urlencoded) are read as
// url.ParseQuery reads them, and hashed exactly as the url.Values it
// returns (fields sorted by name, the values of a repeated field in
// order), but without building the map: the only memory is one 4-byte
// offset per field, allocated once at its final size.
//
// A field is a non-empty run between "&" separators, split at its first
// "=" into name and value (no "=": an empty value); "+" is a space and
// "%XX" a byte. A field containing ";" or a malformed escape makes the
// body invalid, as it makes url.ParseQuery fail. Unlike url.ParseQuery
// there is no limit on the number of fields: memory stays bounded by the
// body, and the result does not depend on the Go release or GODEBUG.

var errFormSemicolon = errors.New("invalid semicolon separator in form field")

// formPairs validates a form body and returns the start offsets of its
// fields, in buf, sorted by decoded name and then by position.
func formPairs(body []byte, buf []uint32) ([]uint32, error) {
	if len(body) > maxBody {
		return nil, &bodyError{kind: ErrInvalidForm, msg: "body larger than 4 GiB"}
	}
	n := 0
	for i := 0; i < len(body); {
		end := fieldEnd(body, i)
		if end > i {
			if err := checkField(body[i:end]); err != nil {
				return nil, err
			}
			n++
		}
		i = end + 1
	}
	if cap(buf) < n {
		buf = make([]uint32, 0, n)
	}
	pairs := buf[:0]
	for i := 0; i < len(body); {
		end := fieldEnd(body, i)
		if end > i {
			pairs = append(pairs, uint32(i))
		}
		i = end + 1
	}
	slices.SortFunc(pairs, func(x, y uint32) int {
		if c := compareFormText(formName(body, x), formName(body, y)); c != 0 {
			return c
		}
		return int(x) - int(y) // offsets are unique: the sort is stable
	})
	return pairs, nil
}

// fieldEnd returns the offset of the "&" that ends the field starting at
// body[i], or len(body).
func fieldEnd(body []byte, i int) int {
	if j := bytes.IndexByte(body[i:], '&'); j >= 0 {
		return i + j
	}
	return len(body)
}

// checkField reports a field that url.ParseQuery refuses: one containing
// ";", or whose name or value holds a malformed escape.
func checkField(f []byte) error {
	if bytes.IndexByte(f, ';') >= 0 {
		return &bodyError{kind: ErrInvalidForm, cause: errFormSemicolon, msg: errFormSemicolon.Error()}
	}
	name, value, _ := bytes.Cut(f, []byte{'='})
	for _, s := range [2][]byte{name, value} {
		for i := bytes.IndexByte(s, '%'); i >= 0; {
			if _, ok := unescape(s, i); !ok {
				esc := s[i:min(i+3, len(s))]
				err := url.EscapeError(esc)
				return &bodyError{kind: ErrInvalidForm, cause: err, msg: err.Error()}
			}
			j := bytes.IndexByte(s[i+3:], '%')
			if j < 0 {
				break
			}
			i += 3 + j
		}
	}
	return nil
}

// formName returns the encoded name of the field at off. It does not
// scan the value: sorting compares names only.
func formName(body []byte, off uint32) []byte {
	for i := int(off); i < len(body); i++ {
		if body[i] == '=' || body[i] == '&' {
			return body[off:i]
		}
	}
	return body[off:]
}

// formValue returns the encoded value of the field at off.
func formValue(body []byte, off uint32) []byte {
	f := body[off:fieldEnd(body, int(off))]
	if i := bytes.IndexByte(f, '='); i >= 0 {
		return f[i+1:]
	}
	return nil
}

// unescape returns the byte of the percent escape at s[i] ("%" and two
// hex digits), and false when s holds none there.
func unescape(s []byte, i int) (byte, bool) {
	var b [1]byte
	if i+2 >= len(s) {
		return 0, false
	}
	_, err := hex.Decode(b[:], s[i+1:i+3])
	return b[0], err == nil
}

// nextFormByte decodes the byte at s[0] of a validated name or value and
// returns it with the number of encoded bytes it takes.
func nextFormByte(s []byte) (byte, int) {
	switch s[0] {
	case '%':
		c, _ := unescape(s, 0)
		return c, 3
	case '+':
		return ' ', 1
	}
	return s[0], 1
}

// compareFormText compares two validated names or values bytewise after
// decoding.
func compareFormText(a, b []byte) int {
	i, n := 0, min(len(a), len(b))
	for i < n && a[i] == b[i] && a[i] != '%' && a[i] != '+' {
		i++ // an equal plain prefix decodes to itself
	}
	a, b = a[i:], b[i:]
	for len(a) > 0 && len(b) > 0 {
		ca, na := nextFormByte(a)
		cb, nb := nextFormByte(b)
		if ca != cb {
			return int(ca) - int(cb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// compareFormDecoded compares the validated name or value s, decoded,
// with the text t bytewise.
func compareFormDecoded(s []byte, t string) int {
	for len(s) > 0 && len(t) > 0 {
		c, n := nextFormByte(s)
		if c != t[0] {
			return int(c) - int(t[0])
		}
		s, t = s[n:], t[1:]
	}
	return len(s) - len(t)
}

// formText writes a validated name or value decoded, length-prefixed: the
// str(s) of the decoded text.
func (e *emitter) formText(s []byte) {
	e.uvarint(len(s) - 2*bytes.Count(s, []byte{'%'}))
	for len(s) > 0 {
		i := bytes.IndexAny(s, "%+")
		if i < 0 {
			e.raw(s)
			return
		}
		e.raw(s[:i])
		c, n := nextFormByte(s[i:])
		e.byte(c)
		s = s[i+n:]
	}
	e.maybeFlush()
}

// form is a validated form body with its fields sorted by name.
type form struct {
	body  []byte
	pairs []uint32
	cuts  map[string]bool // names left out (Exclude)
}

// cut reports whether the field name (encoded) is left out.
func (fm *form) cut(name []byte) bool {
	if len(fm.cuts) == 0 {
		return false
	}
	if !bytes.ContainsAny(name, "%+") {
		return fm.cuts[string(name)]
	}
	for c := range fm.cuts {
		if compareFormDecoded(name, c) == 0 {
			return true
		}
	}
	return false
}

// group returns the end of the run of fields from k on that share the
// name of field k.
func (fm *form) group(k int) int {
	name := formName(fm.body, fm.pairs[k])
	j := k + 1
	for j < len(fm.pairs) && compareFormText(name, formName(fm.body, fm.pairs[j])) == 0 {
		j++
	}
	return j
}

// writeAll writes the whole form: uvarint(n) n*( str(name) list ), names
// sorted bytewise, as writeForm writes the url.Values of the same body.
func (fm *form) writeAll(e *emitter) {
	n := 0
	for k := 0; k < len(fm.pairs); {
		j := fm.group(k)
		if !fm.cut(formName(fm.body, fm.pairs[k])) {
			n++
		}
		k = j
	}
	e.uvarint(n)
	for k := 0; k < len(fm.pairs); {
		j := fm.group(k)
		if name := formName(fm.body, fm.pairs[k]); !fm.cut(name) {
			e.formText(name)
			fm.writeList(e, k, j)
		}
		k = j
	}
}

// writeList writes the values of fields k to j-1: uvarint(n) n*str(value).
func (fm *form) writeList(e *emitter, k, j int) {
	e.uvarint(j - k)
	for ; k < j; k++ {
		e.formText(formValue(fm.body, fm.pairs[k]))
	}
}

// field returns the run of fields named name, or false when there is none
// or the name is left out.
func (fm *form) field(name string) (int, int, bool) {
	if fm.cuts[name] {
		return 0, 0, false
	}
	k, found := slices.BinarySearchFunc(fm.pairs, name, func(off uint32, t string) int {
		return compareFormDecoded(formName(fm.body, off), t)
	})
	if !found {
		return 0, 0, false
	}
	return k, fm.group(k), true
}
