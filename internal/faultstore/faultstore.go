// Package faultstore is the fault-injecting store the tests share.
//
// A Store wraps an idemkit.OperatorStore. A Hook set on a method decides,
// call by call, what happens to the call: it fails, it fails after its
// change landed (a lost answer), it waits first, it never reaches the
// wrapped store, or it passes; and what runs once it returns. Every call is
// recorded, hooked or not, so that a test can count them.
//
//	fs := faultstore.New(memstore.New())
//	fs.On(faultstore.Claim, faultstore.First(1, faultstore.Fault{Err: errReset, Applied: true}))
package faultstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/idemkit/idemkit"
)

// Method names a method of the store.
type Method string

// The methods a Hook can be set on.
const (
	Claim             Method = "Claim"
	Reclaim           Method = "Reclaim"
	Complete          Method = "Complete"
	Release           Method = "Release"
	Extend            Method = "Extend"
	MarkUnknown       Method = "MarkUnknown"
	MarkIndeterminate Method = "MarkIndeterminate"
	Get               Method = "Get"
	Resolve           Method = "Resolve"
	ListIndeterminate Method = "ListIndeterminate"
	ListStale         Method = "ListStale"
)

// Methods returns every Method, in the order the store interfaces
// declare them.
func Methods() []Method {
	return []Method{Claim, Reclaim, Complete, Release, Extend, MarkUnknown, MarkIndeterminate, Get, Resolve, ListIndeterminate, ListStale}
}

// Call is one call made to a Store, with its arguments. A field that the
// method does not take is zero.
type Call struct {
	Method Method
	// N is the call's number among the calls of its method, from 1.
	N int

	ID    string
	Owner string // the record's Owner for Claim and Complete; the owner fenced on
	// Record is a copy of the record passed to Claim or Complete.
	Record *idemkit.Record
	// Prev is a copy of the record a Reclaim replaces.
	Prev       *idemkit.Record
	LeaseUntil time.Time // Extend
	// Resolution is a copy of the one passed to Resolve.
	Resolution idemkit.Resolution
	// Tenant, Page and Limit are a listing's.
	Tenant, Page string
	Limit        int
	Now          time.Time
}

// Fault is what happens to one call. The zero Fault lets it pass.
type Fault struct {
	// Delay is waited before the call. When ctx is done first the call
	// returns ctx's error, as an *idemkit.StoreError.
	Delay time.Duration
	// Err, when not nil, is returned in place of the wrapped store's
	// answer; the call does not reach the wrapped store unless Applied.
	Err error
	// Applied makes a call with Err reach the wrapped store first: its
	// change lands and its answer is lost, as on a timeout or a reset.
	Applied bool
	// Skip keeps the call from the wrapped store even without Err: it
	// returns zero values and Err. For Claim with a nil Err that is a lost
	// claim with no record (Won false, Existing nil), the answer of a store
	// that found the blocking record gone before it could read it.
	Skip bool
	// Then, when not nil, is called with the call's error once the call is
	// done, before it returns.
	Then func(err error)
}

// Hook decides the fault of a call. It is called before the call reaches
// the wrapped store, with the call's ctx, and may itself call the wrapped
// store (Store.Inner): what it changes lands before the call.
type Hook func(ctx context.Context, c Call) Fault

// Always returns a Hook giving every call f.
func Always(f Fault) Hook {
	return func(context.Context, Call) Fault { return f }
}

// Fail returns a Hook failing every call with err, unapplied.
func Fail(err error) Hook { return Always(Fault{Err: err}) }

// First returns a Hook giving the first n calls of its method f; later
// calls pass. The count is the Store's, from the first call of the method,
// whenever the Hook was set.
func First(n int, f Fault) Hook {
	return func(_ context.Context, c Call) Fault {
		if c.N <= n {
			return f
		}
		return Fault{}
	}
}

// Store is an idemkit.OperatorStore and idemkit.StaleLister that wraps
// another and injects the faults its hooks say. It is safe for concurrent
// use; hooks run concurrently when calls do.
type Store struct {
	inner idemkit.OperatorStore

	mu    sync.Mutex
	hooks map[Method]Hook // guarded by mu
	calls []Call          // guarded by mu
	n     map[Method]int  // guarded by mu; the calls of each method
}

