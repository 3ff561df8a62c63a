package warmcache_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/eventlog"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
	"github.com/idemkit/idemkit/storetest"
	"github.com/idemkit/idemkit/warmcache"
)

// The suite runs through the cache, which must keep every guarantee; the
// listings go to the store under it, as operator tools do.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) idemkit.OperatorStore {
		mem := memstore.New()
		return operated{Store: warmcache.New(mem, warmcache.Config{}), under: mem}
	})
}

// operated is a cache whose listings go to the store under it.
type operated struct {
	*warmcache.Store
	under *memstore.Store
}

func (o operated) ListIndeterminate(ctx context.Context, tenant, page string, limit int, now time.Time) ([]*idemkit.Record, string, error) {
	return o.under.ListIndeterminate(ctx, tenant, page, limit, now)
}

func (o operated) ListsStale() bool { return o.under.ListsStale() }

func (o operated) ListStale(ctx context.Context, tenant, page string, limit int, now time.Time) ([]*idemkit.Record, string, error) {
	return o.under.ListStale(ctx, tenant, page, limit, now)
}

// counted counts the calls that reach the store it wraps.
type counted struct {
	idemkit.Store
	gets, creates, replaces atomic.Int64
}

func (c *counted) Get(ctx context.Context, id string) (*idemkit.Record, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, id)
}

func (c *counted) Create(ctx context.Context, rec *idemkit.Record) (*idemkit.Record, error) {
	c.creates.Add(1)
	return c.Store.Create(ctx, rec)
}

func (c *counted) Replace(ctx context.Context, rec, prev *idemkit.Record) (*idemkit.Record, error) {
	c.replaces.Add(1)
	return c.Store.Replace(ctx, rec, prev)
}

type env struct {
	mem   *memstore.Store
	under *counted // counts the calls that reach the memstore
	cache *warmcache.Store
	g     *idemkit.Guard
	clock *testclock.Clock
	obs   *eventlog.Log
}

func newEnv(t *testing.T, cfg warmcache.Config, pol idemkit.Policy) *env {
	t.Helper()
	e := &env{mem: memstore.New(), clock: testclock.New(), obs: &eventlog.Log{}}
	e.under = &counted{Store: e.mem}
	cfg.Clock = e.clock
	e.cache = warmcache.New(e.under, cfg)
	g, err := idemkit.New(idemkit.Config{Store: e.cache, Clock: e.clock, Observer: e.obs, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	e.g = g
	return e
}

// run sends r through the guard with a handler answering 201 with body,
// failing t on an error.
func (e *env) run(t *testing.T, r idemkit.Request, body string) {
	t.Helper()
	if _, _, err := e.g.Do(context.Background(), r, respond(body)); err != nil {
		t.Fatal(err)
	}
}

func req(key, fp string) idemkit.Request {
	return idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: key}, Fingerprint: fp}
}

func respond(body string) idemkit.Handler {
	return func(context.Context) (*idemkit.Snapshot, error) {
		return &idemkit.Snapshot{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}, nil
	}
}

func mustNotRun(t *testing.T) idemkit.Handler {
	return func(context.Context) (*idemkit.Snapshot, error) {
		t.Error("the handler ran on a replay")
		return nil, errors.New("ran")
	}
}

