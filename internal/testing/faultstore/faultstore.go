// Package faultstore is the fault-injecting store the tests share.
//
// A Store wraps an idemkit.OperatorStore. A Hook set on a method (Get,
// Create, Replace, a listing) decides, call by call, what happens to the
// call: it fails, it fails after its write landed (a lost answer), it
// waits first, it never reaches the wrapped store, or it passes; and what
// runs once it returns. Every call is recorded, hooked or not, so that a
// test can count them.
//
// A store is a box of versioned records: the engine's changes (a claim, a
// completion, a release...) all reach it as a Create or a Replace. Op
// names the change a write makes by what it writes, and a Hook set with
// OnOp applies to the writes of one change only:
//
//	fs := faultstore.New(memstore.New())
//	fs.OnOp(faultstore.OpClaim, faultstore.First(1, faultstore.Fault{Err: errReset, Applied: true}))
//	fs.OnOp(faultstore.OpComplete, faultstore.Fail(errThrottled))
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
	Get               Method = "Get"
	Create            Method = "Create"
	Replace           Method = "Replace"
	ListIndeterminate Method = "ListIndeterminate"
	ListStale         Method = "ListStale"
)

// Methods returns every Method, in the order the store interfaces
// declare them.
func Methods() []Method {
	return []Method{Get, Create, Replace, ListIndeterminate, ListStale}
}

// The changes the engine makes to a record, as Op names them.
const (
	// OpClaim: an in_flight record of a new owner, created or in place of
	// another record (a free one, a failed one, a stale lease taken over).
	OpClaim = "claim"
	// OpComplete: a run stores its outcome (completed, no Resolution).
	OpComplete = "complete"
	// OpRelease: a run frees the key (a released tombstone).
	OpRelease = "release"
	// OpExtend: a run renews its lease (in_flight to in_flight, same
	// owner).
	OpExtend = "extend"
	// OpMarkUnknown: a run reports its outcome unknown (indeterminate,
	// CauseOutcomeUnknown).
	OpMarkUnknown = "mark unknown"
	// OpMarkIndeterminate: a request or Resolve marks a stale lease
	// (indeterminate, CauseLeaseExpired).
	OpMarkIndeterminate = "mark indeterminate"
	// OpResolve: an operator's decision (completed or failed with a
	// Resolution).
	OpResolve = "resolve"
)

// Ops returns every change Op names.
func Ops() []string {
	return []string{OpClaim, OpComplete, OpRelease, OpExtend, OpMarkUnknown, OpMarkIndeterminate, OpResolve}
}

// Op names the change that writing rec in place of prev makes (prev nil:
// a Create), by what it writes: one of the Op constants, or "" for a
// record the engine never writes (a failed record without a Resolution).
// A Create of a completed record, as a test seeds one, is OpComplete.
func Op(rec, prev *idemkit.Record) string {
	if rec == nil {
		return ""
	}
	switch rec.State {
	case idemkit.StateReleased:
		return OpRelease
	case idemkit.StateInFlight:
		if prev != nil && prev.State == idemkit.StateInFlight && prev.Owner == rec.Owner {
			return OpExtend
		}
		return OpClaim
	case idemkit.StateIndeterminate:
		if rec.Cause == idemkit.CauseOutcomeUnknown {
			return OpMarkUnknown
		}
		return OpMarkIndeterminate
	case idemkit.StateCompleted, idemkit.StateFailed:
		if rec.Resolution != nil {
			return OpResolve
		}
		if rec.State == idemkit.StateCompleted {
			return OpComplete
		}
	}
	return ""
}

// Call is one call made to a Store, with its arguments. A field that the
// method does not take is zero.
type Call struct {
	Method Method
	// N is the call's number, from 1, among the calls its hook was set
	// for: those of its method for a hook set with On, those of its Op for
	// one set with OnOp. In Calls it counts the method's calls, in CallsOp
	// the Op's.
	N int
	// Op is the change a Create or Replace makes (see Op).
	Op string

	ID    string
	Owner string // the written record's Owner
	// Record is a copy of the record passed to Create or Replace.
	Record *idemkit.Record
	// Prev is a copy of the record a Replace replaces, as its caller read it.
	Prev *idemkit.Record
	// Tenant, Page, Limit and Now are a listing's.
	Tenant, Page string
	Limit        int
	Now          time.Time

	methodN, opN int
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
	// write lands and its answer is lost, as on a timeout or a reset.
	Applied bool
	// Skip keeps the call from the wrapped store even without Err: it
	// returns zero values and Err. For a write with a nil Err that is a
	// write reported stored that never landed.
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

// First returns a Hook giving the first n calls it was set for f (see
// Call.N); later calls pass. The count is the Store's, from the first such
// call, whenever the Hook was set.
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

	mu      sync.Mutex
	hooks   map[Method]Hook // guarded by mu
	opHooks map[string]Hook // guarded by mu
	calls   []Call          // guarded by mu
	n       map[Method]int  // guarded by mu; the calls of each method
	opN     map[string]int  // guarded by mu; the writes of each Op
}

