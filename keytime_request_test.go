package idemkit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/policydefault"
)

// TestRequestIgnoreKeyTime: a UUIDv7 key older than the record retention
// is refused (ErrKeyExpired) unless its request sets IgnoreKeyTime, as
// the batch and event adapters do for keys taken from a message (an
// order id minted days before its message): that request runs, and a
// later one with the same scope is its duplicate.
func TestRequestIgnoreKeyTime(t *testing.T) {
	f := newFixture(t, nil)
	key := uuidV7At(t, f.clock.Now().Add(-policydefault.RecordRetention-24*time.Hour))
	if _, _, err := f.do(t, req(key), respond(201, "x")); !errors.Is(err, idemkit.ErrKeyExpired) || f.runs != 0 {
		t.Fatalf("without IgnoreKeyTime: %v after %d runs, want ErrKeyExpired and none", err, f.runs)
	}
	r := req(key)
	r.IgnoreKeyTime = true
	for i := range 2 {
		_, replayed, err := f.do(t, r, respond(201, "x"))
		if err != nil || replayed != (i == 1) || f.runs != 1 {
			t.Fatalf("IgnoreKeyTime, call %d: replayed %v, %v after %d runs; want run once, then replayed", i, replayed, err, f.runs)
		}
	}
}
