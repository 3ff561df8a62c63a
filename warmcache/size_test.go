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

// resolvedRecord stores, in mem, a record whose outcome was unknown and
// that an operator resolved as completed at now with body (through
// idemkit.Resolve, as operator tools do, in place of the key's expired
// record if there is one), and returns the record as the store answers
// it.
func resolvedRecord(t *testing.T, mem idemkit.OperatorStore, key string, body []byte, now time.Time) *idemkit.Record {
	t.Helper()
	ctx := context.Background()
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: key}
	start := now.Add(-2 * time.Minute)
	rec := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateIndeterminate, Cause: idemkit.CauseOutcomeUnknown,
		Fingerprint: "v1:a", Owner: "dead", Version: "dead-unknown", LeaseUntil: start, ReplayUntil: start.Add(time.Hour),
		ExpiresAt: start.Add(2 * time.Hour), CreatedAt: start}
	met, err := mem.Create(ctx, rec)
	if err == nil && met != nil && !met.Live(now) {
		// The key's expired record, still kept: claimed in its place.
		met, err = mem.Replace(ctx, rec, met)
	}
	if err != nil || met != nil {
		t.Fatal(met, err)
	}
	got, _, err := idemkit.Resolve(ctx, mem, rec.ID, idemkit.Resolution{As: idemkit.StateCompleted, Operator: strings.Repeat("o", 1000), Reason: strings.Repeat("r", 4000),
		Snapshot: &idemkit.Snapshot{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}}, now)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSizeOfAResolvedRecord: a record an operator resolved as completed
// holds its answer, the operator's name and reason, and the resolution's
// own copy of the answer when a store returns one; Size counts them all,
// so that MaxBytes and MaxEntryBytes bound what the cache really holds.
func TestSizeOfAResolvedRecord(t *testing.T) {
	now := time.Now()
	body := []byte(strings.Repeat("b", 10_000))
	rec := resolvedRecord(t, memstore.New(), "k", body, now)
	if rec.Resolution == nil {
		t.Fatal("the store returned no resolution; the test needs one")
	}
	held := len(rec.Snapshot.Body) + len(rec.Resolution.Operator) + len(rec.Resolution.Reason)
	if n := warmcache.Size(rec); n < int64(held) {
		t.Fatalf("Size = %d bytes for a record holding at least %d", n, held)
	}
	rec.Resolution.Snapshot = rec.Snapshot.Clone()
	held += len(rec.Resolution.Snapshot.Body)
	if n := warmcache.Size(rec); n < int64(held) {
		t.Fatalf("Size = %d bytes for a record holding its answer twice, at least %d bytes", n, held)
	}
}

// TestResolvedRecordWithinMaxEntryBytes: a record resolved by an operator
// whose answer fits MaxEntryBytes alone but not with the operator's name
// and reason is not cached (the replay still comes from the store).
func TestResolvedRecordWithinMaxEntryBytes(t *testing.T) {
	e := newEnv(t, warmcache.Config{MaxEntryBytes: 16 << 10}, idemkit.Policy{})
	now := e.clock.Now()
	resolvedRecord(t, e.mem, "big", []byte(strings.Repeat("b", 12<<10)), now)
	snap, replayed, err := e.g.Do(context.Background(), req("big", "v1:a"), mustNotRun(t))
	if err != nil || !replayed || snap.Status != 201 || len(snap.Body) != 12<<10 {
		t.Fatalf("replay of the resolution: %v %v", replayed, err)
	}
	if st := e.cache.Stats(); st.Entries != 0 {
		t.Fatalf("a resolved record holding 17 KiB was cached under a 16 KiB MaxEntryBytes: %+v", st)
	}
}

// TestNoStaleReplayAfterReuse: a record cached here expires; meanwhile
// another instance reuses the key, its outcome is unknown, and an operator
// resolves the new record elsewhere (the store is shared, the cache is
// not). Requests here get the operator's answer, never the expired one
// the cache held, and the handler does not run.
func TestNoStaleReplayAfterReuse(t *testing.T) {
	e := newEnv(t, warmcache.Config{}, idemkit.Policy{ReplayWindow: time.Minute, RecordRetention: time.Hour})
	ctx := context.Background()
	e.run(t, req("k", "v1:a"), "first")
	if st := e.cache.Stats(); st.Entries != 1 {
		t.Fatalf("stats %+v, want the first answer cached", st)
	}
	e.clock.Advance(time.Hour + 3*time.Minute)
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
