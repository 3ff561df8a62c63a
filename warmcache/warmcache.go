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
// An entry is used while now is before both the record's ExpiresAt and its
// ReplayUntil (rounded down to the millisecond, as a store may keep it),
// and dropped afterwards. In-flight, indeterminate and failed records are
// never cached, so a conflict, a takeover or an operator's decision always
// comes from the store. An entry answers a claim only for the same record
// ID, the same scope (tenant, operation, key) and the same fingerprint.
// Anything else goes to the store.
//
// Claim answers from the cache with ClaimResult{Won: false, Existing: a
// copy of the cached record}, without a store call. The cache fills when
// Complete succeeds and when a claim is lost to a completed record.
// Release, MarkIndeterminate and MarkUnknown pass through and drop the ID;
// Extend and Get pass through.
//
// This is sound because a completed record is final in the store
// contract. No method changes a live completed record, except a retried
// completion by its own owner with the same outcome. So a cached completed
// record stays what the store would answer until it expires.
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
// Size): body, headers, identifiers, an operator's resolution with its own
// copy of the answer, and a fixed overhead per entry. A record larger than
// Config.MaxEntryBytes is not cached. Keep that below the store's item cap
// (dynamo.Options.MaxItemSize), so that a response the store keeps without
// its body (Snapshot.Omitted) is never replayed with one from the cache.
package warmcache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/storearg"
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
}

func (c Config) withDefaults() Config {
	if c.MaxEntries <= 0 {
		c.MaxEntries = DefaultMaxEntries
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxEntryBytes <= 0 {
		c.MaxEntryBytes = DefaultMaxEntryBytes
	}
	if c.MaxEntryBytes > c.MaxBytes {
		c.MaxEntryBytes = c.MaxBytes
	}
	return c
}

// Stats counts what a cache did.
type Stats struct {
	// Hits are claims answered from the cache; Misses are claims passed to
	// the store.
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
	s := &Store{next: next, cfg: cfg.withDefaults()}
	// NewLRU fails only for a size below one, which withDefaults rules out.
	s.lru, _ = simplelru.NewLRU[string, *entry](s.cfg.MaxEntries, func(_ string, e *entry) { s.bytes -= e.size })
	return s
}

// Size is the estimate of a record's memory that the byte bounds count. It
// is a fixed overhead plus the record's strings, its snapshot and, for a
// record an operator resolved, the resolution's own copy of the answer,
// operator and reason.
func Size(r *idemkit.Record) int64 {
	n := entryOverhead + len(r.ID) + len(r.Scope.Tenant) + len(r.Scope.Operation) + len(r.Scope.Key) + len(r.Fingerprint) + len(r.Owner)
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

// lookup returns a copy of the cached record that answers a claim of rec
// at now, or nil.
func (s *Store) lookup(rec *idemkit.Record, now time.Time) *idemkit.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.lru.Get(rec.ID)
	if !ok {
		return nil
	}
	if !usable(e.rec, now) {
		s.lru.Remove(rec.ID)
		return nil
	}
	if e.rec.Scope != rec.Scope || e.rec.Fingerprint != rec.Fingerprint {
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

// Claim answers from the cache when a completed record with rec's ID,
// scope and fingerprint is cached and replayable at now: the claim is
// lost to it, and no store call is made. Otherwise it claims in the store
// and caches the completed record a lost claim returns.
func (s *Store) Claim(ctx context.Context, rec *idemkit.Record, now time.Time) (idemkit.ClaimResult, error) {
	if err := storearg.Claim(rec); err != nil {
		// Refused as the store would, before the cache answers.
		return idemkit.ClaimResult{}, fmt.Errorf("warmcache: claim: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return idemkit.ClaimResult{}, &idemkit.StoreError{Op: "claim", Err: err}
	}
	if ex := s.lookup(rec, now); ex != nil {
		s.hits.Add(1)
		return idemkit.ClaimResult{Existing: ex}, nil
	}
	s.misses.Add(1)
	res, err := s.next.Claim(ctx, rec, now)
	s.claimed(rec.ID, res, err, now)
	return res, err
}

// Reclaim replaces prev in the store; the cache forgets the ID when it
// wins and caches the completed record a lost one returns.
func (s *Store) Reclaim(ctx context.Context, rec, prev *idemkit.Record, now time.Time) (idemkit.ClaimResult, error) {
	res, err := s.next.Reclaim(ctx, rec, prev, now)
	s.claimed(rec.ID, res, err, now)
	return res, err
}

// claimed caches what a claim in the store met, or forgets what was cached
// under the ID of one that won: it is gone from the store.
func (s *Store) claimed(id string, res idemkit.ClaimResult, err error, now time.Time) {
	switch {
	case err != nil:
	case res.Won:
		s.Forget(id)
	default:
		s.fill(res.Existing, now)
	}
}

// Complete stores rec and, when that succeeds, caches it.
func (s *Store) Complete(ctx context.Context, rec *idemkit.Record, now time.Time) error {
	if err := s.next.Complete(ctx, rec, now); err != nil {
		return err
	}
	s.fill(rec, now)
	return nil
}

// Release passes through and drops the ID from the cache.
func (s *Store) Release(ctx context.Context, id, owner string, now time.Time) error {
	defer s.Forget(id)
	return s.next.Release(ctx, id, owner, now)
}

// MarkIndeterminate passes through and drops the ID from the cache.
func (s *Store) MarkIndeterminate(ctx context.Context, id, owner string, now time.Time) error {
	defer s.Forget(id)
	return s.next.MarkIndeterminate(ctx, id, owner, now)
}

// Extend passes through (only completed records are cached).
func (s *Store) Extend(ctx context.Context, id, owner string, leaseUntil, now time.Time) error {
	return s.next.Extend(ctx, id, owner, leaseUntil, now)
}

// MarkUnknown passes through and drops the ID from the cache.
func (s *Store) MarkUnknown(ctx context.Context, id, owner string, now time.Time) error {
	defer s.Forget(id)
	return s.next.MarkUnknown(ctx, id, owner, now)
}

// Get passes through: it always reads the store.
func (s *Store) Get(ctx context.Context, id string, now time.Time) (*idemkit.Record, error) {
	return s.next.Get(ctx, id, now)
}