// New returns a Store over inner in which every call passes.
func New(inner idemkit.OperatorStore) *Store {
	return &Store{inner: inner, hooks: map[Method]Hook{}, n: map[Method]int{}}
}

// Inner returns the wrapped store. Calls made to it directly see no fault
// and are not recorded.
func (s *Store) Inner() idemkit.OperatorStore { return s.inner }

// On sets the hook of method m; a nil h lets every later call pass.
func (s *Store) On(m Method, h Hook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h == nil {
		delete(s.hooks, m)
		return
	}
	s.hooks[m] = h
}

// Calls returns the calls made to m so far, oldest first.
func (s *Store) Calls(m Method) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cs []Call
	for _, c := range s.calls {
		if c.Method == m {
			cs = append(cs, c)
		}
	}
	return cs
}

// Count returns the number of calls made to m so far.
func (s *Store) Count(m Method) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[m]
}

// run records c, asks its hook for a fault and applies it; answer makes
// the call to the wrapped store. It reports whether the wrapped store's
// answer is the call's, and the error to return when it is not.
func (s *Store) run(ctx context.Context, c Call, answer func() error) (answered bool, err error) {
	s.mu.Lock()
	s.n[c.Method]++
	c.N = s.n[c.Method]
	s.calls = append(s.calls, c)
	h := s.hooks[c.Method]
	s.mu.Unlock()
	var f Fault
	if h != nil {
		f = h(ctx, c)
	}
	answered, err = apply(ctx, c.Method, f, answer)
	if f.Then != nil {
		f.Then(err)
	}
	return answered, err
}

func apply(ctx context.Context, m Method, f Fault, answer func() error) (bool, error) {
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false, &idemkit.StoreError{Op: string(m), Err: ctx.Err()}
		}
	}
	switch {
	case f.Err != nil && f.Applied:
		answer() // its answer is the one lost
		return false, f.Err
	case f.Err != nil || f.Skip:
		return false, f.Err
	}
	return true, answer()
}

// Claim calls the wrapped store's Claim through its hook.
func (s *Store) Claim(ctx context.Context, rec *idemkit.Record, now time.Time) (idemkit.ClaimResult, error) {
	var res idemkit.ClaimResult
	var err error
	c := recordCall(Claim, rec, now)
	if ok, ferr := s.run(ctx, c, func() error { res, err = s.inner.Claim(ctx, rec, now); return err }); !ok {
		return idemkit.ClaimResult{}, ferr
	}
	return res, err
}

// Reclaim calls the wrapped store's Reclaim through its hook.
func (s *Store) Reclaim(ctx context.Context, rec, prev *idemkit.Record, now time.Time) (idemkit.ClaimResult, error) {
	var res idemkit.ClaimResult
	var err error
	c := recordCall(Reclaim, rec, now)
	c.Prev = prev.Clone()
	if ok, ferr := s.run(ctx, c, func() error { res, err = s.inner.Reclaim(ctx, rec, prev, now); return err }); !ok {
		return idemkit.ClaimResult{}, ferr
	}
	return res, err
}

// Complete calls the wrapped store's Complete through its hook.
func (s *Store) Complete(ctx context.Context, rec *idemkit.Record, now time.Time) error {
	var err error
	c := recordCall(Complete, rec, now)
	if ok, ferr := s.run(ctx, c, func() error { err = s.inner.Complete(ctx, rec, now); return err }); !ok {
		return ferr
	}
	return err
}

// recordCall is the Call of a method given a record.
func recordCall(m Method, rec *idemkit.Record, now time.Time) Call {
	c := Call{Method: m, Record: rec.Clone(), Now: now}
	if rec != nil {
		c.ID, c.Owner = rec.ID, rec.Owner
	}
	return c
}

// Release calls the wrapped store's Release through its hook.
func (s *Store) Release(ctx context.Context, id, owner string, now time.Time) error {
	return s.write(ctx, Call{Method: Release, ID: id, Owner: owner, Now: now}, func() error { return s.inner.Release(ctx, id, owner, now) })
}

// Extend calls the wrapped store's Extend through its hook.
func (s *Store) Extend(ctx context.Context, id, owner string, leaseUntil, now time.Time) error {
	c := Call{Method: Extend, ID: id, Owner: owner, LeaseUntil: leaseUntil, Now: now}
	return s.write(ctx, c, func() error { return s.inner.Extend(ctx, id, owner, leaseUntil, now) })
}

