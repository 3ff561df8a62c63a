package fingerprint

import (
	"bytes"
	"errors"
	"hash"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
)

// The JSON canonicalizer works in two passes over the body and keeps no
// tree, so its memory does not grow with the number of values:
//
//  1. validate: jsontext's decoder checks the syntax, UTF-8, escapes,
//     surrogate pairs (a lone one is an error) and the nesting depth, and
//     every number is checked to fit a float64. Nothing is kept.
//  2. walk: the validated body is read again and its canonical text is
//     written into the hash as it goes. Scalars and arrays stream. For an
//     object, the walker first collects the offsets of its member names
//     (4 bytes per member), sorts them by name in UTF-16 code units, which
//     also brings duplicate names together (an error), and then walks each
//     member's value from its offset.
//
// Memory is 4 bytes per member of the objects being walked (one object and
// its ancestors at a time), allocated once at the size validation counted,
// plus a 4 KiB output buffer; nothing is allocated per scalar, array or
// string. Time is linear in the body for each level of
// object nesting: collecting an object's members skips over its values once,
// so a byte is read once more for each object that encloses it (at most
// MaxDepth).

// maxBody is the largest JSON body the walker's 32-bit offsets address.
const maxBody = math.MaxUint32

// parser canonicalizes one JSON text. It is reused through statePool.
type parser struct {
	dec  jsontext.Decoder
	src  bytes.Buffer // lets the decoder read the body without copying it
	body []byte

	stack  []uint32 // member names of the objects being walked (see entry)
	packed bool     // the body is short enough for entries to hold name lengths
	key    []byte   // an unescaped member name, for Exclude and Include
	frames []frame  // the open objects and arrays, while validating
}

// frame is an open object or array during validation. It counts what the
// walk will hold for it: an object's members stay on the stack while its
// values are walked, so an object needs its member count plus the largest
// need of an object or array inside it.
type frame struct {
	obj      bool   // an object, not an array
	wantName bool   // an object's next string is a member name
	members  uint32 // members so far
	inner    uint32 // largest need of a value inside
}

// release drops the references to the caller's body.
func (p *parser) release() {
	p.body = nil
	p.src = bytes.Buffer{}
	p.dec.Reset(&p.src)
	p.stack = p.stack[:0]
}

// validate checks that body holds exactly one I-JSON value nested at most
// maxDepth deep, apart from duplicate member names, which the walk finds.
func (p *parser) validate(body []byte, maxDepth int) error {
	if len(body) > maxBody {
		return &bodyError{kind: ErrInvalidJSON, msg: "body larger than 4 GiB"}
	}
	p.body = body
	p.packed = len(body) < 1<<offsetBits
	p.stack = p.stack[:0]
	p.frames = p.frames[:0]
	p.src = *bytes.NewBuffer(body)
	p.dec.Reset(&p.src, jsontext.AllowDuplicateNames(true))
	need, err := p.topValue(maxDepth)
	if err != nil {
		return err
	}
	if _, err := p.dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = errors.New("unexpected data after the top-level value")
		}
		return p.wrap(err)
	}
	if cap(p.stack) < int(need) {
		p.stack = make([]uint32, 0, need) // the walk never grows it
	}
	return nil
}

// topValue reads the top-level value token by token, checking the nesting
// depth and the range of every number, and returns the stack entries the
// walk needs for it.
func (p *parser) topValue(maxDepth int) (uint32, error) {
	for {
		var done uint32 // the need of a value just completed
		switch k := p.dec.PeekKind(); k {
		case '{', '[':
			if err := p.open(k, maxDepth); err != nil {
				return 0, err
			}
			continue
		case '}', ']', 0:
			if _, err := p.dec.ReadToken(); err != nil {
				return 0, p.wrap(err)
			}
			f := p.frames[len(p.frames)-1]
			p.frames = p.frames[:len(p.frames)-1]
			done = f.members + f.inner
		default:
			name, err := p.scalar(k)
			if err != nil {
				return 0, err
			}
			if name {
				continue
			}
		}
		n := len(p.frames)
		if n == 0 {
			return done, nil
		}
		f := &p.frames[n-1]
		f.inner = max(f.inner, done)
		f.wantName = f.obj
	}
}

