package warmcache_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/warmcache"
)

// resolvedRecord stores, in mem, a record an operator resolved as
// completed with body, and returns the record as the store answers it.
func resolvedRecord(t *testing.T, mem idemkit.OperatorStore, key string, body []byte, now time.Time) *idemkit.Record {
	t.Helper()
	ctx := context.Background()
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: key}
	rec := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v1:a", Owner: "dead",
		LeaseUntil: now.Add(time.Second), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
	res, err := mem.Claim(ctx, rec, now)
	if err == nil && !res.Won && res.Existing != nil && !res.Existing.Live(now) {
		// The key's expired record, still kept: claimed in its place.
		res, err = mem.Reclaim(ctx, rec, res.Existing, now)
	}
	if err != nil || !res.Won {
		t.Fatal(res, err)
	}
	if err := mem.MarkUnknown(ctx, rec.ID, rec.Owner, now); err != nil {
		t.Fatal(err)
	}
	got, err := mem.Resolve(ctx, rec.ID, rec.Owner, idemkit.Resolution{As: idemkit.StateCompleted, Operator: strings.Repeat("o", 1000), Reason: strings.Repeat("r", 4000),
		Snapshot: &idemkit.Snapshot{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}}, now)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSizeOfAResolvedRecord: a record an operator resolved as completed
// holds its answer twice (Snapshot and Resolution.Snapshot, as every store
// returns it) and the operator's name and reason; Size counts them all, so
// that MaxBytes and MaxEntryBytes bound what the cache really holds.
func TestSizeOfAResolvedRecord(t *testing.T) {
	now := time.Now()
	body := []byte(strings.Repeat("b", 10_000))
	rec := resolvedRecord(t, memstore.New(), "k", body, now)
	if rec.Resolution == nil || rec.Resolution.Snapshot == nil {
		t.Fatal("the store returned no resolution snapshot; the test needs one")
	}
	held := len(rec.Snapshot.Body) + len(rec.Resolution.Snapshot.Body) + len(rec.Resolution.Operator) + len(rec.Resolution.Reason)
	if n := warmcache.Size(rec); n < int64(held) {
		t.Fatalf("Size = %d bytes for a record holding at least %d", n, held)
	}
}

// TestResolvedRecordWithinMaxEntryBytes: a record resolved by an operator
// whose answer fits MaxEntryBytes once but not twice is not cached (the
// replay still comes from the store).
func TestResolvedRecordWithinMaxEntryBytes(t *testing.T) {
	e := newEnv(t, warmcache.Config{MaxEntryBytes: 16 << 10}, idemkit.Policy{})
	now := e.clock.Now()
	resolvedRecord(t, e.mem, "big", []byte(strings.Repeat("b", 10<<10)), now)
	snap, replayed, err := e.g.Do(context.Background(), req("big", "v1:a"), mustNotRun(t))
	if err != nil || !replayed || snap.Status != 201 || len(snap.Body) != 10<<10 {
		t.Fatalf("replay of the resolution: %v %v", replayed, err)
	}
	if st := e.cache.Stats(); st.Entries != 0 {
		t.Fatalf("a resolved record holding 20 KiB of bodies was cached under a 16 KiB MaxEntryBytes: %+v", st)
	}
}

// TestNoStaleReplayAfterReuse: a record cached here expires; meanwhile
// another instance reuses the key, crashes, and an operator resolves the
// new record elsewhere (the store is shared, the cache is not). Requests
// here get the operator's answer, never the expired one the cache held,
// and the handler does not run.
func TestNoStaleReplayAfterReuse(t *testing.T) {
	e := newEnv(t, warmcache.Config{}, idemkit.Policy{ReplayWindow: time.Minute, RecordRetention: time.Hour})
	ctx := context.Background()
	if _, _, err := e.g.Do(ctx, req("k", "v1:a"), respond("first")); err != nil {
		t.Fatal(err)
	}
	if st := e.cache.Stats(); st.Entries != 1 {
		t.Fatalf("stats %+v, want the first answer cached", st)
	}
	e.clock.Advance(time.Hour + time.Second)
	// Another instance, on the store itself, reuses the key and its
	// execution's outcome is unknown; an operator resolves it.
	now := e.clock.Now()
	rec := resolvedRecord(t, e.mem, "k", []byte("resolved"), now)
	if rec.State != idemkit.StateCompleted {
		t.Fatalf("state %s", rec.State)
	}
	for i := 0; i < 2; i++ {
		snap, replayed, err := e.g.Do(ctx, req("k", "v1:a"), mustNotRun(t))
		if err != nil || !replayed || string(snap.Body) != "resolved" {
			t.Fatalf("request %d: %q replayed %v, %v; want the operator's answer", i, snapBody(snap), replayed, err)
		}
	}
}

func snapBody(s *idemkit.Snapshot) string {
	if s == nil {
		return ""
	}
	return string(s.Body)
}
