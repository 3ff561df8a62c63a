// Package warmcache is an opt-in, in-process cache of completed records in
// front of any idemkit.Store, so that a replay served by a warm Lambda
// instance that has seen the record makes no store call at all.
//
//	store, _ := dynamo.New(client, table, dynamo.Options{})
//	g, _ := idemkit.New(idemkit.Config{Store: warmcache.New(store, warmcache.Config{})})
//
// # What is cached
//
// Only completed records are cached, and only while they can be replayed.
// An entry is used while now, by Config.Clock, is before both the record's
// ExpiresAt and its ReplayUntil (rounded down to the millisecond, as a
// store may keep it), and dropped afterwards. In-flight, indeterminate,
// failed and released records are never cached, so a conflict, a takeover
// or an operator's decision always comes from the store.
//
// Create answers from the cache when it holds a completed record of
// rec's ID, scope (tenant, operation, key) and fingerprint: it returns a
// copy of it as the record met, without a store call. Get answers from
// the cache when it holds a completed record of the ID. Anything else goes
// to the store. The cache fills with every completed record the store
// returns (a Create or a Replace met it, a Get read it) and with the
// completed record a Replace stores. A Replace forgets the ID before it
// passes through.
//
// This is sound because a live completed record is final: the engine
// never replaces one (see idemkit.State). So a cached completed record
// stays what the store would answer until it expires.
//
// The cache is for the guard: a Store is all it implements. Operator
// tools (idemkit.Resolve, the idemkit CLI) use the store itself, as they
// do from another process; their decisions need no cache to see them,
// since only completed records are cached and a decision is made only on
// an indeterminate one.
//
// # The trade-off
//
// The cache sees only what passes through this process. A record changed
// outside the contract (an item deleted or edited by hand in the table, a
// table restored from a backup, a retention shortened by rewriting
// items) is not seen by an instance that has it cached until the entry
// leaves the cache (eviction, ReplayUntil or ExpiresAt). Each Lambda
// instance has its own cache. A record completed by another instance is
// cached here the first time a claim loses to it (one store call), never
// before. Keep the cache off when operators repair completed records by
// hand and expect every instance to see the repair at once. Off is the
// default: do not wrap the store.
//
// # Bounds
//
// The cache holds at most Config.MaxEntries records and Config.MaxBytes
// bytes, evicting the least recently used. The bytes are an estimate (see
// Size): body, headers, identifiers, an operator's resolution (with its
// own copy of the answer, when a store returns one), and a fixed overhead
// per entry. A record larger than
// Config.MaxEntryBytes is not cached. Keep that below the store's item cap
// (dynamo.Options.MaxItemSize), so that a response the store keeps without
// its body (Snapshot.Omitted) is never replayed with one from the cache.
package warmcache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/clock"
	"github.com/idemkit/idemkit/internal/setting"
)

// Defaults applied to the zero fields of Config.
const (
	DefaultMaxEntries    = 1024
	DefaultMaxBytes      = 8 << 20
	DefaultMaxEntryBytes = 128 << 10
)

// entryOverhead is what an entry is counted beyond its variable-length
// fields: the record's fixed fields, the LRU element and the map slot.
const entryOverhead = 256

// Config bounds a cache. The zero value is the documented defaults.
type Config struct {
	// MaxEntries is the most records held. Zero: DefaultMaxEntries (1024).
	MaxEntries int
	// MaxBytes is the most bytes held, by the estimate of Size.
	// Zero: DefaultMaxBytes (8 MiB).
	MaxBytes int64
	// MaxEntryBytes is the largest record cached, by the estimate of Size.
	// Zero: DefaultMaxEntryBytes (128 KiB).
	MaxEntryBytes int64
	// Clock is the time the cache reads to tell whether an entry may
	// still answer: give it the guard's Config.Clock. Nil: the system
	// clock.
	Clock clock.Clock
}

func (c Config) withDefaults() Config {
	c.MaxEntries = setting.Or(c.MaxEntries, DefaultMaxEntries)
	c.MaxBytes = setting.Or(c.MaxBytes, DefaultMaxBytes)
	c.MaxEntryBytes = setting.Or(c.MaxEntryBytes, DefaultMaxEntryBytes)
	if c.MaxEntryBytes > c.MaxBytes {
		c.MaxEntryBytes = c.MaxBytes
	}
	return c
}

// Stats counts what a cache did.
type Stats struct {
	// Hits are reads (Create, Get) answered from the cache; Misses are
	// reads passed to the store.
	Hits, Misses uint64
	// Entries and Bytes are what the cache holds now.
	Entries int
	Bytes   int64
}

// Store is an idemkit.Store caching completed records in front of another.
// It is not an idemkit.OperatorStore: operator tools use the store it
// wraps.
// It is safe for concurrent use.
type Store struct {
	next idemkit.Store
	cfg  Config
	now  func() time.Time

	mu    sync.Mutex
	lru   *simplelru.LRU[string, *entry] // guarded by mu
	bytes int64                          // guarded by mu

	hits, misses atomic.Uint64
}

type entry struct {
	rec  *idemkit.Record // a private copy; never handed out
	size int64
}

var _ idemkit.Store = (*Store)(nil)

// New returns a Store that caches the completed records of next within
// cfg's bounds.
func New(next idemkit.Store, cfg Config) *Store {
	s := &Store{next: next, cfg: cfg.withDefaults(), now: time.Now}
	if cfg.Clock != nil {
		s.now = cfg.Clock.Now
	}
	// NewLRU fails only for a size below one, which withDefaults rules out.
	s.lru, _ = simplelru.NewLRU[string, *entry](s.cfg.MaxEntries, func(_ string, e *entry) { s.bytes -= e.size })
	return s
}