// open reads the start of an object or array (kind k) and pushes its frame,
// refusing one nested more than maxDepth deep.
func (p *parser) open(k jsontext.Kind, maxDepth int) error {
	if p.dec.StackDepth() >= maxDepth {
		return &bodyError{kind: ErrTooDeep, msg: "more than " + strconv.Itoa(maxDepth) +
			" nested objects or arrays at " + pointerText(p.dec.StackPointer())}
	}
	if _, err := p.dec.ReadToken(); err != nil {
		return p.wrap(err)
	}
	p.frames = append(p.frames, frame{obj: k == '{', wantName: k == '{'})
	return nil
}

// scalar reads a string, number or literal of kind k. It reports whether
// it was a member name, which it counts, and refuses a number beyond the
// float64 range.
func (p *parser) scalar(k jsontext.Kind) (bool, error) {
	raw, err := p.dec.ReadValue()
	if err != nil {
		return false, p.wrap(err)
	}
	if n := len(p.frames); n > 0 && p.frames[n-1].wantName {
		p.frames[n-1].wantName = false
		p.frames[n-1].members++
		return true, nil
	}
	if k == '0' && !inFloat64Range(raw) {
		return false, &bodyError{kind: ErrInvalidJSON, msg: "number " + quoteFragment(raw) +
			" is out of float64 range at " + pointerText(p.dec.StackPointer())}
	}
	return false, nil
}

func (p *parser) wrap(err error) error {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return &bodyError{kind: ErrInvalidJSON, cause: err, msg: err.Error()}
	}
	where := " (byte offset " + strconv.FormatInt(se.ByteOffset, 10) + ")"
	if se.JSONPointer != "" {
		where = " at " + string(se.JSONPointer) + where
	}
	return &bodyError{kind: ErrInvalidJSON, cause: err, msg: se.Err.Error() + where}
}

func pointerText(p jsontext.Pointer) string {
	if p == "" {
		return "the top level"
	}
	return string(p)
}

// quoteFragment quotes a literal for an error message, shortened to at
// most 40 bytes.
func quoteFragment(b []byte) string {
	if len(b) > 40 {
		return strconv.Quote(string(b[:20])+"…"+string(b[len(b)-10:])) + " (" + strconv.Itoa(len(b)) + " bytes)"
	}
	return strconv.Quote(string(b))
}

// inFloat64Range reports whether a valid number literal, integer or not,
// is within the float64 range (its magnitude rounds to at most
// math.MaxFloat64; a value that rounds to zero is in range). RFC 8785 has
// no form for a number beyond it.
func inFloat64Range(lit []byte) bool {
	i := 0
	if lit[0] == '-' {
		i++
	}
	digits := 0
	for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
		i++
		digits++
	}
	for i < len(lit) && lit[i] != 'e' && lit[i] != 'E' {
		i++
	}
	exp := 0
	if i < len(lit) {
		i++
		neg := lit[i] == '-'
		if lit[i] == '-' || lit[i] == '+' {
			i++
		}
		for ; i < len(lit); i++ {
			if exp < 1e6 {
				exp = exp*10 + int(lit[i]-'0')
			}
		}
		if neg {
			exp = -exp
		}
	}
	if digits+exp <= 308 {
		return true // below 10^308
	}
	_, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(lit), len(lit)), 64)
	return err == nil
}

// dupError is a duplicate member name found by the walk; the walk adds the
// reference tokens of the enclosing values on its way up.
type dupError struct {
	name string // unescaped
	off  int    // byte offset of the later of the two names
	path []string
}

func (e *dupError) Error() string { return "duplicate member name " + strconv.Quote(e.name) }

// toBodyError converts an error of the walk to a body error.
func toBodyError(err error) error {
	if err == nil {
		return nil
	}
	var de *dupError
	if !errors.As(err, &de) {
		return err
	}
	var b strings.Builder
	for i := len(de.path) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(escapeToken(de.path[i]))
	}
	b.WriteByte('/')
	b.WriteString(escapeToken(de.name))
	return &bodyError{kind: ErrDuplicateKey, also: ErrInvalidJSON,
		msg: strconv.Quote(de.name) + " at " + b.String() + " (byte offset " + strconv.Itoa(de.off) + ")"}
}

