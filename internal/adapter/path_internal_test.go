package adapter

import (
	"math/rand/v2"
	"testing"
)

func TestNormalizePath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"/orders/1", "/orders/1"},
		{"/orders/%31", "/orders/1"},
		{"/%7Eann/%7e%2D%2e%5F", "/~ann/~-._"},
		{"/a%2fb%2Fc", "/a%2Fb%2Fc"},
		{"/caf%c3%a9", "/caf%C3%A9"},
		{"/a%20b", "/a%20b"},
		{"/100%", "/100%"},
		{"/100%2", "/100%2"},
		{"/%zz%4", "/%zz%4"},
		{"/%%41", "/%A"},
		{"/%2541", "/%2541"},
		{"/é", "/é"},
	} {
		if got := NormalizePath(tc.in); got != tc.want {
			t.Errorf("NormalizePath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestNormalizePathKeepsUnescapedPaths: a path without "%" keeps its
// operation (and so its records' IDs) byte for byte, allocating nothing.
func TestNormalizePathKeepsUnescapedPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			for b[i] = byte(r.IntN(256)); b[i] == '%'; b[i] = byte(r.IntN(256)) {
			}
		}
		if p := string(b); NormalizePath(p) != p {
			t.Fatalf("NormalizePath(%q) = %q, want it unchanged", p, NormalizePath(p))
		}
	}
	p := "/orders/ord_123/capture"
	if n := testing.AllocsPerRun(10, func() { NormalizePath(p) }); n != 0 {
		t.Errorf("%v allocations, want none", n)
	}
}