// MarkUnknown calls the wrapped store's MarkUnknown through its hook.
func (s *Store) MarkUnknown(ctx context.Context, id, owner string, now time.Time) error {
	return s.write(ctx, Call{Method: MarkUnknown, ID: id, Owner: owner, Now: now}, func() error { return s.inner.MarkUnknown(ctx, id, owner, now) })
}

// MarkIndeterminate calls the wrapped store's MarkIndeterminate through
// its hook.
func (s *Store) MarkIndeterminate(ctx context.Context, id, owner string, now time.Time) error {
	return s.write(ctx, Call{Method: MarkIndeterminate, ID: id, Owner: owner, Now: now}, func() error { return s.inner.MarkIndeterminate(ctx, id, owner, now) })
}

// write runs a call that returns only an error.
func (s *Store) write(ctx context.Context, c Call, do func() error) error {
	var err error
	if ok, ferr := s.run(ctx, c, func() error { err = do(); return err }); !ok {
		return ferr
	}
	return err
}

// Get calls the wrapped store's Get through its hook.
func (s *Store) Get(ctx context.Context, id string, now time.Time) (*idemkit.Record, error) {
	var rec *idemkit.Record
	var err error
	if ok, ferr := s.run(ctx, Call{Method: Get, ID: id, Now: now}, func() error { rec, err = s.inner.Get(ctx, id, now); return err }); !ok {
		return nil, ferr
	}
	return rec, err
}

// Resolve calls the wrapped store's Resolve through its hook.
func (s *Store) Resolve(ctx context.Context, id, owner string, res idemkit.Resolution, now time.Time) (*idemkit.Record, error) {
	var rec *idemkit.Record
	var err error
	kept := res
	kept.Snapshot = res.Snapshot.Clone()
	c := Call{Method: Resolve, ID: id, Owner: owner, Resolution: kept, Now: now}
	if ok, ferr := s.run(ctx, c, func() error { rec, err = s.inner.Resolve(ctx, id, owner, res, now); return err }); !ok {
		return nil, ferr
	}
	return rec, err
}

// ListIndeterminate calls the wrapped store's ListIndeterminate through
// its hook.
func (s *Store) ListIndeterminate(ctx context.Context, tenant, page string, limit int, now time.Time) ([]*idemkit.Record, string, error) {
	return s.list(ctx, Call{Method: ListIndeterminate, Tenant: tenant, Page: page, Limit: limit, Now: now}, func() ([]*idemkit.Record, string, error) {
		return s.inner.ListIndeterminate(ctx, tenant, page, limit, now)
	})
}

// ListsStale reports whether the wrapped store lists every stale lease.
func (s *Store) ListsStale() bool {
	sl, ok := s.inner.(idemkit.StaleLister)
	return ok && sl.ListsStale()
}

// ListStale calls the wrapped store's ListStale through its hook. A
// wrapped store that is no idemkit.StaleLister lists nothing and returns
// an error that is errors.ErrUnsupported.
func (s *Store) ListStale(ctx context.Context, tenant, page string, limit int, now time.Time) ([]*idemkit.Record, string, error) {
	return s.list(ctx, Call{Method: ListStale, Tenant: tenant, Page: page, Limit: limit, Now: now}, func() ([]*idemkit.Record, string, error) {
		sl, ok := s.inner.(idemkit.StaleLister)
		if !ok {
			return nil, "", fmt.Errorf("faultstore: the wrapped store lists no stale leases: %w", errors.ErrUnsupported)
		}
		return sl.ListStale(ctx, tenant, page, limit, now)
	})
}

// list runs a listing call.
func (s *Store) list(ctx context.Context, c Call, do func() ([]*idemkit.Record, string, error)) ([]*idemkit.Record, string, error) {
	var recs []*idemkit.Record
	var next string
	var err error
	if ok, ferr := s.run(ctx, c, func() error { recs, next, err = do(); return err }); !ok {
		return nil, "", ferr
	}
	return recs, next, err
}

var (
	_ idemkit.OperatorStore = (*Store)(nil)
	_ idemkit.StaleLister   = (*Store)(nil)
)
