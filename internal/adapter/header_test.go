package adapter

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
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

// TestSnapshotBodyAllocs: one allocation whatever the body's size or its
// share of bad bytes.
func TestSnapshotBodyAllocs(t *testing.T) {
	for _, body := range []string{strings.Repeat("a\xff", 1<<16), strings.Repeat("\xff", 1<<16), strings.Repeat("ok", 1<<16)} {
		if n := testing.AllocsPerRun(10, func() { SnapshotBody(body, false) }); n > 1 {
			t.Errorf("%d allocations for a %d-byte body, want 1", int(n), len(body))
		}
	}
}
