package fingerprint

import (
	"errors"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// refQuery is the query a raw query string hashes as: the url.Values that
// url.ParseQuery returns for it, or, when url.ParseQuery does not read it
// whole, the whole raw query as one name without a value.
func refQuery(raw string) map[string][]string {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return map[string][]string{raw: {}}
	}
	return vals
}

var rawQuerySeeds = append([]string{
	"expand=items", "a=1&a=2&b=", "q=caf%C3%A9+au+lait&x", "a=%26&%3D=b", "&a=1&&",
	"account=1;x", "a=1;b=2&c=3", "a=%zz&b=1", "%zz=1", "a=x%", ";", "&;&", "a=%25zz",
}, formSeeds...)

var rawQueryOpts = []Options{
	{},
	{Query: []string{"a", "b", "a b", "+", "%", "account", "account=1;x"}},
	{IgnoreQuery: true},
	{Method: true, Path: true, Query: []string{"q"}},
}

// TestRawQueryMatchesParsed: a raw query hashes, in both versions and
// under every option, as the parameters url.ParseQuery returns for it, or
// as one name without a value when url.ParseQuery does not read it whole.
func TestRawQueryMatchesParsed(t *testing.T) {
	for _, raw := range rawQuerySeeds {
		checkRawQuery(t, raw)
	}
}

// FuzzRawQuery compares the raw query reader with url.ParseQuery's map on
// any query.
func FuzzRawQuery(f *testing.F) { fuzzParseQuery(f, rawQuerySeeds, checkRawQuery) }

func checkRawQuery(t *testing.T, raw string) {
	t.Helper()
	body := []byte(`{"amount":1}`)
	for _, opts := range rawQueryOpts {
		for _, v := range []string{"v1", "v2"} {
			want, werr := ComputeVersion(v, Input{Method: "POST", Path: "/p", Query: refQuery(raw), Body: body}, opts)
			got, err := ComputeVersion(v, Input{Method: "POST", Path: "/p", RawQuery: raw, Body: body}, opts)
			if got != want || (err == nil) != (werr == nil) || err != nil && !errors.Is(err, ErrNotComparable) {
				t.Errorf("%s %q %+v: got %s, %v; want %s, %v", v, raw, opts, got, err, want, werr)
			}
		}
	}
}

// TestRawQueryUnclean: a query that url.ParseQuery does not read whole
// never hashes as a clean one, and a Query map wins over RawQuery.
func TestRawQueryUnclean(t *testing.T) {
	for _, tc := range []struct{ raw, clean string }{
		{"account=1;x", "account=1%3Bx"},
		{"a=%zz&b=1", "a=%25zz&b=1"},
		{"a=x%", "a=x%25"},
	} {
		a, _ := Compute(Input{RawQuery: tc.raw}, Options{})
		b, _ := Compute(Input{RawQuery: tc.clean}, Options{})
		if a == b {
			t.Errorf("%q and %q hash alike", tc.raw, tc.clean)
		}
	}
	a, _ := Compute(Input{Query: url.Values{"a": {"1"}}, RawQuery: "a=2"}, Options{})
	b, _ := Compute(Input{Query: url.Values{"a": {"1"}}}, Options{})
	if a != b {
		t.Errorf("RawQuery counted beside a Query map")
	}
}

// TestRawQueryMemory: a raw query of many short parameters is hashed in
// place: one call allocates at most twice the query (4 bytes a parameter)
// plus the fixed per-call state. As a map, the same query allocated 45
// times its size.
func TestRawQueryMemory(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 10000; i++ {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(strconv.FormatInt(int64(i), 36))
	}
	raw := b.String()
	f, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.GC() // empties sync.Pool's victim cache: a first call's growth counts
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := f.Compute(Input{RawQuery: raw}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d-byte query: %d bytes allocated (%.2fx)", len(raw), alloc, float64(alloc)/float64(len(raw)))
	if alloc > 2*uint64(len(raw))+formFixed {
		t.Errorf("allocated %d bytes for a %d-byte query, budget 2x + %d", alloc, len(raw), formFixed)
	}
}
