package warmcache_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/warmcache"
)

func inFlight(now time.Time, owner string) *idemkit.Record {
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k"}
	return &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v1:a", Owner: owner, Version: owner + "-claim",
		LeaseUntil: now.Add(time.Second), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
}

// TestRefillCountsOnce: a record cached again (a completion sent again, a
// claim meeting it) replaces its entry and is counted once in the byte
// bound: counted twice, the bytes would creep up with every refill until
// the cache evicted everything it holds.
func TestRefillCountsOnce(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New()
	c := warmcache.New(memstore.New(), warmcache.Config{Clock: clock})
	now := clock.Now()
	r := inFlight(now, "a")
	if met, err := c.Create(ctx, r); err != nil || met != nil {
		t.Fatal(met, err)
	}
	done := r.Clone()
	done.State, done.CompletedAt, done.Version = idemkit.StateCompleted, now, "a-done"
	done.Snapshot = &idemkit.Snapshot{Status: 201, Header: http.Header{"Location": {"/orders/1"}}, Body: []byte(`{"id":1}`)}
	for i := 0; i < 3; i++ { // the completion and two copies of it (answers lost)
		if _, err := c.Replace(ctx, done, r); err != nil {
			t.Fatal(err)
		}
	}
	want := warmcache.Stats{Misses: 1, Entries: 1, Bytes: warmcache.Size(done)}
	if st := c.Stats(); st != want {
		t.Fatalf("after a completion sent three times: %+v, want %+v", st, want)
	}
	// A claim with another fingerprint goes to the store, meets the
	// completed record and caches it again.
	other := inFlight(now, "b")
	other.Fingerprint = "v1:b"
	if met, err := c.Create(ctx, other); err != nil || met == nil || met.Version != done.Version {
		t.Fatalf("claim with another fingerprint: met %+v, %v; want the completed record", met, err)
	}
	want.Misses++
	if st := c.Stats(); st != want {
		t.Fatalf("after a claim met the cached record: %+v, want %+v", st, want)
	}
}

// TestEntryEndsAtExpiresAt: a record an operator resolved with an
// ExpiresAt before its ReplayUntil is absent to the engine from its
// ExpiresAt; the cache stops answering for it then too, and the key can
// be claimed again.
func TestEntryEndsAtExpiresAt(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	clock := testclock.New()
	c := warmcache.New(mem, warmcache.Config{Clock: clock})
	now := clock.Now()
	r := inFlight(now, "a")
	if met, err := c.Create(ctx, r); err != nil || met != nil {
		t.Fatal(met, err)
	}
	m := r.Clone()
	m.State, m.Cause, m.Version = idemkit.StateIndeterminate, idemkit.CauseLeaseExpired, "a-marked"
	if met, err := c.Replace(ctx, m, r); err != nil || met != nil {
		t.Fatal(met, err)
	}
	// Resolved by an operator, through the store under the cache.
	exp := now.Add(time.Hour)
	res := m.Clone()
	res.State, res.Version, res.CompletedAt = idemkit.StateCompleted, "ops-resolved", now
	res.Snapshot = &idemkit.Snapshot{Status: 200, Body: []byte("checked")}
	res.Resolution = &idemkit.Resolution{As: idemkit.StateCompleted, Operator: "ops", ResolvedAt: now, ReplayUntil: now.Add(3 * time.Hour), ExpiresAt: exp}
	res.ReplayUntil, res.ExpiresAt = res.Resolution.ReplayUntil, exp
	if met, err := mem.Replace(ctx, res, m); err != nil || met != nil {
		t.Fatal(met, err)
	}
	if met, err := c.Create(ctx, inFlight(now, "b")); err != nil || met == nil || met.Version != res.Version {
		t.Fatalf("claim of the resolved key: met %+v, %v; want the resolution", met, err)
	}
	if st := c.Stats(); st.Entries != 1 {
		t.Fatalf("the resolved record is not cached: %+v", st)
	}
	clock.Set(exp)
	met, err := c.Create(ctx, inFlight(exp, "c"))
	if err != nil || met == nil || met.Live(exp) {
		t.Fatalf("claim at the record's ExpiresAt: met %+v, %v; want the expired record, from the store", met, err)
	}
	if st := c.Stats(); st.Hits != 0 || st.Entries != 0 {
		t.Fatalf("the cache answered at the record's ExpiresAt: %+v", st)
	}
	if met, err = c.Replace(ctx, inFlight(exp, "c"), met); err != nil || met != nil {
		t.Fatalf("claim in place of the expired record: met %+v, %v; want stored", met, err)
	}
}

// TestGetAnswersFromCache: Get of a cached completed record makes no
// store call; Get of anything else reads the store, and fills the cache
// with a completed record read.
func TestGetAnswersFromCache(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, warmcache.Config{}, idemkit.Policy{})
	e.run(t, req("k", "v1:a"), "x")
	id := req("k", "v1:a").Scope.ID(false)
	got, err := e.cache.Get(ctx, id)
	if err != nil || got.State != idemkit.StateCompleted || string(got.Snapshot.Body) != "x" || e.under.gets.Load() != 0 {
		t.Fatalf("Get of a cached record: %+v, %v, %d store reads; want the record, none", got, err, e.under.gets.Load())
	}
	got.Snapshot.Body[0] = 'X'
	e.cache.Purge()
	for i, calls := range []int64{1, 1} {
		got, err := e.cache.Get(ctx, id)
		if err != nil || string(got.Snapshot.Body) != "x" || e.under.gets.Load() != calls {
			t.Fatalf("Get %d after Purge: %+v, %v, %d store reads; want %d", i, got, err, e.under.gets.Load(), calls)
		}
	}
	if _, err := e.cache.Get(ctx, "none"); err == nil || e.under.gets.Load() != 2 {
		t.Fatalf("Get of no record: %v, %d store reads", err, e.under.gets.Load())
	}
}
