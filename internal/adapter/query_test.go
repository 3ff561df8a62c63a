package adapter

import (
	"reflect"
	"testing"
)

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
