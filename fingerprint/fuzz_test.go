package fingerprint

import (
	"bytes"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// FuzzCanonical checks, for any input that is valid JSON:
//   - canonicalizing is idempotent;
//   - the canonical text agrees with jsontext's RFC 8785 canonicalization
//     with integers kept raw (the one documented difference being "-0");
//   - re-serializing the parsed input with shuffled members, other
//     whitespace, other string escapes and other float spellings gives the
//     same fingerprint;
//
// and, for any input, that no mode or selection panics.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[1.0,1e0,-0,1e21,1e-7,0.000001,333333333.33333329]}`,
		`{"amount":9007199254740993,"currency":"EUR"}`,
		`{"items":[{"sku":"A","qty":1},{"qty":2,"sku":"B"}],"meta":{"ts":"x"}}`,
		`{"\u20ac":1,"\r":2,"\ufb33":3,"1":4,"\ud83d\ude00":5,"\u0080":6,"\u00f6":7}`,
		`["\u0000\u001f\"\\\/", "é", 1E+2, -1.5e-3, true, false, null, {}, []]`,
		`{"a":1,"a":2}`,
		`[[[[[[[[]]]]]]]]`,
		`12345678901234567890123`,
		"a=1&b=2",
	} {
		f.Add([]byte(s))
	}
	if ins, _ := filepath.Glob("testdata/rfc8785/*.in.json"); len(ins) > 0 {
		for _, in := range ins {
			if b, err := os.ReadFile(in); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opts := range []Options{
			{},
			{Mode: ModeForm, Include: []string{"", "/a", "/a/0"}, Exclude: []string{"/b"}},
			{Mode: ModeJSON, Include: []string{"/a", "/0", ""}, Exclude: []string{"/b", "/a/0"}},
		} {
			fp, err := Compute(Input{Body: data}, opts)
			if (err == nil) != fpPattern.MatchString(fp) {
				t.Fatalf("Compute = %q, %v", fp, err)
			}
		}

		c1, err := canonical(data)
		if err != nil {
			return
		}
		c2, err := canonical(c1)
		if err != nil {
			t.Fatalf("canonical form %s does not parse: %v", c1, err)
		}
		if !bytes.Equal(c1, c2) {
			t.Fatalf("not idempotent:\n%s\n%s", c1, c2)
		}

		v := jsontext.Value(bytes.Clone(data))
		if err := v.Canonicalize(jsontext.CanonicalizeRawInts(false)); err != nil {
			t.Fatalf("jsontext rejects what we accept: %v", err)
		}
		if !bytes.Equal(v, c1) && !bytes.Contains(data, []byte("-0")) {
			t.Fatalf("canonical forms differ:\n ours     %s\n jsontext %s", c1, v)
		}

		tree, err := parseTree(data)
		if err != nil {
			t.Fatalf("test parser: %v", err)
		}
		h := fnv.New64a()
		h.Write(data)
		r := rand.New(rand.NewPCG(h.Sum64(), 1))
		want := mustCompute(t, Input{Body: data}, Options{Mode: ModeJSON})
		for range 3 {
			var b bytes.Buffer
			writeShuffled(&b, tree, r)
			got, err := Compute(Input{Body: b.Bytes()}, Options{Mode: ModeJSON})
			if err != nil || got != want {
				c3, _ := canonical(b.Bytes())
				t.Fatalf("re-serialized %s: %v\n canonical %s\n original  %s", b.Bytes(), err, c3, c1)
			}
		}
	})
}

// tnode is a JSON value kept close to its source: scalars raw, names raw.
type tnode struct {
	kind  jsontext.Kind // '{', '[' or the scalar's kind
	raw   []byte
	names [][]byte
	kids  []*tnode
}

func parseTree(data []byte) (*tnode, error) {
	d := jsontext.NewDecoder(bytes.NewReader(data))
	return readTree(d)
}

func readTree(d *jsontext.Decoder) (*tnode, error) {
	k := d.PeekKind()
	if k != '{' && k != '[' {
		raw, err := d.ReadValue()
		return &tnode{kind: k, raw: bytes.Clone(raw)}, err
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, err
	}
	n := &tnode{kind: k}
	for d.PeekKind() != '}' && d.PeekKind() != ']' {
		if k == '{' {
			name, err := d.ReadValue()
			if err != nil {
				return nil, err
			}
			n.names = append(n.names, bytes.Clone(name))
		}
		kid, err := readTree(d)
		if err != nil {
			return nil, err
		}
		n.kids = append(n.kids, kid)
	}
	_, err := d.ReadToken()
	return n, err
}

var spaces = []string{"", " ", "\n\t", "\r\n  "}

func writeShuffled(b *bytes.Buffer, n *tnode, r *rand.Rand) {
	b.WriteString(spaces[r.IntN(len(spaces))])
	switch n.kind {
	case '{', '[':
		b.WriteByte(byte(n.kind))
		order := r.Perm(len(n.kids))
		if n.kind == '[' {
			for i := range order {
				order[i] = i
			}
		}
		for i, j := range order {
			if i > 0 {
				b.WriteByte(',')
			}
			if n.kind == '{' {
				b.WriteString(spaces[r.IntN(len(spaces))])
				writeString(b, n.names[j], r)
				b.WriteString(spaces[r.IntN(len(spaces))])
				b.WriteByte(':')
			}
			writeShuffled(b, n.kids[j], r)
		}
		b.WriteString(spaces[r.IntN(len(spaces))])
		b.WriteByte(byte(n.kind) + 2) // '{'+2 == '}', '['+2 == ']'
	case '"':
		writeString(b, n.raw, r)
	case '0':
		writeNumber(b, n.raw, r)
	default:
		b.Write(n.raw)
	}
	b.WriteString(spaces[r.IntN(len(spaces))])
}

// writeString writes a JSON string with the same content, escaping a
// random choice of characters as \uXXXX.
func writeString(b *bytes.Buffer, raw []byte, r *rand.Rand) {
	s, err := jsontext.AppendUnquote(nil, raw)
	if err != nil {
		panic(err)
	}
	const hex = "0123456789ABCDEF"
	esc := func(u uint16) {
		b.WriteString(`\u`)
		b.WriteByte(hex[u>>12])
		b.WriteByte(hex[u>>8&0xf])
		b.WriteByte(hex[u>>4&0xf])
		b.WriteByte(hex[u&0xf])
	}
	b.WriteByte('"')
	for len(s) > 0 {
		c, size := utf8.DecodeRune(s)
		switch {
		case c < 0x20 || c == '"' || c == '\\' || r.IntN(4) == 0:
			if c >= 0x10000 {
				c -= 0x10000
				esc(uint16(0xD800 + c>>10))
				esc(uint16(0xDC00 + c&0x3ff))
			} else {
				esc(uint16(c))
			}
		default:
			b.Write(s[:size])
		}
		s = s[size:]
	}
	b.WriteByte('"')
}

// writeNumber keeps integer literals and respells other numbers as another
// literal for the same float64.
func writeNumber(b *bytes.Buffer, raw []byte, r *rand.Rand) {
	if !bytes.ContainsAny(raw, ".eE") {
		b.Write(raw)
		return
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		panic(err)
	}
	switch r.IntN(3) {
	case 0:
		b.Write(raw)
	case 1:
		b.WriteString(strconv.FormatFloat(f, 'e', -1, 64))
	default:
		b.WriteString(strconv.FormatFloat(f, 'E', 17, 64))
	}
}
