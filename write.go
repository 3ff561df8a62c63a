package idemkit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// writer makes the engine's changes to records in a Store: it decides each
// with next, and writes the result with Create or Replace.
type writer struct {
	store    Store
	now      func() time.Time
	attempts int           // attempts of a write that fails (at least 1)
	backoff  time.Duration // the pause before the second attempt; the n-th waits n times as long
	// timeout bounds each attempt, and span all of them with the pauses
	// between them (0: only ctx does).
	timeout, span time.Duration
	// sleep waits d, or reports false when ctx is done or its deadline
	// comes first.
	sleep func(ctx context.Context, d time.Duration) bool
}

// conflicts bounds how many times a write decides again from a record
// that changed under it.
const conflicts = 3

// errChanging: the record kept changing under a write.
var errChanging = errors.New("idemkit: the record keeps changing")

// apply makes the change c to a key's record, deciding from prev, the
// record as last read or written (nil when none is known to be stored).
// It returns the record stored by the change, and the record it replaced
// (nil when it created one). A refusal of next is returned with the record
// that refused it, as cur.
//
// A write that fails is sent again, the same record with the same
// Version, up to w.attempts times, within w.timeout each and w.span in
// all: one that landed with its answer lost is then met, and recognised
// as ours. A write that finds the record changed decides again from the
// record met, at most conflicts times.
func (w writer) apply(ctx context.Context, prev *Record, c change) (cur, replaced *Record, err error) {
	var out *Record
	failures, changed := 0, 0
	end := w.spanEnd()
	for {
		if out == nil {
			if out, err = next(prev, c, w.now()); err != nil {
				return prev, nil, err
			}
			out.Version = c.version.next()
		}
		met, err := w.write(ctx, end, out, prev)
		switch {
		case err == nil && met == nil:
			return out, prev, nil
		case err == nil && met.Version == out.Version:
			// Our own write, landed with its answer lost.
			return met, prev, nil
		case err == nil || errors.Is(err, ErrNotFound):
			if changed++; changed > conflicts {
				return met, nil, errChanging
			}
			prev, out = met, nil
		case final(err):
			// Nothing was written, and trying again gives the same answer.
			return prev, nil, fmt.Errorf("idemkit: store %s: %w", c.op, err)
		default:
			if failures++; !w.again(ctx, end, failures) {
				// Named by the change, whatever call of the store failed.
				return prev, nil, &StoreError{Op: c.op.String(), Err: err}
			}
		}
	}
}

// spanEnd returns when a span begun now ends, on the system's clock as a
// context's deadline is; the zero time when w has no span.
func (w writer) spanEnd() time.Time {
	if w.span <= 0 {
		return time.Time{}
	}
	return time.Now().Add(w.span)
}

// again reports whether a write that failed for the failures-th time is
// sent again, and waits its pause first: attempts are left, ctx is not
// done, and the pause ends before the span does (at end, when set).
func (w writer) again(ctx context.Context, end time.Time, failures int) bool {
	pause := time.Duration(failures) * w.backoff
	if failures >= w.attempts || ctx.Err() != nil || (!end.IsZero() && time.Until(end) < pause) {
		return false
	}
	return w.sleep(ctx, pause)
}

// write stores out in place of prev, or where none is when prev is nil,
// within w.timeout, and before end when it is set.
func (w writer) write(ctx context.Context, end time.Time, out, prev *Record) (met *Record, err error) {
	if w.timeout > 0 {
		dl := time.Now().Add(w.timeout)
		if !end.IsZero() && end.Before(dl) {
			dl = end
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl)
		defer cancel()
	}
	if prev == nil {
		return w.store.Create(ctx, out)
	}
	return w.store.Replace(ctx, out, prev)
}

// final reports whether a store error says nothing was written and
// trying again gives the same answer: the store refused the record, could
// not decode the one it met, or cannot store anything.
func final(err error) bool {
	return errors.Is(err, ErrRecordInvalid) || errors.Is(err, ErrCorruptRecord) || errors.Is(err, ErrNothingStored)
}

// read returns the record stored with id, nil when none is.
func read(ctx context.Context, s Store, id string) (*Record, error) {
	r, err := s.Get(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, storeErr("get", err)
	case r == nil:
		return nil, fmt.Errorf("%w: the store returned no record and no error for %q", ErrCorruptRecord, id)
	}
	return r, nil
}

// storeErr wraps err so that it is ErrStoreUnavailable under errors.Is,
// unless it is one of the store's sentinel outcomes. A *StoreError already
// names its operation and is returned as is.
func storeErr(op string, err error) error {
	var se *StoreError
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(err, ErrStoreUnavailable) || errors.Is(err, ErrNotOwner) || errors.Is(err, ErrCorruptRecord) ||
		errors.Is(err, ErrRecordInvalid) {
		return fmt.Errorf("idemkit: store %s: %w", op, err)
	}
	return &StoreError{Op: op, Err: err}
}
