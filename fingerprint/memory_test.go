package fingerprint

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// shape builds a JSON body of about n bytes with one pathological
// structure: the kinds of body that made a tree-building canonicalizer
// allocate tens of bytes per input byte.
type shape struct {
	name string
	body func(n int) []byte
}

// repeatIn returns open + item*k + close, items separated by commas, about
// n bytes long.
func repeatIn(open, item, close string, n int) []byte {
	var b bytes.Buffer
	b.Grow(n + len(item) + len(close))
	b.WriteString(open)
	for i := 0; b.Len() < n-len(close); i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(item)
	}
	b.WriteString(close)
	return b.Bytes()
}

var shapes = []shape{
	{"small_ints", func(n int) []byte { return repeatIn("[", "1", "]", n) }},
	{"empty_arrays", func(n int) []byte { return repeatIn("[", "[]", "]", n) }},
	{"empty_objects", func(n int) []byte { return repeatIn("[", "{}", "]", n) }},
	{"objects", func(n int) []byte { return repeatIn("[", `{"b":1,"a":2}`, "]", n) }},
	{"big_object", func(n int) []byte {
		// One object, members in reverse order so that all must be sorted.
		var b bytes.Buffer
		b.WriteByte('{')
		for i := n / 12; i >= 0; i-- {
			if b.Len() > 1 {
				b.WriteByte(',')
			}
			b.WriteString(`"k`)
			b.WriteString(strconv.Itoa(i))
			b.WriteString(`":0`)
		}
		b.WriteByte('}')
		return b.Bytes()
	}},
	{"big_object_short_names", func(n int) []byte {
		// One object with the shortest distinct names: 8 bytes a member.
		const alnum = "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA9876543210"
		var b bytes.Buffer
		b.WriteByte('{')
		for i := 0; b.Len() < n-8 && i < len(alnum)*len(alnum)*len(alnum); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write([]byte{'"', alnum[i%62], alnum[i/62%62], alnum[i/62/62], '"', ':', '0'})
		}
		b.WriteByte('}')
		return b.Bytes()
	}},
	{"deep_arrays", func(n int) []byte {
		item := strings.Repeat("[", DefaultMaxDepth-1) + "1" + strings.Repeat("]", DefaultMaxDepth-1)
		return repeatIn("[", item, "]", n)
	}},
	{"deep_objects", func(n int) []byte {
		item := strings.Repeat(`{"b":0,"a":`, DefaultMaxDepth-1) + "1" + strings.Repeat("}", DefaultMaxDepth-1)
		return repeatIn("[", item, "]", n)
	}},
	{"escaped_strings", func(n int) []byte { return repeatIn("[", `"\n\u00e9\ud83d\ude00\/"`, "]", n) }},
	{"big_string", func(n int) []byte {
		return []byte(`{"s":"` + strings.Repeat(`ab\n\u00e9`, n/10) + `"}`)
	}},
	{"floats", func(n int) []byte { return repeatIn("[", "1e20", "]", n) }},
	{"order", orderBody},
}

// firstCallAlloc returns the bytes allocated by one Compute of body on an
// empty state pool, as on a fresh process: every buffer is grown from zero.
func firstCallAlloc(t testing.TB, f *Fingerprinter, body []byte) uint64 {
	runtime.GC()
	runtime.GC() // the second GC empties sync.Pool's victim cache
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := f.Compute(Input{Body: body}); err != nil {
		t.Fatalf("Compute: %v", err)
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestCanonicalMemoryBudget holds the memory budget of JSON fingerprints:
// for every shape, the bytes allocated by one call, on an empty pool, are
// at most the body size. The live heap can grow by no more than what is
// allocated, so this holds, with room, both budgets of docs/FINGERPRINT.md:
// at most 3x the body allocated and a peak heap growth of at most 2x.
func TestCanonicalMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds large bodies")
	}
	f, err := New(Options{Mode: ModeJSON})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			body := s.body(memTestSize)
			alloc := firstCallAlloc(t, f, body)
			ratio := float64(alloc) / float64(len(body))
			t.Logf("%d-byte body: %d bytes allocated (%.3fx)", len(body), alloc, ratio)
			if ratio > 1 {
				t.Errorf("allocated %d bytes for a %d-byte body (%.2fx), budget 1x", alloc, len(body), ratio)
			}
		})
	}
}

// BenchmarkCanonicalShapes fingerprints a 1 MB body of each shape. B/op is
// the steady state with pooled buffers; first-B/body is what one call
// allocates on an empty pool, per body byte (the budget: at most 1).
func BenchmarkCanonicalShapes(b *testing.B) { benchShapes(b, ModeJSON, shapes) }

// benchShapes fingerprints, in mode, a 1 MB body of each of shapes,
// reporting first-B/body next to B/op.
func benchShapes(b *testing.B, mode Mode, shapes []shape) {
	f, err := New(Options{Mode: mode})
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range shapes {
		body := s.body(1 << 20)
		b.Run(s.name, func(b *testing.B) {
			first := firstCallAlloc(b, f, body)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.Compute(Input{Body: body}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(first)/float64(len(body)), "first-B/body")
		})
	}
}
