package fingerprint

import (
	"encoding/base64"
	"runtime"
	"testing"
)

// TestBase64MemoryBudget holds the memory budget of bodies that API
// Gateway delivers base64-encoded, measured against the body as received
// (the base64 text): the decoded copy takes 0.75x, and the JSON or form
// reader then needs at most its own budget of the decoded bytes (JSON
// about 0.6x, form 2x), so at most 1.2x for JSON and 2.25x for a form,
// plus the fixed per-call state and the rounding of large allocations
// to whole pages.
func TestBase64MemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds large bodies")
	}
	for _, tc := range []struct {
		contentType string
		shapes      []shape
		budget      float64
	}{
		{"application/json", shapes, 1.2},
		{"application/x-www-form-urlencoded", formShapes, 2.25},
	} {
		f, err := New(Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range tc.shapes {
			t.Run(s.name, func(t *testing.T) {
				enc := []byte(base64.StdEncoding.EncodeToString(s.body(memTestSize)))
				in := Input{ContentType: tc.contentType, Body: enc, IsBase64Encoded: true}
				runtime.GC()
				runtime.GC() // the second GC empties sync.Pool's victim cache
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				if _, err := f.Compute(in); err != nil {
					t.Fatalf("Compute: %v", err)
				}
				runtime.ReadMemStats(&after)
				alloc := after.TotalAlloc - before.TotalAlloc
				t.Logf("%d-byte base64 body: %d bytes allocated (%.3fx)", len(enc), alloc, float64(alloc)/float64(len(enc)))
				if float64(alloc) > tc.budget*float64(len(enc))+formFixed {
					t.Errorf("allocated %d bytes for a %d-byte base64 body (%.2fx), budget %.2fx", alloc, len(enc), float64(alloc)/float64(len(enc)), tc.budget)
				}
			})
		}
	}
}
