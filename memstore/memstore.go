// Package memstore is an in-memory idemkit.Store: the embedded default for
// local runs and for unit tests of code that uses idemkit. It keeps records
// in one process only, so it does not protect a fleet of Lambda instances;
// use package dynamo for that. It passes the same conformance suite
// (package storetest) as the DynamoDB store.
//
// It is a locked map of versioned records. Each call is applied once,
// under one lock, and its answer cannot be lost.
//
// Records are dropped as new ones are written once they are
// idemkit.MaxWriteDelay past their expiry, by the latest CreatedAt written
// (the store keeps no clock), so that a long-running process holds about
// its live records, not every record it ever stored, and a late copy of a
// claim still finds the record it must not replace.
package memstore

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/idemkit/idemkit"
)

// Store is an in-memory idemkit.Store. The zero value is ready to use and
// safe for concurrent use.
type Store struct {
	mu      sync.Mutex
	recs    map[string]*idemkit.Record // guarded by mu; values are never shared with callers
	latest  time.Time                  // guarded by mu; the latest CreatedAt written
	sweepAt int                        // guarded by mu; the size at which put drops old records
}

// minSweep is the number of records below which put drops none.
const minSweep = 64

// New returns an empty Store.
func New() *Store { return &Store{} }

var (
	_ idemkit.OperatorStore = (*Store)(nil)
	_ idemkit.StaleLister   = (*Store)(nil)
)

// put stores a copy of r; the caller holds s.mu. When the store has
// doubled since the last sweep, it drops the records MaxWriteDelay past
// their expiry, so a sweep of n records follows at least n/2 writes.
func (s *Store) put(r *idemkit.Record) {
	if s.recs == nil {
		s.recs = make(map[string]*idemkit.Record)
	}
	s.recs[r.ID] = r.Clone()
	if r.CreatedAt.After(s.latest) {
		s.latest = r.CreatedAt
	}
	if len(s.recs) < s.sweepAt {
		return
	}
	kept := func(r *idemkit.Record) bool { return s.latest.Before(r.ExpiresAt.Add(idemkit.MaxWriteDelay)) }
	n := 0
	for _, rec := range s.recs {
		if kept(rec) {
			n++
		}
	}
	if n < len(s.recs) {
		// A new map: deleting would keep the old one's buckets.
		m := make(map[string]*idemkit.Record, n)
		for id, rec := range s.recs {
			if kept(rec) {
				m[id] = rec
			}
		}
		s.recs = m
	}
	s.sweepAt = max(2*len(s.recs), minSweep)
}

// begin checks ctx, takes the lock and counts the call.
func (s *Store) begin(ctx context.Context, op string, write bool) error {
	if err := ctx.Err(); err != nil {
		return &idemkit.StoreError{Op: op, Err: err}
	}
	s.mu.Lock()
	if write {
		idemkit.AddUsage(ctx, 0, 1)
	} else {
		idemkit.AddUsage(ctx, 1, 0)
	}
	return nil
}

// Get implements idemkit.Store.
func (s *Store) Get(ctx context.Context, id string) (*idemkit.Record, error) {
	if err := s.begin(ctx, "get", false); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	cur := s.recs[id]
	if cur == nil {
		return nil, idemkit.ErrNotFound
	}
	return cur.Clone(), nil
}

// Create implements idemkit.Store.
func (s *Store) Create(ctx context.Context, rec *idemkit.Record) (*idemkit.Record, error) {
	if err := s.begin(ctx, "create", true); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if cur := s.recs[rec.ID]; cur != nil {
		return cur.Clone(), nil
	}
	s.put(rec)
	return nil, nil
}

// Replace implements idemkit.Store.
func (s *Store) Replace(ctx context.Context, rec, prev *idemkit.Record) (*idemkit.Record, error) {
	if err := s.begin(ctx, "replace", true); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	cur := s.recs[rec.ID]
	switch {
	case cur == nil:
		return nil, fmt.Errorf("memstore: replace %q: %w", rec.ID, idemkit.ErrNotFound)
	case cur.Version != prev.Version:
		return cur.Clone(), nil
	}
	s.put(rec)
	return nil, nil
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
