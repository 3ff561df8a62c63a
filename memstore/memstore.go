// Package memstore is an in-memory idemkit.Store: the embedded default for
// local runs and for unit tests of code that uses idemkit. It keeps records
// in one process only, so it does not protect a fleet of Lambda instances;
// use package dynamo for that. It passes the same conformance suite
// (package storetest) as the DynamoDB store.
//
// Each call is applied once, under one lock, and its answer cannot be
// lost: a write made again is a caller's retry, answered by the rules of
// the idemkit.Store contract (its lost answers).
//
// Records are dropped as new ones are written once they are
// idemkit.MaxWriteDelay past their expiry, so that a long-running process
// holds about its live records, not every record it ever stored, and a
// late copy of a claim still finds the record it must not replace.
package memstore

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/storearg"
)

// Store is an in-memory idemkit.Store. The zero value is ready to use and
// safe for concurrent use.
type Store struct {
	mu      sync.Mutex
	recs    map[string]*idemkit.Record // guarded by mu; values are never shared with callers
	sweepAt int                        // guarded by mu; the size at which put drops expired records
}

// minSweep is the number of records below which put drops no expired ones.
const minSweep = 64

// New returns an empty Store.
func New() *Store { return &Store{} }

var (
	_ idemkit.OperatorStore = (*Store)(nil)
	_ idemkit.StaleLister   = (*Store)(nil)
)

// live returns the live record with id, nil for a tombstone; the caller
// holds s.mu.
func (s *Store) live(id string, now time.Time) *idemkit.Record {
	r := s.recs[id]
	if r == nil || !r.Live(now) || r.State == idemkit.StateReleased {
		return nil
	}
	return r
}

// kept reports whether r is still kept at now: until MaxWriteDelay past
// its expiry.
func kept(r *idemkit.Record, now time.Time) bool {
	return now.Before(r.ExpiresAt.Add(idemkit.MaxWriteDelay))
}

// put stores a copy of r; the caller holds s.mu. When the store has
// doubled since the last sweep, it drops the records no longer kept at
// now, so a sweep of n records follows at least n/2 writes of new ones.
func (s *Store) put(r *idemkit.Record, now time.Time) {
	if s.recs == nil {
		s.recs = make(map[string]*idemkit.Record)
	}
	s.recs[r.ID] = r.Clone()
	if len(s.recs) < s.sweepAt {
		return
	}
	n := 0
	for _, rec := range s.recs {
		if kept(rec, now) {
			n++
		}
	}
	if n < len(s.recs) {
		// A new map: deleting would keep the old one's buckets.
		m := make(map[string]*idemkit.Record, n)
		for id, rec := range s.recs {
			if kept(rec, now) {
				m[id] = rec
			}
		}
		s.recs = m
	}
	s.sweepAt = max(2*len(s.recs), minSweep)
}

// stored returns the record kept with id, live or not, tombstones
// included; the caller holds s.mu.
func (s *Store) stored(id string, now time.Time) *idemkit.Record {
	r := s.recs[id]
	if r == nil || !kept(r, now) {
		return nil
	}
	return r
}

// ours reports whether cur is rec's own in_flight claim, with a lease not
// after rec's: a retried claim whose first attempt landed.
func ours(cur, rec *idemkit.Record) bool {
	return cur.State == idemkit.StateInFlight && cur.Owner == rec.Owner && !cur.LeaseUntil.After(rec.LeaseUntil)
}

