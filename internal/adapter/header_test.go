package adapter

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/idemkit/idemkit"
)

// TestSnapshotBody: a body without the base64 flag is stored as a JSON
// encoder delivers it (U+FFFD per byte outside valid UTF-8); a base64 body
// is stored as it is.
func TestSnapshotBody(t *testing.T) {
	for _, body := range []string{
		"", "plain", "valid \u20ac", "caf\xe9", "\xff\xfe\xfd", "\xed\xa0\x80", "cut \xe2\x82", "\xf4\x90\x80\x80",
		"mixed \xc3\xa9\xc3 \xe2\x82\xac\xe2",
	} {
		wire, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		var want string
		if err := json.Unmarshal(wire, &want); err != nil {
			t.Fatal(err)
		}
		if got := SnapshotBody(body, false); !bytes.Equal(got, []byte(want)) {
			t.Errorf("SnapshotBody(%q) = %q, want %q", body, got, want)
		}
		if got := SnapshotBody(body, true); !bytes.Equal(got, []byte(body)) {
			t.Errorf("SnapshotBody(%q, base64) = %q, want it unchanged", body, got)
		}
	}
}

// TestSnapshotBodyAllocs: a body with bad bytes takes one allocation
// whatever its size or its share of them; a valid or base64 body none, as
// the snapshot shares its bytes.
func TestSnapshotBodyAllocs(t *testing.T) {
	for _, tc := range []struct {
		body   string
		base64 bool
		allocs float64
	}{
		{strings.Repeat("a\xff", 1<<16), false, 1},
		{strings.Repeat("\xff", 1<<16), false, 1},
		{strings.Repeat("ok", 1<<16), false, 0},
		{strings.Repeat("\xff", 1<<16), true, 0},
	} {
		if n := testing.AllocsPerRun(10, func() { SnapshotBody(tc.body, tc.base64) }); n > tc.allocs {
			t.Errorf("%d allocations for a %d-byte body (base64 %v), want %v", int(n), len(tc.body), tc.base64, tc.allocs)
		}
	}
}

// TestMultiOr: an event's multi-value form wins, even when empty; without
// one, the single-value form is used.
func TestMultiOr(t *testing.T) {
	for _, tc := range []struct {
		name   string
		single map[string]string
		multi  map[string][]string
		want   map[string][]string
	}{
		{"multi only", nil, map[string][]string{"a": {"1", "2"}}, map[string][]string{"a": {"1", "2"}}},
		{"both: multi wins", map[string]string{"a": "1"}, map[string][]string{"a": {"1", "2"}}, map[string][]string{"a": {"1", "2"}}},
		{"empty multi wins", map[string]string{"a": "1"}, map[string][]string{}, map[string][]string{}},
		{"single only", map[string]string{"a": "1"}, nil, map[string][]string{"a": {"1"}}},
		{"neither", nil, nil, map[string][]string{}},
	} {
		if got := MultiOr(tc.single, tc.multi); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: MultiOr = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLambdaBodyAllocs: a replayed body that travels as it is (valid
// UTF-8, or flagged base64) is the snapshot's bytes, not a copy of them.
func TestLambdaBodyAllocs(t *testing.T) {
	for _, s := range []*idemkit.Snapshot{
		{Body: []byte(strings.Repeat("ok", 1<<15))},
		{Body: []byte("aGk="), Base64: true},
	} {
		var body string
		if n := testing.AllocsPerRun(10, func() { body, _ = LambdaBody(s) }); n != 0 {
			t.Errorf("%d allocations for a %d-byte body, want none", int(n), len(s.Body))
		}
		if body != string(s.Body) {
			t.Errorf("LambdaBody = %.20q, want the snapshot's body", body)
		}
	}
}

// TestWithoutReplayed: the marker goes in every spelling, and a map that
// has none, or that the handler may share, is never written to.
func TestWithoutReplayed(t *testing.T) {
	shared := map[string]string{"Content-Type": "application/json", "idempotent-replayed": "true", "IDEMPOTENT-REPLAYED": "x"}
	got := WithoutReplayed(shared)
	if want := map[string]string{"Content-Type": "application/json"}; !reflect.DeepEqual(got, want) {
		t.Errorf("WithoutReplayed = %v, want %v", got, want)
	}
	if len(shared) != 3 {
		t.Errorf("the handler's map was written to: %v", shared)
	}
	clean := map[string][]string{"Location": {"/orders/1"}}
	if n := testing.AllocsPerRun(10, func() { WithoutReplayed(clean) }); n != 0 {
		t.Errorf("%v allocations for a map without the marker, want none", n)
	}
	if WithoutReplayed[string](nil) != nil {
		t.Error("nil map not kept nil")
	}
}

// TestFirstDeterministic: a header present under several spellings gives
// the same value on every call, whatever the map's order: the
// bytewise-first spelling's.
func TestFirstDeterministic(t *testing.T) {
	single := map[string]string{"content-type": "text/plain", "CONTENT-TYPE": "application/json", "Content-type": "application/x-www-form-urlencoded"}
	multi := map[string][]string{"content-type": {"text/plain"}, "Content-Type": {"application/json"}, "CONTENT-TYPE": {}}
	for range 50 {
		if got := First(single, nil, "Content-Type"); got != "application/json" {
			t.Fatalf("First(single) = %q, want CONTENT-TYPE's value", got)
		}
		if got := First(nil, multi, "content-type"); got != "application/json" {
			t.Fatalf("First(multi) = %q, want Content-Type's value (CONTENT-TYPE has none)", got)
		}
		if got := First(single, multi, "Content-Type"); got != "application/json" {
			t.Fatalf("First(single, multi) = %q, want multi's", got)
		}
	}
	if got := First(single, nil, "Accept"); got != "" {
		t.Errorf("First of a missing header = %q", got)
	}
}
