package fingerprint

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// TestRFC8785Examples checks the examples of RFC 8785 (and a few more
// structures) in testdata/rfc8785: NAME.in.json canonicalizes to
// NAME.out.json (without its final newline).
func TestRFC8785Examples(t *testing.T) {
	ins, err := filepath.Glob("testdata/rfc8785/*.in.json")
	if err != nil || len(ins) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in.json")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(in, ".in.json") + ".out.json")
			if err != nil {
				t.Fatal(err)
			}
			want = bytes.TrimSuffix(want, []byte("\n"))
			got, err := canonical(src)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("canonical form\n got %s\nwant %s", got, want)
			}
			// The fingerprint of the input and of its canonical form agree.
			a := mustCompute(t, Input{Body: src}, Options{Mode: ModeJSON})
			b := mustCompute(t, Input{Body: want}, Options{Mode: ModeJSON})
			if a != b {
				t.Errorf("fingerprint of input %s != fingerprint of canonical form %s", a, b)
			}
		})
	}
}

// readPairs reads "left right" lines, skipping blank lines and # comments.
func readPairs(t *testing.T, name string) [][2]string {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pairs [][2]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		l, r, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("%s: bad line %q", name, line)
		}
		pairs = append(pairs, [2]string{l, r})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return pairs
}

// TestRFC8785Numbers runs the number table of RFC 8785 appendix B through
// the JSON path: each double is written as an exponent literal (so that it
// takes the float rule) and must come out in its ECMAScript form.
func TestRFC8785Numbers(t *testing.T) {
	for _, p := range readPairs(t, "testdata/rfc8785/appendix-b.txt") {
		bits, err := strconv.ParseUint(p[0], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		lit := strconv.FormatFloat(math.Float64frombits(bits), 'e', -1, 64)
		got, err := canonical([]byte("[" + lit + "]"))
		if err != nil {
			t.Errorf("%s (%s): %v", p[0], lit, err)
			continue
		}
		if want := "[" + p[1] + "]"; string(got) != want {
			t.Errorf("%s (%s): got %s, want %s", p[0], lit, got, want)
		}
	}
}

// TestNumberLiterals checks the number rule on literals, including the
// ECMAScript cases and integers beyond 2^53 (testdata/numbers.txt).
func TestNumberLiterals(t *testing.T) {
	for _, p := range readPairs(t, "testdata/numbers.txt") {
		got, err := canonical([]byte(p[0]))
		if p[1] == "error" {
			if err == nil || !errors.Is(err, ErrInvalidJSON) {
				t.Errorf("%s: got %q, %v; want ErrInvalidJSON", p[0], got, err)
			}
			continue
		}
		if err != nil || string(got) != p[1] {
			t.Errorf("%s: got %q, %v; want %s", p[0], got, err, p[1])
		}
	}
}

// TestCanonicalStrings checks string escaping: the minimal RFC 8785 form
// whatever escapes the input used.
func TestCanonicalStrings(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"\u0041\/\u00e9"`, `"A/é"`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`"\u001f\u0000\b\f\n\r\t"`, `"\u001f\u0000\b\f\n\r\t"`},
		{`"\u007f\u2028<>&"`, "\"\u007f\u2028<>&\""},
		{`"quote \" backslash \\"`, `"quote \" backslash \\"`},
		{`{"\u0061":1,"b\u0000":2,"b":3}`, `{"a":1,"b":3,"b\u0000":2}`},
	} {
		got, err := canonical([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: got %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

// TestCompareUTF16 checks the member order against a direct UTF-16
// comparison on strings mixing ASCII, BMP above the surrogates,
// supplementary characters and shared prefixes.
func TestCompareUTF16(t *testing.T) {
	alphabet := []rune{'a', 'b', 0x7f, 0x80, 0xff, 0x20ac, 0xd7ff, 0xe000, 0xfb33, 0xffff, 0x10000, 0x1f600, 0x10ffff}
	r := rand.New(rand.NewPCG(1, 2))
	gen := func() string {
		rs := make([]rune, r.IntN(4))
		for i := range rs {
			rs[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(rs)
	}
	sign := func(x int) int { return min(max(x, -1), 1) }
	for range 20000 {
		a, b := gen(), gen()
		want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if got := sign(compareUTF16([]byte(a), []byte(b))); got != want {
			t.Fatalf("compareUTF16(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
}

// TestDepthLimit checks the nesting limit at its boundary, for the
// default and for a configured value, for arrays and objects.
func TestDepthLimit(t *testing.T) {
	nest := func(open, close string, n int) []byte {
		return []byte(strings.Repeat(open, n) + "1" + strings.Repeat(close, n))
	}
	for _, tc := range []struct {
		max, depth int
		ok         bool
	}{
		{0, DefaultMaxDepth, true},
		{0, DefaultMaxDepth + 1, false},
		{3, 3, true},
		{3, 4, false},
		{MaxDepthLimit, MaxDepthLimit, true},
		{MaxDepthLimit, MaxDepthLimit + 1, false},
	} {
		for _, shape := range [][2]string{{"[", "]"}, {`{"k":`, "}"}} {
			body := nest(shape[0], shape[1], tc.depth)
			_, err := Compute(Input{Body: body}, Options{Mode: ModeJSON, MaxDepth: tc.max})
			if tc.ok && err != nil {
				t.Errorf("max %d depth %d %s: %v", tc.max, tc.depth, shape[0], err)
			}
			if !tc.ok && !errors.Is(err, ErrTooDeep) {
				t.Errorf("max %d depth %d %s: got %v, want ErrTooDeep", tc.max, tc.depth, shape[0], err)
			}
		}
	}
}

// TestWide checks a wide object and a long array, shuffled, against their
// sorted form.
func TestWide(t *testing.T) {
	const n = 20000
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	build := func(keys []string) []byte {
		var b bytes.Buffer
		b.WriteString(`{"list":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(i))
		}
		b.WriteString("]")
		for _, k := range keys {
			b.WriteString(`,"` + k + `":` + strconv.Quote(k))
		}
		b.WriteString("}")
		return b.Bytes()
	}
	sorted := build(keys)
	r := rand.New(rand.NewPCG(3, 4))
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	shuffled := build(keys)
	a := mustCompute(t, Input{Body: sorted}, Options{Mode: ModeJSON})
	b := mustCompute(t, Input{Body: shuffled}, Options{Mode: ModeJSON})
	if a != b {
		t.Fatal("shuffled wide object has a different fingerprint")
	}
}