// New returns a Store over inner in which every call passes.
func New(inner idemkit.OperatorStore) *Store {
	return &Store{inner: inner, hooks: map[Method]Hook{}, opHooks: map[string]Hook{}, n: map[Method]int{}, opN: map[string]int{}}
}

// Inner returns the wrapped store. Calls made to it directly see no fault
// and are not recorded.
func (s *Store) Inner() idemkit.OperatorStore { return s.inner }

// On sets the hook of method m; a nil h lets every later call pass. A
// write whose Op has a hook (OnOp) gets that one instead.
func (s *Store) On(m Method, h Hook) { setHook(s, s.hooks, m, h) }

// OnOp sets the hook of the writes (Create, Replace) whose Op is op; a
// nil h removes it. It takes precedence over the hook of the method.
func (s *Store) OnOp(op string, h Hook) { setHook(s, s.opHooks, op, h) }

// setHook sets hooks[k] to h under s's lock; a nil h removes it.
func setHook[K comparable](s *Store, hooks map[K]Hook, k K, h Hook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h == nil {
		delete(hooks, k)
		return
	}
	hooks[k] = h
}

// Calls returns the calls made to m so far, oldest first.
func (s *Store) Calls(m Method) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cs []Call
	for _, c := range s.calls {
		if c.Method == m {
			c.N = c.methodN
			cs = append(cs, c)
		}
	}
	return cs
}

// CallsOp returns the writes whose Op is op made so far, oldest first.
func (s *Store) CallsOp(op string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cs []Call
	for _, c := range s.calls {
		if c.Op == op && (c.Method == Create || c.Method == Replace) {
			c.N = c.opN
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

// CountOp returns the number of writes whose Op is op made so far.
func (s *Store) CountOp(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opN[op]
}

// run records c, asks its hook for a fault and applies it; answer makes
// the call to the wrapped store. It reports whether the wrapped store's
// answer is the call's, and the error to return when it is not.
func (s *Store) run(ctx context.Context, c Call, answer func() error) (answered bool, err error) {
	write := c.Method == Create || c.Method == Replace
	s.mu.Lock()
	s.n[c.Method]++
	c.methodN = s.n[c.Method]
	c.N = c.methodN
	if write {
		s.opN[c.Op]++
		c.opN = s.opN[c.Op]
	}
	s.calls = append(s.calls, c)
	h := s.hooks[c.Method]
	if oh, ok := s.opHooks[c.Op]; write && ok {
		h, c.N = oh, c.opN
	}
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

// Get calls the wrapped store's Get through its hook.
func (s *Store) Get(ctx context.Context, id string) (*idemkit.Record, error) {
	var rec *idemkit.Record
	var err error
	if ok, ferr := s.run(ctx, Call{Method: Get, ID: id}, func() error { rec, err = s.inner.Get(ctx, id); return err }); !ok {
		return nil, ferr
	}
	return rec, err
}

// Create calls the wrapped store's Create through its hook.
func (s *Store) Create(ctx context.Context, rec *idemkit.Record) (*idemkit.Record, error) {
	var met *idemkit.Record
	var err error
	c := writeCall(Create, rec, nil)
	if ok, ferr := s.run(ctx, c, func() error { met, err = s.inner.Create(ctx, rec); return err }); !ok {
		return nil, ferr
	}
	return met, err
}

// Replace calls the wrapped store's Replace through its hook.
func (s *Store) Replace(ctx context.Context, rec, prev *idemkit.Record) (*idemkit.Record, error) {
	var met *idemkit.Record
	var err error
	c := writeCall(Replace, rec, prev)
	if ok, ferr := s.run(ctx, c, func() error { met, err = s.inner.Replace(ctx, rec, prev); return err }); !ok {
		return nil, ferr
	}
	return met, err
}

// writeCall is the Call of a write of rec in place of prev.
func writeCall(m Method, rec, prev *idemkit.Record) Call {
	c := Call{Method: m, Op: Op(rec, prev), Record: rec.Clone(), Prev: prev.Clone()}
	if rec != nil {
		c.ID, c.Owner = rec.ID, rec.Owner
	}
	return c
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
