package uuidv7_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemkit/idemkit/internal/uuidv7"
)

// TestAt: a key minted for a time is a canonical UUIDv7, of the RFC 9562
// variant, that holds that time to the millisecond.
func TestAt(t *testing.T) {
	at := time.Date(2025, 3, 14, 15, 9, 26, 535_897_000, time.UTC)
	k := uuidv7.At(at)
	u, err := uuid.Parse(k)
	if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 || u.String() != k {
		t.Fatalf("At = %q (%v): not a canonical UUIDv7", k, err)
	}
	got, ok := uuidv7.Time(k)
	if !ok || !got.Equal(at.Truncate(time.Millisecond)) {
		t.Errorf("Time(At(%s)) = %s %v", at, got, ok)
	}
	if uuidv7.At(at) == k {
		t.Errorf("two keys of one time are equal: %s", k)
	}
}

// TestTimeReadsAsUUIDParse: Time takes exactly the 36-byte keys that
// uuid.Parse takes as version 7, and reads the same time from them.
func TestTimeReadsAsUUIDParse(t *testing.T) {
	v7 := uuidv7.At(time.UnixMilli(1_700_000_000_123))
	for _, key := range []string{
		v7,
		strings.ToUpper(v7),
		"01890a5d-ac96-774b-bcce-b302099a8057",
		"01890a5d-ac96-674b-bcce-b302099a8057", // version 6
		"01890a5d-ac96-474b-bcce-b302099a8057", // version 4
		"01890a5dXac96-774b-bcce-b302099a8057",
		"01890a5d-ac96-774b-bcce-b302099a805g",
		"01890a5dac96774bbcceb302099a8057",
		"{01890a5d-ac96-774b-bcce-b302099a8057}",
		"",
		"order-1",
	} {
		got, ok := uuidv7.Time(key)
		var want time.Time
		wantOK := false
		if u, err := uuid.Parse(key); err == nil && len(key) == 36 && u.Version() == 7 {
			sec, nsec := u.Time().UnixTime()
			want, wantOK = time.Unix(sec, nsec), true
		}
		if ok != wantOK || !got.Equal(want) {
			t.Errorf("Time(%q) = %s %v, want %s %v", key, got, ok, want, wantOK)
		}
	}
}
