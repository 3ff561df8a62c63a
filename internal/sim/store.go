package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemkit/idemkit"
)

// fault is what the fault layer does to one store call.
type fault uint8

const (
	fNone        fault = iota
	fLostAnswer        // applied, the answer lost (a reset, a timeout after the write)
	fLostRequest       // never reaches the store (a reset, a timeout before it)
	fThrottle          // refused by the store, not applied
	fLate              // held in the network, delivered by a later Deliver step; the caller times out
)

var faultNames = [...]string{"", "lost-answer", "lost-request", "throttle", "late"}

// errFault is the error a spoiled call returns.
func errFault(op string, f fault) error {
	return fmt.Errorf("sim: %s: %s: %w", op, faultNames[f], idemkit.ErrStoreUnavailable)
}

// heldCall is a write held in the network.
type heldCall struct {
	op    string
	who   string
	sent  time.Time     // on the sender's clock, which dates its signature
	skew  time.Duration // the sender's skew
	apply func()
}

// faultStore is the store every guard and operator uses: the world's
// store behind lost answers, lost requests, throttles and late copies,
// drawn from the current step's random source. It also records, from
// the store's own answers, what landed: the data the invariants read.
type faultStore struct {
	w     *World
	inner Store
}

var _ Store = (*faultStore)(nil)

// Store is what a world runs on: the operator tools must see every record
// that waits for a decision, stale leases included.
type Store interface {
	idemkit.OperatorStore
	idemkit.StaleLister
}

// draw decides the fault of a call; write says whether it may land late.
func (s *faultStore) draw(ctx context.Context, op string, write bool) fault {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	r := reqOf(ctx)
	if r != nil && r.exec != nil && r.exec.crashed {
		return fLostRequest
	}
	if w.p.FaultPct == 0 || w.rng.IntN(100) >= w.p.FaultPct {
		return fNone
	}
	f := fault(1 + w.rng.IntN(4))
	if !write && (f == fLate || f == fLostAnswer) {
		f = fThrottle
	}
	w.stats.Faults++
	if r != nil {
		r.faulted, r.injected = true, true
	}
	w.logf("  fault: %s of %s: %s", op, who(r), faultNames[f])
	return f
}

func who(r *request) string {
	if r == nil {
		return "the operator"
	}
	return fmt.Sprintf("r%d", r.n)
}

// hold keeps a late copy of a write.
func (s *faultStore) hold(ctx context.Context, op string, now time.Time, apply func()) {
	w := s.w
	r := reqOf(ctx)
	skew := time.Duration(0)
	if r != nil {
		skew = w.insts[r.inst].clock.skew
	}
	w.mu.Lock()
	w.held = append(w.held, &heldCall{op: op, who: who(r), sent: now, skew: skew, apply: apply})
	w.mu.Unlock()
}

// call runs one write through the fault layer: apply makes it on the
// store and returns its error.
func (s *faultStore) write(ctx context.Context, op string, now time.Time, apply func(ctx context.Context, late bool) error) error {
	switch f := s.draw(ctx, op, true); f {
	case fNone:
		return s.failed(ctx, apply(ctx, false))
	case fLostAnswer:
		_ = apply(ctx, false)
		return errFault(op, f)
	case fLate:
		vals := context.WithoutCancel(ctx)
		s.hold(ctx, op, now, func() { _ = apply(vals, true) })
		return errFault(op, f)
	default:
		return errFault(op, f)
	}
}

// failed notes a store failure that was not injected (a real server's)
// as a fault of the request, and returns err.
func (s *faultStore) failed(ctx context.Context, err error) error {
	if r := reqOf(ctx); r != nil && errors.Is(err, idemkit.ErrStoreUnavailable) {
		s.w.mu.Lock()
		r.faulted = true
		s.w.mu.Unlock()
	}
	return err
}

func (s *faultStore) read(ctx context.Context, op string) error {
	if f := s.draw(ctx, op, false); f != fNone {
		return errFault(op, f)
	}
	return nil
}

func (s *faultStore) Claim(ctx context.Context, rec *idemkit.Record, now time.Time) (idemkit.ClaimResult, error) {
	return s.claim(ctx, "claim", rec, nil, now)
}

func (s *faultStore) Reclaim(ctx context.Context, rec, prev *idemkit.Record, now time.Time) (idemkit.ClaimResult, error) {
	return s.claim(ctx, "reclaim", rec, prev, now)
}

