package fingerprint

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestAppendES6Vectors pins the ECMAScript number form at each boundary
// of its notation rules (RFC 8785 appendix B's values among them).
func TestAppendES6Vectors(t *testing.T) {
	for _, tc := range []struct {
		bits uint64
		want string
	}{
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	} {
		f := math.Float64frombits(tc.bits)
		if got := string(appendES6(nil, f)); got != tc.want {
			t.Errorf("%#016x: got %s, want %s", tc.bits, got, tc.want)
		}
	}
}

// TestAppendES6MatchesJSONText checks the number form against jsontext's
// RFC 8785 canonicalization over random float64 bit patterns and over
// values near each notation boundary, so the canonical bytes do not change
// with the JSON library or the Go release underneath.
func TestAppendES6MatchesJSONText(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 200000
	if testing.Short() {
		n = 20000
	}
	check := func(f float64) {
		t.Helper()
		if f == 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return
		}
		lit := strconv.AppendFloat(nil, f, 'g', -1, 64)
		v := jsontext.Value(bytes.Clone(lit))
		if err := v.Canonicalize(); err != nil {
			t.Fatalf("%s: %v", lit, err)
		}
		if got := appendES6(nil, f); !bytes.Equal(got, v) {
			t.Fatalf("%s (%#016x): got %s, jsontext %s", lit, math.Float64bits(f), got, v)
		}
	}
	for range n {
		check(math.Float64frombits(r.Uint64()))
	}
	for e := -30; e <= 30; e++ {
		p := math.Pow(10, float64(e))
		for _, f := range []float64{p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1)), 1.5 * p, -p} {
			check(f)
		}
	}
}

// TestAppendES6Allocs keeps the number form allocation-free.
func TestAppendES6Allocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { buf = appendES6(buf[:0], -1.2345678901234567e-300) }); n != 0 {
		t.Fatalf("appendES6 allocates %v times per call", n)
	}
}
