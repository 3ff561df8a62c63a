package warmcache_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/warmcache"
)

func inFlight(now time.Time, owner string) *idemkit.Record {
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k"}
	return &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v1:a", Owner: owner,
		LeaseUntil: now.Add(time.Second), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
}

// TestRefillCountsOnce: a record cached again (a retried completion, a
// claim lost to it) replaces its entry and is counted once in the byte
// bound: counted twice, the bytes would creep up with every refill until
// the cache evicted everything it holds.
func TestRefillCountsOnce(t *testing.T) {
	ctx := context.Background()
	c := warmcache.New(memstore.New(), warmcache.Config{})
	now := time.Now()
	r := inFlight(now, "a")
	if _, err := c.Claim(ctx, r, now); err != nil {
		t.Fatal(err)
	}
	done := r.Clone()
	done.State, done.CompletedAt = idemkit.StateCompleted, now
	done.Snapshot = &idemkit.Snapshot{Status: 201, Header: http.Header{"Location": {"/orders/1"}}, Body: []byte(`{"id":1}`)}
	for i := 0; i < 3; i++ { // the completion and two retries of it
		if err := c.Complete(ctx, done, now); err != nil {
			t.Fatal(err)
		}
	}
	want := warmcache.Stats{Misses: 1, Entries: 1, Bytes: warmcache.Size(done)}
	if st := c.Stats(); st != want {
		t.Fatalf("after a completion retried twice: %+v, want %+v", st, want)
	}
	// A claim with another fingerprint goes to the store, loses to the
	// completed record and caches it again.
	other := inFlight(now, "b")
	other.Fingerprint = "v1:b"
	if res, err := c.Claim(ctx, other, now); err != nil || res.Won {
		t.Fatalf("claim with another fingerprint: %+v %v", res, err)
	}
	want.Misses++
	if st := c.Stats(); st != want {
		t.Fatalf("after a claim lost to the cached record: %+v, want %+v", st, want)
	}
}

// TestEntryEndsAtExpiresAt: a record an operator resolved with an
// ExpiresAt before its ReplayUntil is absent to the store from its
// ExpiresAt; the cache stops answering for it then too, and the key can
// be claimed again.
func TestEntryEndsAtExpiresAt(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New()
	c := warmcache.New(mem, warmcache.Config{})
	now := time.Now()
	r := inFlight(now, "a")
	if _, err := c.Claim(ctx, r, now); err != nil {
		t.Fatal(err)
	}
	at := now.Add(2 * time.Second)
	if err := c.MarkIndeterminate(ctx, r.ID, "a", at); err != nil {
		t.Fatal(err)
	}
	exp := now.Add(time.Hour)
	res := idemkit.Resolution{As: idemkit.StateCompleted, Snapshot: &idemkit.Snapshot{Status: 200, Body: []byte("checked")},
		Operator: "ops", ReplayUntil: now.Add(3 * time.Hour), ExpiresAt: exp}
	if _, err := mem.Resolve(ctx, r.ID, r.Owner, res, at); err != nil {
		t.Fatal(err)
	}
	if cr, err := c.Claim(ctx, inFlight(at, "b"), at); err != nil || cr.Won {
		t.Fatalf("claim of the resolved key: %+v %v, want lost", cr, err)
	}
	if st := c.Stats(); st.Entries != 1 {
		t.Fatalf("the resolved record is not cached: %+v", st)
	}
	cr, err := c.Claim(ctx, inFlight(exp, "c"), exp)
	if err != nil || cr.Won || cr.Existing == nil || cr.Existing.Live(exp) {
		t.Fatalf("claim at the record's ExpiresAt: %+v %v, want shown the expired record, from the store", cr, err)
	}
	if cr, err = c.Reclaim(ctx, inFlight(exp, "c"), cr.Existing, exp); err != nil || !cr.Won {
		t.Fatalf("reclaim of the expired record: %+v %v, want won", cr, err)
	}
}

// TestBadClaimRefusedBeforeCache: a claim the store contract refuses (here
// without an owner token) is refused as ErrRecordInvalid even when the
// cache holds a completed record of its scope, as the store would refuse
// it.
func TestBadClaimRefusedBeforeCache(t *testing.T) {
	ctx := context.Background()
	c := warmcache.New(memstore.New(), warmcache.Config{})
	now := time.Now()
	r := inFlight(now, "a")
	if _, err := c.Claim(ctx, r, now); err != nil {
		t.Fatal(err)
	}
	done := r.Clone()
	done.State, done.CompletedAt, done.Snapshot = idemkit.StateCompleted, now, &idemkit.Snapshot{Status: 201, Body: []byte("x")}
	if err := c.Complete(ctx, done, now); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Entries != 1 {
		t.Fatalf("the completed record is not cached: %+v", st)
	}
	res, err := c.Claim(ctx, inFlight(now, ""), now)
	if !errors.Is(err, idemkit.ErrRecordInvalid) {
		t.Fatalf("claim without an owner: %+v %v, want ErrRecordInvalid", res, err)
	}
}
