package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
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

// Get reads through the fault layer.
func (s *faultStore) Get(ctx context.Context, id string) (*idemkit.Record, error) {
	if err := s.read(ctx, "get"); err != nil {
		return nil, err
	}
	rec, err := s.inner.Get(ctx, id)
	return rec, s.failed(ctx, err)
}

// Create writes through the fault layer.
func (s *faultStore) Create(ctx context.Context, rec *idemkit.Record) (*idemkit.Record, error) {
	return s.put(ctx, rec, nil)
}

// Replace writes through the fault layer.
func (s *faultStore) Replace(ctx context.Context, rec, prev *idemkit.Record) (*idemkit.Record, error) {
	return s.put(ctx, rec, prev)
}

// put makes a Create (prev nil) or a Replace through the fault layer, and
// checks what each one that lands stores, by the change it makes
// (faultstore.Op): a claim, a completion, a release, a mark, a
// resolution.
func (s *faultStore) put(ctx context.Context, rec, prev *idemkit.Record) (*idemkit.Record, error) {
	w := s.w
	op := faultstore.Op(rec, prev)
	r := reqOf(ctx)
	now := w.tl.Now()
	if r != nil {
		now = w.insts[r.inst].clock.Now()
	}
	if r != nil && (op == faultstore.OpClaim || op == faultstore.OpRelease) {
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
	var met *idemkit.Record
	name := op
	if name == "" {
		name = "write"
	}
	err := s.write(ctx, name, now, func(ctx context.Context, late bool) error {
		// The record as stored before the write, read straight (in two
		// regions: where the write is routed).
		pre, _ := s.inner.Get(context.Background(), c.ID)
		var out *idemkit.Record
		var err error
		if p == nil {
			out, err = s.inner.Create(ctx, c)
		} else {
			out, err = s.inner.Replace(ctx, c, p)
		}
		if !late {
			met = out
		}
		stored := err == nil && out == nil
		w.mu.Lock()
		defer w.mu.Unlock()
		w.regionWrite(reqOf(ctx), op, c, pre, out, err, now)
		if !stored {
			return err
		}
		switch op {
		case faultstore.OpClaim:
			w.claimed(reqOf(ctx), c, live(pre, now), p, now, late)
		case faultstore.OpComplete, faultstore.OpRelease, faultstore.OpMarkUnknown, faultstore.OpMarkIndeterminate:
			w.unheld[c.ID] = w.tl.Now()
			switch {
			case op == faultstore.OpRelease:
				w.logf("  release of %s landed at %s", c.Owner, w.since(now))
			case late && op == faultstore.OpComplete:
				w.logf("  late completion of %s landed", c.Owner)
			}
		case faultstore.OpResolve:
			w.resolved(live(pre, now), c, late)
		}
		return nil
	})
	return met, err
}

// live returns rec when it is a live record at now: not released, not
// expired; nil otherwise.
func live(rec *idemkit.Record, now time.Time) *idemkit.Record {
	if rec == nil || rec.State == idemkit.StateReleased || !rec.Live(now) {
		return nil
	}
	return rec
}

// liveRecord reads the live record id at now, straight from the store
// (ctx says where, in two regions): nil when none is stored, or it is
// released or expired at now.
func (w *World) liveRecord(ctx context.Context, id string, now time.Time) *idemkit.Record {
	rec, err := w.inner.Get(ctx, id)
	if err != nil {
		return nil
	}
	return live(rec, now)
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
