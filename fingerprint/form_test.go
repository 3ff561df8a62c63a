package fingerprint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// refForm is the fingerprint of a form body as url.ParseQuery reads it,
// built by hand from the grammar of v1.go and v2.go: the oracle for the
// form reader, which must hash every body exactly as the url.Values that
// url.ParseQuery returns for it (as fingerprints of form bodies always
// did). ok is false when url.ParseQuery refuses the body.
func refForm(version, body string, opts Options) (fp string, ok bool) {
	vals, err := url.ParseQuery(body)
	if err != nil {
		return "", false
	}
	for _, x := range opts.Exclude {
		p, err := parsePointer(x)
		if err != nil {
			panic(err)
		}
		if len(p.toks) == 1 {
			delete(vals, p.toks[0])
		}
	}
	var e emitter
	e.out = append(e.out, "idemkit.fingerprint."+version+"\x00"...)
	if version == "v2" {
		e.out = append(e.out, 'A', 0)
	}
	e.out = append(e.out, 'B', 'f')
	if len(opts.Include) == 0 {
		e.byte('a')
		refWriteForm(&e, vals)
	} else {
		f, err := New(opts)
		if err != nil {
			panic(err)
		}
		e.byte('s')
		e.uvarint(len(f.include))
		for _, ptr := range f.include {
			e.str(ptr.text)
			switch len(ptr.toks) {
			case 0:
				e.byte(1)
				refWriteForm(&e, vals)
			case 1:
				v, ok := vals[ptr.toks[0]]
				if !ok {
					e.byte(0)
					continue
				}
				e.byte(1)
				writeList(&e, v)
			default:
				e.byte(0)
			}
		}
	}
	sum := sha256.Sum256(e.out)
	return version + ":sha256:" + hex.EncodeToString(sum[:]), true
}

func refWriteForm(e *emitter, vals url.Values) {
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range vals {
			if !yield(k) {
				return
			}
		}
	})
	e.uvarint(len(names))
	for _, name := range names {
		e.str(name)
		writeList(e, vals[name])
	}
}

var formSeeds = []string{
	``, `a`, `a=`, `=`, `=1`, `&`, `&&a=1&&`, `a=1&b=2`, `b=2&a=1`, `a=1&a=2`, `a=2&a=1`,
	`a=1&%61=2&a=3`, `a+b=1&a%20b=2&a b=3`, `%2B=+&+=%2B`, `a=b=c`, `a==`, `a=%3D&%3D=a`,
	`%26=%26`, `x=%41%42%43&x=%c3%a9&x=%C3%A9`, `n=%00&n=%ff&n=%FF`, `a=1&a`, `aa=1&a=2&ab=3&a%00=4`,
	`a=%zz`, `a=%4`, `a=%`, `%=1`, `a%=1`, `a%4=1`, `a=1;b=2`, `a=1&;`, `a=%41;`,
	"a=\xff\xfe&\xc3\xa9=1", `~=1&%7E=2&a/b=3`, `ab=1&a=b1`, `a=b&a=b`, `a%2=1`, `%2B=1&%25=2&a%25=3&%3D=4&%26=5&+=6`,
}

var formOpts = []Options{
	{},
	{Exclude: []string{"/a", "/a b", "/a~1b"}},
	{Include: []string{"/a", "/b", "/a b", "/~0", "/a~1b", "", "/x/y", "/+", "/%", "/=", "/&"}},
	{Exclude: []string{"/+", "/%", "/a%", "/ "}, Include: []string{"/+", "/a b"}},
	{Include: []string{"/a", ""}, Exclude: []string{"/a", "/b"}},
}

// TestFormMatchesParseQuery: the form reader accepts exactly the bodies
// url.ParseQuery accepts and hashes each as before, in both versions.
func TestFormMatchesParseQuery(t *testing.T) {
	for _, body := range formSeeds {
		checkForm(t, body)
	}
}

// FuzzForm compares the form reader with url.ParseQuery on any body.
func FuzzForm(f *testing.F) { fuzzParseQuery(f, formSeeds, checkForm) }

// fuzzParseQuery fuzzes check from seeds, on the inputs of fewer than
// 10000 fields: url.ParseQuery's own limit, see TestFormManyFields.
func fuzzParseQuery(f *testing.F, seeds []string, check func(*testing.T, string)) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if strings.Count(in, "&") >= 10000 {
			return
		}
		check(t, in)
	})
}

