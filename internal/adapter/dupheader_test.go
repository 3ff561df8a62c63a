package adapter_test

import (
	"slices"
	"testing"
)

// TestDuplicateSpellingsReplayDeterministically: a handler that sets one
// header under two spellings (Content-Type and content-type) gets the same
// replay every time, whatever the map order. A Lambda front keeps the
// values of the spelling the runtime serializes first (JSON object members
// in bytewise order; API Gateway delivers the first), net/http writes
// every spelling's line, in bytewise order, and httpmw keeps them all so.
func TestDuplicateSpellingsReplayDeterministically(t *testing.T) {
	hdr := [][2]string{{"content-type", "text/plain"}, {"Content-Type", "application/json"}, {"LOCATION", "/b"}, {"Location", "/a"}}
	for i := range 20 {
		runs := 0
		for name, send := range headerFronts(t, hdr, &runs) {
			first := send(t)
			replay := send(t)
			for _, h := range []struct {
				name       string
				lambda, mw []string
			}{
				{"Content-Type", []string{"application/json"}, []string{"application/json", "text/plain"}},
				{"Location", []string{"/b"}, []string{"/b", "/a"}},
			} {
				want := h.lambda
				if name == "httpmw" {
					want = h.mw
					if got := values(first, h.name); !slices.Equal(got, want) {
						t.Fatalf("run %d, %s: first %s %q, want %q", i, name, h.name, got, want)
					}
				}
				if got := values(replay, h.name); !slices.Equal(got, want) {
					t.Fatalf("run %d, %s: replayed %s %q, want %q", i, name, h.name, got, want)
				}
			}
		}
		if runs != 7 {
			t.Fatalf("handlers ran %d times, want 7", runs)
		}
	}
}