// TestCompareNames checks the member order on names as written in JSON,
// each character escaped or not, against a UTF-16 comparison of their
// values; equal values compare equal however they are escaped.
func TestCompareNames(t *testing.T) {
	alphabet := []rune{'a', 'b', '"', '\\', '/', '\n', 0x01, 0x7f, 0x80, 0x20ac, 0xd7ff, 0xe000, 0xffff, 0x10000, 0x1f600, 0x10ffff}
	r := rand.New(rand.NewPCG(3, 4))
	gen := func() (string, []byte) {
		rs := make([]rune, r.IntN(5))
		var raw []byte
		for i := range rs {
			c := alphabet[r.IntN(len(alphabet))]
			rs[i] = c
			switch {
			case (c == '/' || c == '\n' || c == '"' || c == '\\') && r.IntN(2) == 0:
				raw = append(raw, '\\', map[rune]byte{'/': '/', '\n': 'n', '"': '"', '\\': '\\'}[c])
			case c == '"' || c == '\\' || c < 0x20 || r.IntN(2) == 0:
				for _, u := range utf16.Encode([]rune{c}) {
					raw = append(raw, `\u`+strconv.FormatInt(int64(u)|0x10000, 16)[1:]...)
				}
			default:
				raw = utf8.AppendRune(raw, c)
			}
		}
		return string(rs), raw
	}
	sign := func(x int) int { return min(max(x, -1), 1) }
	for range 20000 {
		a, ra := gen()
		b, rb := gen()
		want := slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		if got := sign(compareNames(ra, rb)); got != want {
			t.Fatalf("compareNames(%s, %s) = %d, want %d", ra, rb, got, want)
		}
	}
}