func checkForm(t *testing.T, body string) {
	t.Helper()
	for _, opts := range formOpts {
		opts.Mode = ModeForm
		for _, v := range []string{"v1", "v2"} {
			want, ok := refForm(v, body, opts)
			got, err := ComputeVersion(v, Input{Body: []byte(body)}, opts)
			switch {
			case !ok && err == nil:
				t.Errorf("%s %q %+v: got %s, url.ParseQuery refuses it", v, body, opts, got)
			case !ok && !errors.Is(err, ErrInvalidForm):
				t.Errorf("%s %q: error %v does not match ErrInvalidForm", v, body, err)
			case ok && err != nil:
				t.Errorf("%s %q %+v: %v, url.ParseQuery accepts it", v, body, opts, err)
			case ok && got != want:
				t.Errorf("%s %q %+v:\n got %s\nwant %s", v, body, opts, got, want)
			}
		}
	}
}

// manyFields returns a form body of n fields with the given names, cycled.
func manyFields(n int, names ...string) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(names[i%len(names)])
		b.WriteString("=")
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}

// TestFormManyFields: a form body of more than the 10,000 fields that
// url.ParseQuery allows (by default, since Go 1.24.12 and 1.25.6) is
// fingerprinted, as url.ParseQuery reads it without the limit, and its
// fields still count.
func TestFormManyFields(t *testing.T) {
	body := manyFields(20000, "b", "a", "c%20d")
	if _, err := url.ParseQuery(body); err == nil {
		t.Log("url.ParseQuery has no field limit in this Go release")
	}
	got, err := Compute(formIn(body), Options{})
	if err != nil {
		t.Fatalf("20,000 fields: %v", err)
	}
	changed, err := Compute(formIn(strings.Replace(body, "=19999", "=x", 1)), Options{})
	if err != nil || got == changed {
		t.Errorf("the last of 20,000 fields does not count")
	}

	t.Setenv("GODEBUG", "urlmaxqueryparams=0"+godebugSuffix())
	want, ok := refForm("v2", body, Options{})
	if !ok {
		t.Skip("url.ParseQuery refuses 20,000 fields even with urlmaxqueryparams=0")
	}
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func godebugSuffix() string {
	if g := os.Getenv("GODEBUG"); g != "" {
		return "," + g
	}
	return ""
}

// formFixed bounds what a form fingerprint allocates whatever the body:
// the per-call state (about 12 KiB with its 4 KiB output buffer), the
// result, and room for what the runtime itself allocates meanwhile (up to
// about 6 KiB seen), which TotalAlloc counts too.
const formFixed = 32 << 10

// formShapes are form bodies of about n bytes, the pathological ones for
// memory: many short fields, one name repeated, escapes everywhere.
var formShapes = []shape{
	{"one_name", func(n int) []byte { return []byte(strings.Repeat("a&", n/2)) }},
	{"distinct_names", func(n int) []byte {
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			if i > 0 {
				b.WriteByte('&')
			}
			b.WriteString(strconv.FormatInt(int64(i), 36))
		}
		return []byte(b.String())
	}},
	{"escaped_fields", func(n int) []byte { return []byte(strings.Repeat("a=%41%42&%43=+&", n/15)) }},
	{"one_escaped_value", func(n int) []byte { return []byte("v=" + strings.Repeat("%41", n/3)) }},
	{"order_form", func(n int) []byte {
		return []byte(strings.Repeat("item=sku-123&qty=2&note=gift+wrap%21&", n/38))
	}},
}

// TestFormMemoryBudget holds the memory budget of form fingerprints: one
// call, on an empty pool, allocates at most twice the body (4 bytes a
// field, a field and its "&" taking at least 2 bytes) plus the fixed
// per-call state, whatever the shape. url.ParseQuery's map allocated up to
// 50 times the body.
func TestFormMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds large bodies")
	}
	for _, opts := range []Options{
		{Mode: ModeForm},
		{Mode: ModeForm, Include: []string{"/a", "/item"}, Exclude: []string{"/qty", "/a%"}},
	} {
		f, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range formShapes {
			// 19,990 bytes: fewer than url.ParseQuery's 10,000 fields.
			for _, size := range []int{19990, memTestSize} {
				t.Run(s.name+"/"+strconv.Itoa(size), func(t *testing.T) {
					body := s.body(size)
					alloc := firstCallAlloc(t, f, body)
					ratio := float64(alloc) / float64(len(body))
					t.Logf("%d-byte body: %d bytes allocated (%.3fx)", len(body), alloc, ratio)
					if alloc > 2*uint64(len(body))+formFixed {
						t.Errorf("allocated %d bytes for a %d-byte form body (%.2fx), budget 2x + %d", alloc, len(body), ratio, formFixed)
					}
				})
			}
		}
	}
}

// BenchmarkFormShapes fingerprints a 1 MB form body of each shape;
// first-B/body is what one call allocates on an empty pool, per body byte
// (the budget: at most 2).
func BenchmarkFormShapes(b *testing.B) { benchShapes(b, ModeForm, formShapes) }