// claim makes a Claim (prev nil) or a Reclaim through the fault layer and
// checks each one that lands.
func (s *faultStore) claim(ctx context.Context, op string, rec, prev *idemkit.Record, now time.Time) (idemkit.ClaimResult, error) {
	w := s.w
	if r := reqOf(ctx); r != nil {
		w.mu.Lock()
		if r.owner == "" {
			r.owner = rec.Owner
			w.owners[rec.Owner] = r
		}
		r.recID = rec.ID
		if !w.recSeen[rec.ID] {
			w.recSeen[rec.ID] = true
			w.recIDs = append(w.recIDs, rec.ID)
		}
		w.mu.Unlock()
	}
	c, p := rec.Clone(), prev.Clone()
	var res idemkit.ClaimResult
	err := s.write(ctx, op, now, func(ctx context.Context, late bool) error {
		pre, _ := s.inner.Get(context.Background(), c.ID, now)
		var out idemkit.ClaimResult
		var err error
		if p == nil {
			out, err = s.inner.Claim(ctx, c, now)
		} else {
			out, err = s.inner.Reclaim(ctx, c, p, now)
		}
		if err == nil {
			if !late {
				res = out
			}
			if out.Won {
				w.mu.Lock()
				w.claimed(reqOf(ctx), c, pre, p, now, late)
				w.mu.Unlock()
			}
		}
		return err
	})
	return res, err
}

func (s *faultStore) Complete(ctx context.Context, rec *idemkit.Record, now time.Time) error {
	c := rec.Clone()
	return s.write(ctx, "complete", now, func(ctx context.Context, late bool) error {
		err := s.inner.Complete(ctx, c, now)
		if err == nil {
			s.w.unhold(c.ID)
		}
		if err == nil && late {
			s.w.mu.Lock()
			s.w.logf("  late completion of %s landed", c.Owner)
			s.w.mu.Unlock()
		}
		return err
	})
}

func (s *faultStore) Release(ctx context.Context, id, owner string, now time.Time) error {
	return s.write(ctx, "release", now, func(ctx context.Context, late bool) error {
		err := s.inner.Release(ctx, id, owner, now)
		if err == nil {
			s.w.unhold(id)
			s.w.mu.Lock()
			s.w.logf("  release of %s landed at %s", owner, s.w.since(now))
			s.w.mu.Unlock()
		}
		return err
	})
}

func (s *faultStore) Extend(ctx context.Context, id, owner string, leaseUntil, now time.Time) error {
	return s.write(ctx, "extend", now, func(ctx context.Context, late bool) error {
		return s.inner.Extend(ctx, id, owner, leaseUntil, now)
	})
}

func (s *faultStore) MarkUnknown(ctx context.Context, id, owner string, now time.Time) error {
	return s.write(ctx, "mark-unknown", now, func(ctx context.Context, late bool) error {
		err := s.inner.MarkUnknown(ctx, id, owner, now)
		if err == nil {
			s.w.unhold(id)
		}
		return err
	})
}

func (s *faultStore) MarkIndeterminate(ctx context.Context, id, owner string, now time.Time) error {
	return s.write(ctx, "mark-indeterminate", now, func(ctx context.Context, late bool) error {
		err := s.inner.MarkIndeterminate(ctx, id, owner, now)
		if err == nil {
			s.w.unhold(id)
		}
		return err
	})
}

func (s *faultStore) Resolve(ctx context.Context, id, owner string, res idemkit.Resolution, now time.Time) (*idemkit.Record, error) {
	var out *idemkit.Record
	err := s.write(ctx, "resolve", now, func(ctx context.Context, late bool) error {
		pre, _ := s.inner.Get(context.Background(), id, now)
		r, err := s.inner.Resolve(ctx, id, owner, res, now)
		if !late {
			out = r
		}
		if err == nil {
			s.w.mu.Lock()
			s.w.resolved(pre, res, late)
			s.w.mu.Unlock()
		}
		return err
	})
	return out, err
}

func (s *faultStore) Get(ctx context.Context, id string, now time.Time) (*idemkit.Record, error) {
	if err := s.read(ctx, "get"); err != nil {
		return nil, err
	}
	rec, err := s.inner.Get(ctx, id, now)
	return rec, s.failed(ctx, err)
}

func (s *faultStore) ListIndeterminate(ctx context.Context, tenant, page string, limit int, now time.Time) ([]*idemkit.Record, string, error) {
	if err := s.read(ctx, "list-indeterminate"); err != nil {
		return nil, "", err
	}
	return s.inner.ListIndeterminate(ctx, tenant, page, limit, now)
}

func (s *faultStore) ListsStale() bool { return s.inner.ListsStale() }

func (s *faultStore) ListStale(ctx context.Context, tenant, page string, limit int, now time.Time) ([]*idemkit.Record, string, error) {
	if err := s.read(ctx, "list-stale"); err != nil {
		return nil, "", err
	}
	return s.inner.ListStale(ctx, tenant, page, limit, now)
}

// unhold notes that a write ended the in_flight state of record id now.
func (w *World) unhold(id string) {
	w.mu.Lock()
	w.unheld[id] = w.tl.Now()
	w.mu.Unlock()
}
