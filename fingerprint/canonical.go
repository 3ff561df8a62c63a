package fingerprint

import (
	"bytes"
	"errors"
	"hash"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
)

// The JSON canonicalizer. Tokenizing, validation (UTF-8, escapes, surrogate
// pairs, duplicate names after unescaping) and the RFC 8785 string and
// float formatting are done by jsontext; this file only orders members,
// applies the integer rule and the Include/Exclude selection, and writes
// the result into the hash.
//
// The body is parsed once into a flat tree: scalars are stored already in
// canonical form in an arena, object members are sorted once per object
// (O(m log m)), and the tree is then walked once to emit. Nothing is copied
// per nesting level, so deep or wide documents cost O(n + m log m).

const (
	kindScalar uint8 = iota
	kindObject
	kindArray
)

type node struct {
	kind   uint8
	lo, hi int // scalar: arena span of its canonical text; container: members span
}

type member struct {
	nameLo, nameHi int // arena span of the unescaped member name; empty for array elements
	val            int // node index
}

// parser turns one JSON text into a tree. It is reused through statePool.
type parser struct {
	dec      jsontext.Decoder
	src      bytes.Buffer // lets the decoder read the body without copying it
	maxDepth int

	arena   []byte
	nodes   []node
	members []member
	stack   []member // members of the objects and arrays being parsed
	scratch []byte
	root    int
}

func (p *parser) reset() {
	p.arena = p.arena[:0]
	p.nodes = p.nodes[:0]
	p.members = p.members[:0]
	p.stack = p.stack[:0]
}

// release drops the reference to the caller's body.
func (p *parser) release() {
	p.src = bytes.Buffer{}
	p.dec.Reset(&p.src)
}

// parse parses body, which must hold exactly one JSON value.
func (p *parser) parse(body []byte, maxDepth int) error {
	p.reset()
	p.maxDepth = maxDepth
	p.src = *bytes.NewBuffer(body)
	p.dec.Reset(&p.src)
	root, err := p.value(1)
	if err != nil {
		return p.wrap(err)
	}
	if _, err := p.dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = errors.New("unexpected data after the top-level value")
		}
		return p.wrap(err)
	}
	p.root = root
	return nil
}

func (p *parser) wrap(err error) error {
	var be *bodyError
	if errors.As(err, &be) {
		return err
	}
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return &bodyError{kind: ErrInvalidJSON, cause: err, msg: err.Error()}
	}
	where := " (byte offset " + strconv.FormatInt(se.ByteOffset, 10) + ")"
	if se.JSONPointer != "" {
		where = " at " + string(se.JSONPointer) + where
	}
	if errors.Is(err, jsontext.ErrDuplicateName) {
		return &bodyError{kind: ErrDuplicateKey, also: ErrInvalidJSON, cause: err,
			msg: strconv.Quote(se.JSONPointer.LastToken()) + where}
	}
	return &bodyError{kind: ErrInvalidJSON, cause: err, msg: se.Err.Error() + where}
}