func escapeToken(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func under(err error, tok string) error {
	if de, ok := err.(*dupError); ok {
		de.path = append(de.path, tok)
	}
	return err
}

// The walk. It reads only bodies that validate accepted, so it does not
// check the syntax again.

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the offset after the string that starts at b[i] == '"'.
// Short strings (member names) are scanned byte by byte; past 32 bytes it
// searches for quotes and checks the backslashes before each.
func stringEnd(b []byte, i int) int {
	i++
	for n := min(len(b), i+32); i < n; i++ {
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			i++ // the escaped byte; \uXXXX continues with hex digits
		}
	}
	for i < len(b) {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b) // not reached on a validated body
		}
		i += j
		k := i
		for b[k-1] == '\\' {
			k--
		}
		i++
		if (i-1-k)%2 == 0 {
			return i
		}
	}
	return len(b)
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// structural marks the bytes skipValue stops at inside a container.
var structural = [256]byte{'"': 1, '{': 1, '[': 1, '}': 1, ']': 1}

// skipValue returns the offset after the value at or after b[i].
func skipValue(b []byte, i int) int {
	i = skipWS(b, i)
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			for structural[b[i]] == 0 {
				i++ // a validated container ends with a structural byte
			}
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			default: // '}', ']'
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	case 't', 'n':
		return i + 4
	case 'f':
		return i + 5
	}
	for i < len(b) && isNumberByte(b[i]) {
		i++
	}
	return i
}

// A stack entry locates a member name: the offset of its opening quote,
// and, in a body shorter than 16 MiB, the name's length plus one in the top
// 8 bits (255: longer, scan for its end), so that sorting does not scan.
const offsetBits = 24

func (p *parser) entry(off, nameEnd int) uint32 {
	if !p.packed {
		return uint32(off)
	}
	return uint32(off) | uint32(min(nameEnd-off-1, 255))<<offsetBits
}

func (p *parser) offset(e uint32) int {
	if !p.packed {
		return int(e)
	}
	return int(e & (1<<offsetBits - 1))
}

// name returns the content (between the quotes) of the member name of e.
func (p *parser) name(e uint32) []byte {
	off := p.offset(e)
	if l := int(e >> offsetBits); p.packed && l < 255 {
		return p.body[off+1 : off+l]
	}
	return p.body[off+1 : stringEnd(p.body, off)-1]
}

// value writes the canonical text of the value at or after offset i when
// emit is set, leaving out what ex cuts, and returns the offset after it.
// With emit unset it only looks for duplicate member names.
func (p *parser) value(e *emitter, i int, ex *trie, emit bool) (int, error) {
	b := p.body
	i = skipWS(b, i)
	switch b[i] {
	case '"':
		end := stringEnd(b, i)
		if emit {
			e.quoted(b[i+1 : end-1])
		}
		return end, nil
	case '{':
		return p.object(e, i, ex, emit)
	case '[':
		return p.array(e, i, ex, emit)
	case 't', 'n':
		if emit {
			e.raw(b[i : i+4])
		}
		return i + 4, nil
	case 'f':
		if emit {
			e.raw(b[i : i+5])
		}
		return i + 5, nil
	}
	j := i
	for j < len(b) && isNumberByte(b[j]) {
		j++
	}
	if emit {
		var err error
		if e.out, err = appendNumber(e.out, b[i:j]); err != nil {
			return 0, &bodyError{kind: ErrInvalidJSON, msg: err.Error()}
		}
		e.maybeFlush()
	}
	return j, nil
}

func (p *parser) object(e *emitter, i int, ex *trie, emit bool) (int, error) {
	base := len(p.stack)
	end := p.pushMembers(i)
	if err := p.sortMembers(base); err != nil {
		return 0, err
	}
	if emit {
		e.byte('{')
	}
	if err := p.walkMembers(e, base, ex, emit); err != nil {
		return 0, err
	}
	p.stack = p.stack[:base]
	if emit {
		e.byte('}')
		e.maybeFlush()
	}
	return end, nil
}

