package fingerprint

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// orderBody returns a realistic order document of about size bytes:
// members deliberately not in canonical order, strings with escapes and
// non-ASCII text, integers and decimals.
func orderBody(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"order_id":"ord_8f14e45fceea167a5a36dedd4bea2543","customer":{"name":"Zoë Müller","id":"cus_42","email":"zoe@example.com"},` +
		`"currency":"EUR","meta":{"trace_id":"1-5759e988-bd862e3fe1be46a994272793","client_ts":"2026-03-01T10:00:00.123Z"},"items":[`)
	for i := 0; ; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"sku":"SKU-%05d","qty":%d,"unit_price":%d.%02d,"name":"Item \"%d\" \u2013 caf\u00e9","tags":["a","b"],"discount":null,"gift":%t}`,
			i, i%7+1, 10+i%90, i%100, i, i%3 == 0)
		if b.Len() >= size-40 {
			break
		}
	}
	b.WriteString(`],"amount":123456,"note":"leave at the door"}`)
	return []byte(b.String())
}

var benchSizes = []struct {
	name string
	size int
}{{"1KB", 1 << 10}, {"10KB", 10 << 10}, {"100KB", 100 << 10}}

// BenchmarkJSON measures a compiled Fingerprinter on JSON bodies.
func BenchmarkJSON(b *testing.B) {
	benchSized(b, Options{Mode: ModeJSON}, func(body []byte) Input { return Input{Body: body} })
}

// BenchmarkJSONExclude adds an Exclude list and method, path and header parts.
func BenchmarkJSONExclude(b *testing.B) {
	benchSized(b, Options{Mode: ModeJSON, Exclude: []string{"/meta/trace_id", "/meta/client_ts"},
		Method: true, Path: true, Headers: []string{"X-Region"}},
		func(body []byte) Input {
			return Input{Method: "POST", Path: "/orders", Header: map[string][]string{"X-Region": {"eu"}}, Body: body}
		})
}

// BenchmarkCompute measures the one-shot package function (Options
// validated on each call) on the 1 KB body.
func BenchmarkCompute(b *testing.B) {
	body := orderBody(1 << 10)
	in := Input{ContentType: "application/json", Body: body}
	opts := Options{Exclude: []string{"/meta"}}
	benchLoop(b, len(body), func() error { _, err := Compute(in, opts); return err })
}

// BenchmarkRaw measures raw-bytes mode (SHA-256 of the body plus framing).
func BenchmarkRaw(b *testing.B) {
	f, _ := New(Options{Mode: ModeRaw})
	body := orderBody(100 << 10)
	in := Input{Body: body}
	benchLoop(b, len(body), func() error { _, err := f.Compute(in); return err })
}

// benchSized measures a Fingerprinter of opts on the order body of each
// of benchSizes, in the Input that in makes of it.
func benchSized(b *testing.B, opts Options, in func(body []byte) Input) {
	f, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range benchSizes {
		body := orderBody(s.size)
		input := in(body)
		b.Run(s.name, func(b *testing.B) {
			benchLoop(b, len(body), func() error { _, err := f.Compute(input); return err })
		})
	}
}

// benchLoop measures compute on a body of n bytes, failing b on its error.
func benchLoop(b *testing.B, n int, compute func() error) {
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		if err := compute(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineCanonicalize is the reference point: jsontext's
// Value.Canonicalize into a copy of the body, then SHA-256 of the result.
func BenchmarkBaselineCanonicalize(b *testing.B) {
	for _, s := range benchSizes {
		body := orderBody(s.size)
		b.Run(s.name, func(b *testing.B) {
			buf := make([]byte, 0, len(body))
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				v := jsontext.Value(append(buf[:0], body...))
				if err := v.Canonicalize(jsontext.CanonicalizeRawInts(false)); err != nil {
					b.Fatal(err)
				}
				_ = sha256.Sum256(v)
			}
		})
	}
}

func TestOrderBodySizes(t *testing.T) {
	for _, s := range benchSizes {
		body := orderBody(s.size)
		if n := len(body); n < s.size*9/10 || n > s.size*11/10 {
			t.Errorf("%s body has %d bytes", s.name, n)
		}
		if _, err := Compute(Input{Body: body}, Options{Mode: ModeJSON}); err != nil {
			t.Errorf("%s body: %v", s.name, err)
		}
	}
}