func (p *parser) value(depth int) (int, error) {
	switch k := p.dec.PeekKind(); k {
	case '{', '[':
		if depth > p.maxDepth {
			return 0, &bodyError{kind: ErrTooDeep, msg: "more than " + strconv.Itoa(p.maxDepth) +
				" nested objects or arrays at " + pointerText(p.dec.StackPointer())}
		}
		if _, err := p.dec.ReadToken(); err != nil {
			return 0, err
		}
		end := jsontext.Kind('}')
		if k == '[' {
			end = ']'
		}
		base := len(p.stack)
		sorted := true
		for p.dec.PeekKind() != end {
			var m member
			if k == '{' {
				raw, err := p.dec.ReadValue()
				if err != nil {
					return 0, err
				}
				m.nameLo = len(p.arena)
				p.arena = appendUnquoted(p.arena, raw)
				m.nameHi = len(p.arena)
				if sorted && len(p.stack) > base {
					prev := p.stack[len(p.stack)-1]
					sorted = compareUTF16(p.arena[prev.nameLo:prev.nameHi], p.arena[m.nameLo:m.nameHi]) < 0
				}
			}
			v, err := p.value(depth + 1)
			if err != nil {
				return 0, err
			}
			m.val = v
			p.stack = append(p.stack, m)
		}
		if _, err := p.dec.ReadToken(); err != nil {
			return 0, err
		}
		ms := p.stack[base:]
		if !sorted {
			arena := p.arena
			slices.SortFunc(ms, func(a, b member) int {
				return compareUTF16(arena[a.nameLo:a.nameHi], arena[b.nameLo:b.nameHi])
			})
		}
		lo := len(p.members)
		p.members = append(p.members, ms...)
		p.stack = p.stack[:base]
		kind := kindObject
		if k == '[' {
			kind = kindArray
		}
		p.nodes = append(p.nodes, node{kind: kind, lo: lo, hi: len(p.members)})
		return len(p.nodes) - 1, nil
	}
	raw, err := p.dec.ReadValue()
	if err != nil {
		return 0, err
	}
	lo := len(p.arena)
	switch raw[0] {
	case '"':
		p.arena = p.appendString(p.arena, raw)
	case 't', 'f', 'n':
		p.arena = append(p.arena, raw...)
	default:
		p.arena, err = appendNumber(p.arena, raw)
		if err != nil {
			return 0, &bodyError{kind: ErrInvalidJSON, msg: err.Error() + " at " +
				pointerText(p.dec.StackPointer())}
		}
	}
	p.nodes = append(p.nodes, node{kind: kindScalar, lo: lo, hi: len(p.arena)})
	return len(p.nodes) - 1, nil
}

func pointerText(p jsontext.Pointer) string {
	if p == "" {
		return "the top level"
	}
	return string(p)
}

// appendUnquoted appends the unescaped content of a valid JSON string.
func appendUnquoted(dst, raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 {
		return append(dst, raw[1:len(raw)-1]...)
	}
	dst, _ = jsontext.AppendUnquote(dst, raw) // raw was validated by the decoder
	return dst
}

// appendString appends the RFC 8785 form of a valid JSON string.
// A string without escapes is already canonical: the decoder guarantees
// valid UTF-8 and no raw control characters.
func (p *parser) appendString(dst, raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 {
		return append(dst, raw...)
	}
	p.scratch = appendUnquoted(p.scratch[:0], raw)
	dst, _ = jsontext.AppendQuote(dst, p.scratch)
	return dst
}

// appendNumber appends the canonical form of a valid JSON number literal.
//
// An integer literal (no fraction, no exponent) is kept as written: JSON
// forbids leading zeros and "+", so the digits are already the unique
// decimal form of the integer, and for magnitudes up to 2^53 they equal the
// RFC 8785 form. Only "-0" becomes "0". Integers beyond 2^53 thus keep
// every digit instead of being rounded to a float64.
//
// Any other literal is rounded to the nearest float64 and formatted per
// RFC 8785 section 3.2.2.3 (ECMAScript Number.prototype.toString), with -0
// as "0". A literal beyond the float64 range is an error, as RFC 8785 has no
// form for it.
func appendNumber(dst, lit []byte) ([]byte, error) {
	if isInteger(lit) {
		if len(lit) == 2 && lit[0] == '-' && lit[1] == '0' {
			return append(dst, '0'), nil
		}
		return append(dst, lit...), nil
	}
	// The string aliases lit only for the call; ParseFloat copies what it keeps.
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(lit), len(lit)), 64)
	if err != nil {
		return dst, errors.New("number " + strconv.Quote(string(lit)) + " is out of float64 range")
	}
	if f == 0 {
		return append(dst, '0'), nil
	}
	return jsontext.AppendFloat(dst, f, 64), nil
}