// pushMembers pushes a stack entry for each member name of the object that
// starts at p.body[i] and returns the offset after the object.
func (p *parser) pushMembers(i int) int {
	b := p.body
	j := skipWS(b, i+1)
	for b[j] != '}' {
		nameEnd := stringEnd(b, j)
		p.stack = append(p.stack, p.entry(j, nameEnd)) // validate sized it
		j = skipWS(b, nameEnd)                         // at ':'
		j = skipWS(b, skipValue(b, j+1))
		if b[j] == ',' {
			j = skipWS(b, j+1)
		}
	}
	return j + 1
}

// sortMembers sorts the stack entries from base on by name, in UTF-16 code
// units, and returns a *dupError for a name that occurs twice.
func (p *parser) sortMembers(base int) error {
	ms := p.stack[base:]
	n := len(ms)
	sorted := true
	for k := 1; k < n && sorted; k++ {
		sorted = compareNames(p.name(ms[k-1]), p.name(ms[k])) < 0
	}
	if sorted { // strictly increasing names are also free of duplicates
		return nil
	}
	slices.SortFunc(ms, func(x, y uint32) int { return compareNames(p.name(x), p.name(y)) })
	for k := 1; k < n; k++ {
		if compareNames(p.name(ms[k-1]), p.name(ms[k])) == 0 {
			return &dupError{name: string(p.unescape(p.name(ms[k]))),
				off: max(p.offset(ms[k-1]), p.offset(ms[k]))}
		}
	}
	return nil
}

// walkMembers walks the values of the sorted members on the stack from base on,
// writing each member that ex does not cut when emit is set.
func (p *parser) walkMembers(e *emitter, base int, ex *trie, emit bool) error {
	b := p.body
	n := len(p.stack) - base
	first := true
	for k := 0; k < n; k++ {
		en := p.stack[base+k] // p.stack may move as nested objects push
		name := p.name(en)
		nameEnd := p.offset(en) + len(name) + 2
		var sub *trie
		if ex != nil {
			sub = ex.child(p.unescape(name))
		}
		cut := sub != nil && sub.cut
		if emit && !cut {
			if !first {
				e.byte(',')
			}
			first = false
			e.quoted(name)
			e.byte(':')
		}
		if _, err := p.value(e, skipWS(b, nameEnd)+1, sub, emit && !cut); err != nil {
			return under(err, string(p.unescape(name)))
		}
	}
	return nil
}

func (p *parser) array(e *emitter, i int, ex *trie, emit bool) (int, error) {
	b := p.body
	if emit {
		e.byte('[')
	}
	j := skipWS(b, i+1)
	first := true
	var idx [20]byte
	for k := 0; b[j] != ']'; k++ {
		var sub *trie
		if ex != nil {
			sub = ex.child(strconv.AppendInt(idx[:0], int64(k), 10))
		}
		cut := sub != nil && sub.cut
		if emit && !cut {
			if !first {
				e.byte(',')
			}
			first = false
		}
		end, err := p.value(e, j, sub, emit && !cut)
		if err != nil {
			return 0, under(err, strconv.Itoa(k))
		}
		j = skipWS(b, end)
		if b[j] == ',' {
			j++
		}
		j = skipWS(b, j)
	}
	if emit {
		e.byte(']')
		e.maybeFlush()
	}
	return j + 1, nil
}

// emitAll writes the canonical text of the whole validated body.
func (p *parser) emitAll(e *emitter, ex *trie) error {
	_, err := p.value(e, 0, ex, true)
	return toBodyError(err)
}

// checkNames walks the whole validated body for duplicate member names
// without writing anything.
func (p *parser) checkNames() error {
	_, err := p.value(nil, 0, nil, false)
	return toBodyError(err)
}