// Size is the estimate of a record's memory that the byte bounds count. It
// is a fixed overhead plus the record's strings, its snapshot and, for a
// record an operator resolved, the resolution's operator, reason and own
// copy of the answer, if any.
func Size(r *idemkit.Record) int64 {
	n := entryOverhead + len(r.ID) + len(r.Scope.Tenant) + len(r.Scope.Operation) + len(r.Scope.Key) + len(r.Fingerprint) + len(r.Owner) + len(r.Version)
	n += snapshotSize(r.Snapshot)
	if res := r.Resolution; res != nil {
		n += resolutionOverhead + len(res.As) + len(res.Operator) + len(res.Reason) + snapshotSize(res.Snapshot)
	}
	return int64(n)
}

// resolutionOverhead is what a Resolution is counted beyond its strings
// and snapshot.
const resolutionOverhead = 128

func snapshotSize(s *idemkit.Snapshot) int {
	if s == nil {
		return 0
	}
	n := len(s.Body)
	for k, vs := range s.Header {
		n += len(k) + 16
		for _, v := range vs {
			n += len(v) + 16
		}
	}
	return n
}

// cacheable reports whether r may be cached at now.
func cacheable(r *idemkit.Record, now time.Time) bool {
	return r != nil && r.State == idemkit.StateCompleted && r.Snapshot != nil && usable(r, now)
}

// usable reports whether a cached record may answer at now. ReplayUntil
// counts rounded down to the millisecond, the precision a store may keep
// it at (the DynamoDB store does), so that the cache never replays in the
// last millisecond where the store would answer that the window passed.
func usable(r *idemkit.Record, now time.Time) bool {
	return now.Before(r.ExpiresAt) && now.Before(floorMilli(r.ReplayUntil))
}

// floorMilli returns t rounded down to the millisecond.
func floorMilli(t time.Time) time.Time { return t.Truncate(time.Millisecond) }

// lookup returns a copy of the cached record with id that may answer at
// now, and that want accepts, or nil.
func (s *Store) lookup(id string, now time.Time, want func(*idemkit.Record) bool) *idemkit.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.lru.Get(id)
	if !ok {
		return nil
	}
	if !usable(e.rec, now) {
		s.lru.Remove(id)
		return nil
	}
	if !want(e.rec) {
		return nil
	}
	return e.rec.Clone()
}

// fill caches a copy of r when it may be cached at now.
func (s *Store) fill(r *idemkit.Record, now time.Time) {
	if !cacheable(r, now) {
		return
	}
	size := Size(r)
	if size > s.cfg.MaxEntryBytes {
		return
	}
	e := &entry{rec: r.Clone(), size: size}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lru.Remove(r.ID) // Add replacing a value would skip the byte count
	s.lru.Add(r.ID, e)
	s.bytes += size
	for s.bytes > s.cfg.MaxBytes {
		if _, _, ok := s.lru.RemoveOldest(); !ok {
			break
		}
	}
}

// Forget drops the cached record with id, if any.
func (s *Store) Forget(id string) {
	s.mu.Lock()
	s.lru.Remove(id)
	s.mu.Unlock()
}

// Purge drops every cached record.
func (s *Store) Purge() {
	s.mu.Lock()
	s.lru.Purge()
	s.mu.Unlock()
}

// Stats returns the cache's counters and contents.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Hits: s.hits.Load(), Misses: s.misses.Load(), Entries: s.lru.Len(), Bytes: s.bytes}
}

// Create answers from the cache when a completed record with rec's ID,
// scope and fingerprint is cached and replayable now: it is returned as
// the record met, and no store call is made. Otherwise Create passes
// through and caches the completed record met.
func (s *Store) Create(ctx context.Context, rec *idemkit.Record) (*idemkit.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, &idemkit.StoreError{Op: "create", Err: err}
	}
	return s.cached(rec.ID, func(c *idemkit.Record) bool {
		return c.Scope == rec.Scope && c.Fingerprint == rec.Fingerprint
	}, func() (*idemkit.Record, error) { return s.next.Create(ctx, rec) })
}

// Get answers from the cache when a completed record with id is cached
// and replayable now. Otherwise it passes through and caches the
// completed record read.
func (s *Store) Get(ctx context.Context, id string) (*idemkit.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, &idemkit.StoreError{Op: "get", Err: err}
	}
	return s.cached(id, func(*idemkit.Record) bool { return true },
		func() (*idemkit.Record, error) { return s.next.Get(ctx, id) })
}

// cached answers with the record cached under id when it is replayable
// now and ok accepts it; otherwise with what call returns from the next
// store, caching a completed record it returns.
func (s *Store) cached(id string, ok func(*idemkit.Record) bool, call func() (*idemkit.Record, error)) (*idemkit.Record, error) {
	if r := s.lookup(id, s.now(), ok); r != nil {
		s.hits.Add(1)
		return r, nil
	}
	s.misses.Add(1)
	r, err := call()
	if err == nil && r != nil {
		s.fill(r, s.now())
	}
	return r, err
}

// Replace forgets rec's ID and passes through. It caches the completed
// record it stores, or the completed record it meets.
func (s *Store) Replace(ctx context.Context, rec, prev *idemkit.Record) (*idemkit.Record, error) {
	s.Forget(rec.ID)
	met, err := s.next.Replace(ctx, rec, prev)
	switch {
	case err != nil:
	case met == nil:
		s.fill(rec, s.now())
	default:
		s.fill(met, s.now())
	}
	return met, err
}