// Claim implements idemkit.Store.
func (s *Store) Claim(ctx context.Context, rec *idemkit.Record, now time.Time) (idemkit.ClaimResult, error) {
	if err := storearg.Claim(rec); err != nil {
		return idemkit.ClaimResult{}, fmt.Errorf("memstore: claim: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return idemkit.ClaimResult{}, &idemkit.StoreError{Op: "claim", Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idemkit.AddUsage(ctx, 0, 1)
	cur := s.stored(rec.ID, now)
	if cur != nil && !ours(cur, rec) {
		return idemkit.ClaimResult{Existing: cur.Clone()}, nil
	}
	s.put(rec, now)
	return idemkit.ClaimResult{Won: true}, nil
}

// Reclaim implements idemkit.Store.
func (s *Store) Reclaim(ctx context.Context, rec, prev *idemkit.Record, now time.Time) (idemkit.ClaimResult, error) {
	if err := storearg.Reclaim(rec, prev); err != nil {
		return idemkit.ClaimResult{}, fmt.Errorf("memstore: reclaim: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return idemkit.ClaimResult{}, &idemkit.StoreError{Op: "reclaim", Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idemkit.AddUsage(ctx, 0, 1)
	cur := s.stored(rec.ID, now)
	switch {
	case cur == nil:
		return idemkit.ClaimResult{}, nil
	case cur.Owner == prev.Owner && cur.State == prev.State && cur.LeaseUntil.Equal(prev.LeaseUntil):
		s.put(rec, now)
		return idemkit.ClaimResult{Won: true, Existing: cur.Clone()}, nil
	case ours(cur, rec):
		s.put(rec, now)
		return idemkit.ClaimResult{Won: true}, nil
	}
	return idemkit.ClaimResult{Existing: cur.Clone()}, nil
}

// Complete implements idemkit.Store.
func (s *Store) Complete(ctx context.Context, rec *idemkit.Record, now time.Time) error {
	if err := storearg.Complete(rec); err != nil {
		return fmt.Errorf("memstore: complete: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return &idemkit.StoreError{Op: "complete", Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idemkit.AddUsage(ctx, 0, 1)
	cur := s.live(rec.ID, now)
	if cur == nil || cur.Owner != rec.Owner || !completable(cur) {
		return idemkit.ErrNotOwner
	}
	s.put(rec, now)
	return nil
}

// completable reports whether its owner may complete cur: in flight,
// indeterminate (a late completion), or completed by the owner and not by
// an operator (a retried completion).
func completable(cur *idemkit.Record) bool {
	switch cur.State {
	case idemkit.StateInFlight, idemkit.StateIndeterminate:
		return true
	case idemkit.StateCompleted:
		return cur.Resolution == nil
	}
	return false
}

// Extend implements idemkit.Store.
func (s *Store) Extend(ctx context.Context, id, owner string, leaseUntil, now time.Time) error {
	if err := storearg.Owned(id, owner); err != nil {
		return fmt.Errorf("memstore: extend: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return &idemkit.StoreError{Op: "extend", Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idemkit.AddUsage(ctx, 0, 1)
	cur := s.live(id, now)
	if cur == nil || cur.Owner != owner || cur.State != idemkit.StateInFlight {
		return idemkit.ErrNotOwner
	}
	if leaseUntil.After(cur.LeaseUntil) {
		// Never back: a late copy of an earlier renewal changes nothing.
		cur.LeaseUntil = leaseUntil
	}
	return nil
}

// MarkUnknown implements idemkit.Store.
func (s *Store) MarkUnknown(ctx context.Context, id, owner string, now time.Time) error {
	if err := storearg.Owned(id, owner); err != nil {
		return fmt.Errorf("memstore: mark unknown: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return &idemkit.StoreError{Op: "mark unknown", Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idemkit.AddUsage(ctx, 0, 1)
	cur := s.live(id, now)
	if cur == nil || cur.Owner != owner || cur.State != idemkit.StateInFlight {
		return idemkit.ErrNotOwner
	}
	cur.State = idemkit.StateIndeterminate
	cur.LeaseUntil = now
	cur.Cause = idemkit.CauseOutcomeUnknown
	return nil
}

// Release implements idemkit.Store.
func (s *Store) Release(ctx context.Context, id, owner string, now time.Time) error {
	if err := storearg.Owned(id, owner); err != nil {
		return fmt.Errorf("memstore: release: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return &idemkit.StoreError{Op: "release", Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idemkit.AddUsage(ctx, 0, 1)
	if cur := s.live(id, now); cur != nil && (cur.Owner != owner || cur.State != idemkit.StateInFlight) {
		return idemkit.ErrNotOwner
	}
	s.put(&idemkit.Record{ID: id, State: idemkit.StateReleased, Owner: owner, LeaseUntil: now, ExpiresAt: now}, now)
	return nil
}

// MarkIndeterminate implements idemkit.Store.
func (s *Store) MarkIndeterminate(ctx context.Context, id, owner string, now time.Time) error {
	if err := storearg.Owned(id, owner); err != nil {
		return fmt.Errorf("memstore: mark indeterminate: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return &idemkit.StoreError{Op: "mark indeterminate", Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idemkit.AddUsage(ctx, 0, 1)
	cur := s.live(id, now)
	if cur == nil || cur.Owner != owner || cur.State != idemkit.StateInFlight || !cur.LeaseExpired(now) {
		return idemkit.ErrNotOwner
	}
	cur.State = idemkit.StateIndeterminate
	cur.Cause = idemkit.CauseLeaseExpired
	return nil
}

// Resolve implements idemkit.OperatorStore.
func (s *Store) Resolve(ctx context.Context, id, owner string, res idemkit.Resolution, now time.Time) (*idemkit.Record, error) {
	if err := storearg.Resolution(id, owner, res); err != nil {
		return nil, fmt.Errorf("memstore: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, &idemkit.StoreError{Op: "resolve", Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idemkit.AddUsage(ctx, 0, 1)
	cur := s.live(id, now)
	if cur == nil || cur.State != idemkit.StateIndeterminate || cur.Owner != owner {
		return nil, idemkit.ErrNotIndeterminate
	}
	r := cur.Clone()
	r.State = res.As
	rc := res
	rc.Snapshot = res.Snapshot.Clone()
	r.Resolution = &rc
	if rc.ResolvedAt.IsZero() {
		rc.ResolvedAt = now
	}
	if res.As == idemkit.StateFailed {
		rc.Snapshot = nil
	}
	if res.As == idemkit.StateCompleted {
		r.Snapshot = res.Snapshot.Clone()
		r.CompletedAt = rc.ResolvedAt
	}
	if !res.ReplayUntil.IsZero() {
		r.ReplayUntil = res.ReplayUntil
	}
	if !res.ExpiresAt.IsZero() {
		r.ExpiresAt = res.ExpiresAt
	}
	s.put(r, now)
	return r, nil
}

// Get implements idemkit.Store.
func (s *Store) Get(ctx context.Context, id string, now time.Time) (*idemkit.Record, error) {
	if err := storearg.ID(id); err != nil {
		return nil, fmt.Errorf("memstore: get: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, &idemkit.StoreError{Op: "get", Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	idemkit.AddUsage(ctx, 1, 0)
	cur := s.live(id, now)
	if cur == nil {
		return nil, idemkit.ErrNotFound
	}
	return cur.Clone(), nil
}

// ListIndeterminate implements idemkit.OperatorStore. The page token is the offset
// into the sorted listing.
func (s *Store) ListIndeterminate(ctx context.Context, tenant, page string, limit int, now time.Time) ([]*idemkit.Record, string, error) {
	return s.list(ctx, "list indeterminate", tenant, page, limit, now, func(r *idemkit.Record) bool {
		return r.State == idemkit.StateIndeterminate
	})
}

// ListsStale implements idemkit.StaleLister: it is true, since the
// store sees every record it holds.
func (s *Store) ListsStale() bool { return true }

// ListStale implements idemkit.StaleLister. The page token is the offset
// into the sorted listing.
func (s *Store) ListStale(ctx context.Context, tenant, page string, limit int, now time.Time) ([]*idemkit.Record, string, error) {
	return s.list(ctx, "list stale", tenant, page, limit, now, func(r *idemkit.Record) bool {
		return r.State == idemkit.StateInFlight && r.LeaseExpired(now)
	})
}

func (s *Store) list(ctx context.Context, op, tenant, page string, limit int, now time.Time, keep func(*idemkit.Record) bool) ([]*idemkit.Record, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", &idemkit.StoreError{Op: op, Err: err}
	}
	if limit <= 0 {
		limit = 100
	}
	off := 0
	if page != "" {
		n, err := strconv.Atoi(page)
		if err != nil || n < 0 {
			return nil, "", fmt.Errorf("memstore: %w %q", idemkit.ErrInvalidPage, page)
		}
		off = n
	}
	s.mu.Lock()
	var all []*idemkit.Record
	for _, r := range s.recs {
		if keep(r) && r.Live(now) && (tenant == "" || r.Scope.Tenant == tenant) {
			all = append(all, r.Clone())
		}
	}
	s.mu.Unlock()
	idemkit.AddUsage(ctx, 1, 0)
	sort.Slice(all, func(i, j int) bool {
		if !all[i].LeaseUntil.Equal(all[j].LeaseUntil) {
			return all[i].LeaseUntil.Before(all[j].LeaseUntil)
		}
		return all[i].ID < all[j].ID
	})
	if off >= len(all) {
		return nil, "", nil
	}
	end := off + limit
	next := ""
	if end < len(all) {
		next = strconv.Itoa(end)
	} else {
		end = len(all)
	}
	return all[off:end], next, nil
}