// lookup resolves a pointer from the root, advancing the Exclude trie
// alongside, and returns the offset of the value. It reports false when the
// pointer selects nothing: a missing member, an index out of range or not a
// valid index, a step into a scalar, or a path that Exclude removes. The
// body must have passed checkNames, so a name matches at most one member.
func (p *parser) lookup(ptr pointer, ex *trie) (int, *trie, bool) {
	b := p.body
	i := skipWS(b, 0)
	for j, tok := range ptr.toks {
		if ex != nil {
			ex = ex.kids[tok]
			if ex != nil && ex.cut {
				return 0, nil, false
			}
		}
		var ok bool
		switch b[i] {
		case '{':
			i, ok = p.memberValue(i, ptr.btoks[j])
		case '[':
			i, ok = p.element(i, tok)
		}
		if !ok {
			return 0, nil, false
		}
	}
	return i, ex, true
}

// memberValue returns the offset of the value of the member named name in
// the object that starts at p.body[i], or false when it has none.
func (p *parser) memberValue(i int, name []byte) (int, bool) {
	b := p.body
	k := skipWS(b, i+1)
	for b[k] != '}' {
		nameEnd := stringEnd(b, k)
		v := skipWS(b, skipWS(b, nameEnd)+1)
		if bytes.Equal(p.unescape(b[k+1:nameEnd-1]), name) {
			return v, true
		}
		k = skipWS(b, skipValue(b, v))
		if b[k] == ',' {
			k = skipWS(b, k+1)
		}
	}
	return 0, false
}

// element returns the offset of the element that the reference token tok
// indexes in the array that starts at p.body[i], or false when tok is not
// a valid index or is out of range.
func (p *parser) element(i int, tok string) (int, bool) {
	b := p.body
	n, ok := arrayIndex(tok)
	if !ok {
		return 0, false
	}
	k := skipWS(b, i+1)
	for ; n > 0 && b[k] != ']'; n-- {
		k = skipWS(b, skipValue(b, k))
		if b[k] == ',' {
			k = skipWS(b, k+1)
		}
	}
	if b[k] == ']' {
		return 0, false
	}
	return k, true
}

// unescape returns the unescaped content of a string, in p.key unless it
// has no escapes.
func (p *parser) unescape(s []byte) []byte {
	if bytes.IndexByte(s, '\\') < 0 {
		return s
	}
	p.key = p.key[:0]
	for len(s) > 0 {
		r, n := nextRune(s)
		p.key = utf8.AppendRune(p.key, r)
		s = s[n:]
	}
	return p.key
}

// nextRune decodes the first character of the content of a valid JSON
// string, escaped or not, and returns it with the bytes it takes.
func nextRune(s []byte) (rune, int) {
	if s[0] != '\\' {
		if s[0] < utf8.RuneSelf {
			return rune(s[0]), 1
		}
		return utf8.DecodeRune(s)
	}
	switch s[1] {
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r := hex4(s[2:6])
		if utf16.IsSurrogate(r) && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if d := utf16.DecodeRune(r, hex4(s[8:12])); d != utf8.RuneError {
				return d, 12
			}
		}
		return r, 6
	}
	return rune(s[1]), 2 // \" \\ \/
}

