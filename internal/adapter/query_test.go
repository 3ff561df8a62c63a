package adapter

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func TestParseQuery(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
	}{
		{"", "map[]"},
		{"&&", "map[]"},
		{"a=1&b=2&a=3", "map[a:[1 3] b:[2]]"},
		{"v", "map[v:[]]"},
		{"v=", "map[v:[]]"},
		{"note=a+b&n%C3%A4me=%7A", "map[note:[a b] näme:[z]]"},
		{"a=1=2", "map[a:[1=2]]"},
	} {
		if got := fmt.Sprint(ParseQuery(tc.raw)); got != tc.want {
			t.Errorf("ParseQuery(%q) = %s, want %s", tc.raw, got, tc.want)
		}
	}
}

// TestParseQueryNotClean: a query net/url would not read whole (a
// semicolon, an invalid escape) is one name, the raw query, with no
// value, so that it never reads like a clean query: "a=%zz" is not
// "a=%25zz" (which a handler reads as a="%zz"), and "a=1;x" is not
// "a=1%3Bx".
func TestParseQueryNotClean(t *testing.T) {
	for _, tc := range []struct{ raw, clean string }{
		{"account=1;x", "account=1%3Bx"},
		{"a=1;b=2&c=3", "a=1%3Bb%3D2&c=3"},
		{"a=%zz&b=1", "a=%25zz&b=1"},
		{"%zz=1", "%25zz=1"},
		{"a=x%", "a=x%25"},
	} {
		got := ParseQuery(tc.raw)
		if vs, ok := got[tc.raw]; len(got) != 1 || !ok || vs == nil || len(vs) != 0 {
			t.Errorf("ParseQuery(%q) = %q, want the raw query as one name with no value", tc.raw, got)
		}
		clean := ParseQuery(tc.clean)
		if reflect.DeepEqual(got, clean) {
			t.Errorf("ParseQuery(%q) = ParseQuery(%q) = %q: they must differ", tc.raw, tc.clean, got)
		}
		for _, vs := range clean {
			if len(vs) == 0 {
				t.Errorf("ParseQuery(%q) = %q: a clean query's names all have values", tc.clean, clean)
			}
		}
	}
}

// TestParseQueryAgreesWithNetURL: where net/url parses a query without
// error, ParseQuery gives the same parameters, so fingerprints of valid
// queries are unchanged.
func TestParseQueryAgreesWithNetURL(t *testing.T) {
	for _, raw := range []string{"expand=items", "a=1&a=2&b=", "q=caf%C3%A9+au+lait&x", "a=%26&%3D=b", "&a=1&&"} {
		want, err := url.ParseQuery(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := ParseQuery(raw); fmt.Sprint(got) != fmt.Sprint(map[string][]string(want)) {
			t.Errorf("ParseQuery(%q) = %v, net/url %v", raw, got, want)
		}
	}
}

// TestParseQueryAllocs: parsing costs the map, a slice per name (grown by
// doubling) and a string per escaped component: nothing per unescaped
// pair. 101 pairs under two names measure 12 (net/url: 10).
func TestParseQueryAllocs(t *testing.T) {
	raw := strings.Repeat("k=v&", 100) + "e=%7A"
	if n := testing.AllocsPerRun(20, func() { ParseQuery(raw) }); n > 14 {
		t.Errorf("%v allocations, want at most 14", n)
	}
}

// TestDecodeQuery: encoded names and values are decoded as a raw query's
// are; a query without "%" or "+" is returned as it is, allocating
// nothing; names that decode alike merge in the order of their encoded
// names, whatever the map order.
func TestDecodeQuery(t *testing.T) {
	plain := map[string][]string{"expand": {"items", "lines"}, "dryRun": {"true"}}
	if n := testing.AllocsPerRun(10, func() { DecodeQuery(plain) }); n != 0 {
		t.Errorf("%v allocations for a plain query, want none", n)
	}
	if got := DecodeQuery(plain); !reflect.DeepEqual(got, plain) {
		t.Errorf("plain query changed: %v", got)
	}
	for range 20 {
		got := DecodeQuery(map[string][]string{"n%6Fte": {"c"}, "note": {"a+b", "x%7A"}, "%41": {"%e2%82%ac"}, "tag": {"1"}})
		want := map[string][]string{"note": {"c", "a b", "xz"}, "A": {"€"}, "tag": {"1"}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeQuery = %q, want %q", got, want)
		}
	}
	// An invalid escape: the parameters as sent, marked, never what a
	// valid escape of the same text decodes to.
	bad := map[string][]string{"note": {"x%zz"}, "tag": {"%31"}}
	got := DecodeQuery(bad)
	want := map[string][]string{"note": {"x%zz"}, "tag": {"%31"}, "\x00": {}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeQuery(%q) = %q, want %q", bad, got, want)
	}
	if reflect.DeepEqual(got, DecodeQuery(map[string][]string{"note": {"x%25zz"}, "tag": {"1"}})) {
		t.Errorf("an invalid escape reads like a valid one of its text")
	}
	if _, ok := bad["\x00"]; ok {
		t.Errorf("DecodeQuery modified its argument")
	}
}