// isInteger reports whether a valid number literal has neither a fraction
// nor an exponent.
func isInteger(lit []byte) bool {
	for _, c := range lit {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// compareUTF16 compares two valid UTF-8 strings by their UTF-16 code units,
// the member order of RFC 8785 section 3.2.3.
func compareUTF16(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	if a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
		return int(a[i]) - int(b[i])
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i-- // back to the start of the rune that differs
	}
	ra, _ := utf8.DecodeRune(a[i:])
	rb, _ := utf8.DecodeRune(b[i:])
	// Code point order equals UTF-16 order except that supplementary
	// characters (surrogate pairs, D800-DBFF first) sort before U+E000-U+FFFF.
	sa, sb := ra >= 0x10000, rb >= 0x10000
	if sa != sb {
		other := rb
		if sb {
			other = ra
		}
		// The BMP rune is never a surrogate in valid UTF-8.
		if other >= 0xE000 {
			if sa {
				return -1
			}
			return 1
		}
	}
	return int(ra) - int(rb)
}

// emitter writes canonical text into a hash through a small buffer, or
// accumulates it when h is nil.
type emitter struct {
	out []byte
	h   hash.Hash
}

const flushAt = 4 << 10

func (e *emitter) flush() {
	if e.h != nil && len(e.out) > 0 {
		e.h.Write(e.out)
		e.out = e.out[:0]
	}
}

func (e *emitter) maybeFlush() {
	if e.h != nil && len(e.out) >= flushAt {
		e.h.Write(e.out)
		e.out = e.out[:0]
	}
}

func (e *emitter) byte(c byte) { e.out = append(e.out, c) }

func (e *emitter) uvarint(n int) { e.out = appendUvarint(e.out, uint64(n)) }

// str writes a length-prefixed string.
func (e *emitter) str(s string) {
	e.uvarint(len(s))
	e.out = append(e.out, s...)
	e.maybeFlush()
}

func (e *emitter) bytes(b []byte) {
	e.uvarint(len(b))
	if e.h != nil && len(b) >= flushAt {
		e.flush()
		e.h.Write(b)
		return
	}
	e.out = append(e.out, b...)
	e.maybeFlush()
}

func appendUvarint(b []byte, x uint64) []byte {
	for x >= 0x80 {
		b = append(b, byte(x)|0x80)
		x >>= 7
	}
	return append(b, byte(x))
}

// emit writes the canonical JSON text of node n, leaving out the members
// and elements that ex cuts.
func (p *parser) emit(e *emitter, n int, ex *trie) {
	nd := p.nodes[n]
	switch nd.kind {
	case kindScalar:
		e.out = append(e.out, p.arena[nd.lo:nd.hi]...)
	case kindObject:
		e.out = append(e.out, '{')
		first := true
		for _, m := range p.members[nd.lo:nd.hi] {
			name := p.arena[m.nameLo:m.nameHi]
			sub := ex.child(name)
			if sub != nil && sub.cut {
				continue
			}
			if !first {
				e.out = append(e.out, ',')
			}
			first = false
			e.out, _ = jsontext.AppendQuote(e.out, name)
			e.out = append(e.out, ':')
			p.emit(e, m.val, sub)
		}
		e.out = append(e.out, '}')
	case kindArray:
		e.out = append(e.out, '[')
		first := true
		var idx [20]byte
		for i, m := range p.members[nd.lo:nd.hi] {
			var sub *trie
			if ex != nil {
				sub = ex.child(strconv.AppendInt(idx[:0], int64(i), 10))
				if sub != nil && sub.cut {
					continue
				}
			}
			if !first {
				e.out = append(e.out, ',')
			}
			first = false
			p.emit(e, m.val, sub)
		}
		e.out = append(e.out, ']')
	}
	e.maybeFlush()
}

// lookup resolves a pointer from the root, advancing the Exclude trie
// alongside. It reports false when the pointer selects nothing: a missing
// member, an index out of range or not a valid index, a step into a scalar,
// or a path that Exclude removes.
func (p *parser) lookup(ptr pointer, ex *trie) (int, *trie, bool) {
	n := p.root
	for j, tok := range ptr.toks {
		if ex != nil {
			ex = ex.kids[tok]
			if ex != nil && ex.cut {
				return 0, nil, false
			}
		}
		nd := p.nodes[n]
		switch nd.kind {
		case kindObject:
			ms := p.members[nd.lo:nd.hi]
			i, found := slices.BinarySearchFunc(ms, ptr.btoks[j], func(m member, t []byte) int {
				return compareUTF16(p.arena[m.nameLo:m.nameHi], t)
			})
			if !found {
				return 0, nil, false
			}
			n = ms[i].val
		case kindArray:
			i, ok := arrayIndex(tok)
			if !ok || i >= nd.hi-nd.lo {
				return 0, nil, false
			}
			n = p.members[nd.lo+i].val
		default:
			return 0, nil, false
		}
	}
	return n, ex, true
}