func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// compareNames compares the contents of two valid JSON strings, escaped or
// not, by the UTF-16 code units of their values.
func compareNames(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] && a[i] != '\\' {
		i++
	}
	if i == n {
		// An unescaped prefix of the other: shorter first, also after
		// unescaping the rest.
		return len(a) - len(b)
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i-- // back to the start of the rune that differs
	}
	if a[i] != '\\' && b[i] != '\\' {
		if a[i] < utf8.RuneSelf && b[i] < utf8.RuneSelf {
			return int(a[i]) - int(b[i])
		}
		ra, _ := utf8.DecodeRune(a[i:])
		rb, _ := utf8.DecodeRune(b[i:])
		if ra != rb {
			return utf16Key(ra) - utf16Key(rb)
		}
	}
	a, b = a[i:], b[i:]
	for len(a) > 0 && len(b) > 0 {
		ra, na := nextRune(a)
		rb, nb := nextRune(b)
		if ra != rb {
			return utf16Key(ra) - utf16Key(rb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// utf16Key maps a code point to a number whose order is the order of the
// code point's UTF-16 encoding: supplementary characters (surrogate pairs,
// first unit D800-DBFF) sort after U+D7FF and before U+E000.
func utf16Key(r rune) int {
	switch {
	case r >= 0x10000:
		return 0xD800 + int(r-0x10000)
	case r >= 0xE000:
		return int(r) + 0x100000
	}
	return int(r)
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
// as "0". A literal beyond the float64 range, integer or not, is an error,
// as RFC 8785 has no form for it.
func appendNumber(dst, lit []byte) ([]byte, error) {
	if isInteger(lit) {
		if len(lit) > 300 && !inFloat64Range(lit) {
			return dst, errors.New("number " + quoteFragment(lit) + " is out of float64 range")
		}
		if len(lit) == 2 && lit[0] == '-' && lit[1] == '0' {
			return append(dst, '0'), nil
		}
		return append(dst, lit...), nil
	}
	// The string aliases lit only for the call; ParseFloat copies what it keeps.
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(lit), len(lit)), 64)
	if err != nil {
		return dst, errors.New("number " + quoteFragment(lit) + " is out of float64 range")
	}
	if f == 0 {
		return append(dst, '0'), nil
	}
	return appendES6(dst, f), nil
}

// appendES6 appends a finite, non-zero float64 as ECMAScript's
// Number.prototype.toString writes it (RFC 8785 section 3.2.2.3): the
// shortest decimal digits that round-trip, in plain notation for decimal
// exponents from -6 to 20 and in exponential notation ("1e+21", "1.5e-7")
// otherwise.
func appendES6(dst []byte, f float64) []byte {
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// strconv gives the shortest round-trip digits as d.ddde±XX.
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	mark := bytes.IndexByte(e, 'e')
	exp := 0
	for _, c := range e[mark+2:] { // after 'e' and its sign
		exp = exp*10 + int(c-'0')
	}
	if e[mark+1] == '-' {
		exp = -exp
	}
	digits := e[:mark]
	if len(digits) > 1 {
		// Drop the decimal point: "d.ddd" becomes "dddd".
		digits = append(digits[:1], digits[2:]...)
	}
	k := len(digits) // number of significant digits
	n := exp + 1     // position of the decimal point after the first digit
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
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
	return utf16Key(ra) - utf16Key(rb)
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
	e.raw(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// bytes writes length-prefixed bytes.
func (e *emitter) bytes(b []byte) {
	e.uvarint(len(b))
	e.raw(b)
}

// raw writes b; a long b goes to the hash without being copied.
func (e *emitter) raw(b []byte) {
	if e.h != nil && len(b) >= flushAt {
		e.flush()
		e.h.Write(b)
		return
	}
	e.out = append(e.out, b...)
	e.maybeFlush()
}

// quoted writes the RFC 8785 form of a string given by the content of a
// valid JSON string literal: "\"", "\\", \b, \f, \n, \r and \t escaped
// short, other control characters as \u00xx, everything else as UTF-8.
// An unescaped run of a valid literal is already in that form.
func (e *emitter) quoted(s []byte) {
	e.byte('"')
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			e.raw(s)
			break
		}
		e.raw(s[:i])
		r, n := nextRune(s[i:])
		s = s[i+n:]
		e.maybeFlush()
		switch r {
		case '"', '\\':
			e.out = append(e.out, '\\', byte(r))
		case '\b':
			e.out = append(e.out, '\\', 'b')
		case '\f':
			e.out = append(e.out, '\\', 'f')
		case '\n':
			e.out = append(e.out, '\\', 'n')
		case '\r':
			e.out = append(e.out, '\\', 'r')
		case '\t':
			e.out = append(e.out, '\\', 't')
		default:
			if r < 0x20 {
				const hex = "0123456789abcdef"
				e.out = append(e.out, '\\', 'u', '0', '0', hex[r>>4], hex[r&0xF])
			} else {
				e.out = utf8.AppendRune(e.out, r)
			}
		}
	}
	e.byte('"')
	e.maybeFlush()
}

func appendUvarint(b []byte, x uint64) []byte {
	for x >= 0x80 {
		b = append(b, byte(x)|0x80)
		x >>= 7
	}
	return append(b, byte(x))
}