// TestWarmReplayNoCalls: after a fresh execution in this process, a replay
// makes no store call, and returns the stored response.
func TestWarmReplayNoCalls(t *testing.T) {
	e := newEnv(t, warmcache.Config{}, idemkit.Policy{})
	ctx := context.Background()
	if _, replayed, err := e.g.Do(ctx, req("k1", "v1:a"), respond(`{"id":1}`)); err != nil || replayed {
		t.Fatalf("fresh: %v %v", replayed, err)
	}
	if u := e.obs.Last().Usage; u.Calls != 2 {
		t.Fatalf("fresh usage %+v, want 2 calls", u)
	}
	for i := 0; i < 3; i++ {
		snap, replayed, err := e.g.Do(ctx, req("k1", "v1:a"), mustNotRun(t))
		if err != nil || !replayed || string(snap.Body) != `{"id":1}` || snap.Status != 201 {
			t.Fatalf("replay: %+v %v %v", snap, replayed, err)
		}
		if ev := e.obs.Last(); ev.Kind != observe.EventReplayed || ev.Usage.Calls != 0 {
			t.Fatalf("replay event %s usage %+v, want replayed in 0 calls", ev.Kind, ev.Usage)
		}
	}
	if n := e.under.creates.Load(); n != 1 {
		t.Fatalf("%d claims reached the store, want 1", n)
	}
	if st := e.cache.Stats(); st.Hits != 3 || st.Entries != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestFillOnLostClaim: a record completed by another instance is cached
// the first time a claim loses to it.
func TestFillOnLostClaim(t *testing.T) {
	e := newEnv(t, warmcache.Config{}, idemkit.Policy{})
	other, err := idemkit.New(idemkit.Config{Store: e.mem, Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := other.Do(ctx, req("k", "v1:a"), respond("x")); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{1, 0} {
		if _, replayed, err := e.g.Do(ctx, req("k", "v1:a"), mustNotRun(t)); err != nil || !replayed {
			t.Fatalf("replay %d: %v %v", i, replayed, err)
		}
		if u := e.obs.Last().Usage; u.Calls != want {
			t.Fatalf("replay %d: usage %+v, want %d calls", i, u, want)
		}
	}
}

// TestScopeAndFingerprint: the cache answers only the same scope and
// fingerprint; a different body still gets the mismatch from the store.
func TestScopeAndFingerprint(t *testing.T) {
	e := newEnv(t, warmcache.Config{}, idemkit.Policy{})
	ctx := context.Background()
	e.run(t, req("k", "v1:a"), "x")
	_, _, err := e.g.Do(ctx, req("k", "v1:b"), mustNotRun(t))
	if !errors.Is(err, idemkit.ErrFingerprintMismatch) {
		t.Fatalf("different fingerprint: %v", err)
	}
	if u := e.obs.Last().Usage; u.Calls != 1 {
		t.Fatalf("mismatch usage %+v, want the store asked", u)
	}
	other := req("k", "v1:a")
	other.Scope.Tenant = "globex"
	if _, replayed, err := e.g.Do(ctx, other, respond("y")); err != nil || replayed {
		t.Fatalf("other tenant, same key: replayed %v, %v; want a fresh execution", replayed, err)
	}
}

// TestExpiry: an entry is not used once its ReplayUntil or ExpiresAt has
// passed; the store answers instead.
func TestExpiry(t *testing.T) {
	e := newEnv(t, warmcache.Config{}, idemkit.Policy{ReplayWindow: time.Minute, RecordRetention: time.Hour})
	ctx := context.Background()
	e.run(t, req("k", "v1:a"), "x")
	e.clock.Advance(61 * time.Second)
	_, _, err := e.g.Do(ctx, req("k", "v1:a"), mustNotRun(t))
	var oe *idemkit.OutcomeError
	if !errors.As(err, &oe) {
		t.Fatalf("after the replay window: %v, want an outcome error", err)
	}
	if u := e.obs.Last().Usage; u.Calls != 1 {
		t.Fatalf("usage %+v, want the store asked", u)
	}
	if st := e.cache.Stats(); st.Entries != 0 {
		t.Fatalf("%d entries after the replay window, want none", st.Entries)
	}
	e.clock.Advance(time.Hour)
	if _, replayed, err := e.g.Do(ctx, req("k", "v1:a"), respond("new")); err != nil || replayed {
		t.Fatalf("after expiry: replayed %v, %v; want a fresh execution", replayed, err)
	}
}

// TestNeverCachesUnfinished: in-flight, indeterminate and released
// records always go to the store.
func TestNeverCachesUnfinished(t *testing.T) {
	e := newEnv(t, warmcache.Config{}, idemkit.Policy{Lease: 10 * time.Second})
	ctx := context.Background()
	// In flight: a conflict, twice, both from the store.
	_, _, err := e.g.Do(ctx, req("k", "v1:a"), func(ctx context.Context) (*idemkit.Snapshot, error) {
		for i := 0; i < 2; i++ {
			if _, _, err := e.g.Do(ctx, req("k", "v1:a"), mustNotRun(t)); !errors.Is(err, idemkit.ErrInFlight) {
				t.Errorf("concurrent request: %v, want ErrInFlight", err)
			}
		}
		return nil, errors.New("boom")
	})
	if err == nil {
		t.Fatal("handler error not returned")
	}
	if st := e.cache.Stats(); st.Entries != 0 || st.Hits != 0 {
		t.Fatalf("stats %+v after in-flight conflicts and a release", st)
	}
	// Released: the next request runs.
	if _, replayed, err := e.g.Do(ctx, req("k", "v1:a"), respond("x")); err != nil || replayed {
		t.Fatalf("after release: %v %v", replayed, err)
	}

	// Indeterminate: a crash leaves a lease that expires.
	now := e.clock.Now()
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "crash"}
	rec := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v1:a", Owner: "dead", Version: "v1",
		LeaseUntil: now.Add(time.Second), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	if met, err := e.cache.Create(ctx, rec); err != nil || met != nil {
		t.Fatal(met, err)
	}
	// Past the time its run could still complete: an operator's case.
	e.clock.Advance(time.Minute)
	for i := 0; i < 2; i++ {
		if _, _, err := e.g.Do(ctx, req("crash", "v1:a"), mustNotRun(t)); !errors.Is(err, idemkit.ErrIndeterminate) {
			t.Fatalf("indeterminate: %v", err)
		}
		if u := e.obs.Last().Usage; u.Calls == 0 {
			t.Fatal("an indeterminate answer came from the cache")
		}
	}
	if st := e.cache.Stats(); st.Entries != 1 {
		t.Fatalf("%d entries, want only the completed record", st.Entries)
	}
	// Resolved as completed by an operator through the store under the
	// cache, as operator tools do: the resolution is replayed.
	e.clock.Advance(time.Minute)
	if _, _, err := idemkit.Resolve(ctx, e.mem, rec.ID, idemkit.Resolution{As: idemkit.StateCompleted, Snapshot: &idemkit.Snapshot{Status: 200, Body: []byte("resolved")}}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	snap, replayed, err := e.g.Do(ctx, req("crash", "v1:a"), mustNotRun(t))
	if err != nil || !replayed || string(snap.Body) != "resolved" {
		t.Fatalf("after resolve: %+v %v %v", snap, replayed, err)
	}
}

// TestBounds: the cache holds at most MaxEntries records and MaxBytes
// bytes, evicting the least recently used, and skips records over
// MaxEntryBytes.
func TestBounds(t *testing.T) {
	ctx := context.Background()
	t.Run("entries", func(t *testing.T) {
		e := newEnv(t, warmcache.Config{MaxEntries: 3}, idemkit.Policy{})
		for i := 0; i < 5; i++ {
			e.run(t, req(fmt.Sprint(i), "v1:a"), "x")
		}
		if st := e.cache.Stats(); st.Entries != 3 {
			t.Fatalf("%d entries, want 3", st.Entries)
		}
		// Keys 0 and 1 were evicted; 4, 3 and 2 are read first, so that
		// reading 0 and 1 back (one store call each) evicts nothing unread.
		for _, c := range []struct {
			key   string
			calls int
		}{{"4", 0}, {"3", 0}, {"2", 0}, {"0", 1}, {"1", 1}} {
			if _, replayed, err := e.g.Do(ctx, req(c.key, "v1:a"), mustNotRun(t)); err != nil || !replayed {
				t.Fatal(err)
			}
			if u := e.obs.Last().Usage; u.Calls != c.calls {
				t.Fatalf("key %s: %d calls, want %d", c.key, u.Calls, c.calls)
			}
		}
	})
	t.Run("bytes", func(t *testing.T) {
		body := strings.Repeat("b", 1000)
		one := warmcache.Size(&idemkit.Record{ID: req("0", "v1:a").Scope.ID(false), Scope: req("0", "v1:a").Scope, Fingerprint: "v1:a",
			Owner: rand.Text(), Version: rand.Text() + ".1", Snapshot: &idemkit.Snapshot{Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}}) // a completion is its run's second write
		e := newEnv(t, warmcache.Config{MaxBytes: 3*one + one/2}, idemkit.Policy{})
		for i := 0; i < 6; i++ {
			e.run(t, req(fmt.Sprint(i), "v1:a"), body)
			if st := e.cache.Stats(); st.Bytes > 3*one+one/2 {
				t.Fatalf("%d bytes held, over the %d bound", st.Bytes, 3*one+one/2)
			}
		}
		if st := e.cache.Stats(); st.Entries != 3 || st.Bytes != 3*one {
			t.Fatalf("stats %+v, want 3 entries of %d bytes", st, one)
		}
	})
	t.Run("entry", func(t *testing.T) {
		e := newEnv(t, warmcache.Config{MaxEntryBytes: 4 << 10}, idemkit.Policy{})
		e.run(t, req("big", "v1:a"), strings.Repeat("b", 8<<10))
		if st := e.cache.Stats(); st.Entries != 0 {
			t.Fatalf("a record over MaxEntryBytes was cached: %+v", st)
		}
	})
}

// TestCopies: callers cannot change what the cache holds.
func TestCopies(t *testing.T) {
	e := newEnv(t, warmcache.Config{}, idemkit.Policy{})
	ctx := context.Background()
	e.run(t, req("k", "v1:a"), "abc")
	snap, _, _ := e.g.Do(ctx, req("k", "v1:a"), mustNotRun(t))
	snap.Body[0] = 'X'
	snap.Header.Set("Content-Type", "text/evil")
	snap, _, _ = e.g.Do(ctx, req("k", "v1:a"), mustNotRun(t))
	if string(snap.Body) != "abc" || snap.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("cached snapshot changed by a caller: %q %v", snap.Body, snap.Header)
	}
}

// TestConcurrent: many goroutines replaying and executing through one
// cache (run with -race).
func TestConcurrent(t *testing.T) {
	e := newEnv(t, warmcache.Config{MaxEntries: 8}, idemkit.Policy{})
	ctx := context.Background()
	var wg sync.WaitGroup
	var execs atomic.Int64
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				key := fmt.Sprint(i % 16)
				snap, _, err := e.g.Do(ctx, req(key, "v1:a"), func(context.Context) (*idemkit.Snapshot, error) {
					execs.Add(1)
					return &idemkit.Snapshot{Status: 201, Body: []byte(key)}, nil
				})
				if err != nil && !errors.Is(err, idemkit.ErrInFlight) {
					t.Error(err)
					return
				}
				if err == nil && string(snap.Body) != key {
					t.Errorf("key %s answered %q", key, snap.Body)
				}
			}
		}()
	}
	wg.Wait()
	if n := execs.Load(); n != 16 {
		t.Fatalf("%d executions, want one per key (16)", n)
	}
}
