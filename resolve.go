package idemkit

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idemkit/idemkit/internal/httpheader"
	"github.com/idemkit/idemkit/internal/policydefault"
	"github.com/idemkit/idemkit/internal/setting"
)

// ErrMayBeRunning: [Resolve] refused a decision because the record's
// execution may still be running, or a write it sent may still reach the
// store. The error is a *ResolveError that says from when the decision is
// accepted.
var ErrMayBeRunning = errors.New("idemkit: the execution may still be running")

// ResolveError says why [Resolve] refused a decision. Nothing was changed.
type ResolveError struct {
	// Reason is ErrMayBeRunning, or ErrNotIndeterminate for a record that
	// is completed or failed.
	Reason error
	// Record is the record as read.
	Record *Record
	// ResolvableAt, with ErrMayBeRunning, is when the decision is accepted.
	ResolvableAt time.Time
}

func (e *ResolveError) Error() string {
	if e.Reason == ErrMayBeRunning {
		return fmt.Sprintf("%v (record %s, lease until %s): resolvable from %s", e.Reason, e.Record.State,
			e.Record.LeaseUntil.UTC().Format(time.RFC3339), e.ResolvableAt.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("%v: it is %s", e.Reason, e.Record.State)
}

func (e *ResolveError) Unwrap() error { return e.Reason }

// Resolve records an operator's decision res on the record with id, at now.
// It returns the resolved record and the state the record had when read:
// indeterminate, or in_flight when Resolve marked it indeterminate first.
//
// An indeterminate record is resolved. An in_flight record whose lease has
// ended is first marked indeterminate, in place of the version read, as a
// retry under FailClosed does. If the record changed meanwhile (completed,
// released, taken over), the mark is refused, nothing is changed, and the
// error is ErrNotOwner.
//
// Resolve refuses while the execution may still be running. In every
// state, that is until a minute (the clock skew tolerated) after the
// record's LeaseUntil. Marking a record indeterminate keeps its
// LeaseUntil, even when a retry whose clock runs ahead marks it early; a
// run that reports its outcome unknown ends it at the time of that
// report. A failed decision frees the key, so it waits MaxWriteDelay
// longer, until no copy of the execution's
// claim can land on the freed key and hold it again. Both refusals are a
// *ResolveError whose Reason is ErrMayBeRunning. A completed or failed
// record gets one whose Reason is ErrNotIndeterminate.
//
// A completed decision whose Snapshot holds a header a replay never
// carries (see the adapters' ReplayHeaders) is refused with
// ErrRecordInvalid before anything is read.
//
// Resolve sets res.ResolvedAt to now. For a completed decision it counts
// the record's replay window again from now. It sets res.ReplayUntil to the
// window's end, and res.ExpiresAt to that end plus the time the record was
// kept past its own window. Each is set only where it is later than the
// record's, and left zero otherwise. So retries after a late resolution get
// the answer, not only its outcome. For a failed decision both stay zero.
//
// Each write replaces only the version read: the decision applies to the
// run checked and to no later one. A write whose answer was lost is sent
// again and recognised by its version. When another writer changed the
// record first, the error is ErrNotIndeterminate. A record marked here but not resolved (the store
// failed) stays indeterminate, and Resolve may be called again.
func Resolve(ctx context.Context, s OperatorStore, id string, res Resolution, now time.Time) (rec *Record, was State, err error) {
	if err := res.check(); err != nil {
		return nil, "", err
	}
	res.ResolvedAt, res.ReplayUntil, res.ExpiresAt = now, time.Time{}, time.Time{}
	cur, err := resolvable(ctx, s, id, now)
	if cur == nil {
		return nil, "", err
	}
	was = cur.State
	if err != nil {
		return nil, was, err
	}
	from := cur.LeaseUntil.Add(hostSkew)
	if res.As == StateFailed {
		from = from.Add(MaxWriteDelay)
	}
	if now.Before(from) {
		return nil, was, &ResolveError{Reason: ErrMayBeRunning, Record: cur, ResolvableAt: from}
	}
	w := writer{store: s, now: func() time.Time { return now }, attempts: resolveAttempts, backoff: resolveBackoff, sleep: sleepCtx}
	version := &versions{owner: rand.Text()}
	if cur.State == StateInFlight {
		marked, _, err := w.apply(ctx, cur, change{op: opMarkStale, owner: cur.Owner, version: version})
		switch {
		case errors.Is(err, ErrNotOwner), errors.Is(err, errChanging):
			return nil, was, fmt.Errorf("idemkit: resolve: the record changed before it could be marked indeterminate (completed, released, or taken over); nothing was changed (read it to see how): %w", ErrNotOwner)
		case err != nil:
			return nil, was, err
		}
		cur = marked
	}
	if res.As == StateCompleted {
		res.ReplayUntil, res.ExpiresAt = replayAgain(cur, now)
	}
	// The decision applies to the version checked and to no later run.
	out, _, err := w.apply(ctx, cur, change{op: opResolve, res: &res, checked: cur.Version, version: version})
	switch {
	case errors.Is(err, ErrNotIndeterminate), errors.Is(err, errChanging):
		return nil, was, fmt.Errorf("idemkit: resolve: another writer changed the record first; nothing was changed (read it to see how): %w", ErrNotIndeterminate)
	case err != nil && was == StateInFlight:
		return nil, was, fmt.Errorf("idemkit: resolve: the record was marked indeterminate but not resolved (resolve it again): %w", err)
	case err != nil:
		return nil, was, err
	}
	return out, was, nil
}

// Attempts of each write of Resolve that fails, and the pause before the
// second; the n-th waits n times as long.
const (
	resolveAttempts = 3
	resolveBackoff  = 100 * time.Millisecond
)

// sleepCtx waits d on the system clock, or reports false when ctx is done
// first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// resolvable reads the record with id that a decision at now would
// resolve: an error with a nil record when there is none live, and with
// the record when it is completed, failed or of an unknown state.
func resolvable(ctx context.Context, s Store, id string, now time.Time) (*Record, error) {
	cur, err := read(ctx, s, id)
	switch {
	case err != nil:
		return nil, err
	case free(cur, now):
		return nil, ErrNotFound
	}
	switch cur.State {
	case StateIndeterminate, StateInFlight:
		return cur, nil
	case StateCompleted, StateFailed:
		return cur, &ResolveError{Reason: ErrNotIndeterminate, Record: cur}
	}
	return cur, fmt.Errorf("%w: record %q has unknown state %q", ErrCorruptRecord, id, cur.State)
}

// check refuses a decision that is neither completed nor failed, or
// completed without an answer a replay may carry.
func (res Resolution) check() error {
	switch {
	case res.As != StateCompleted && res.As != StateFailed:
		return fmt.Errorf("%w: resolve as %q: want completed or failed", ErrRecordInvalid, res.As)
	case res.As == StateCompleted && res.Snapshot == nil:
		return fmt.Errorf("%w: resolve as completed without a snapshot", ErrRecordInvalid)
	case res.As == StateCompleted:
		if err := replayable(res.Snapshot.Header); err != nil {
			return fmt.Errorf("%w: resolve as completed: %v", ErrRecordInvalid, err)
		}
	}
	return nil
}

// replayAgain returns the replay window and expiry of an answer resolved at
// now: the record's own replay window and retention, counted again from
// now. Times already later are kept (zero).
func replayAgain(rec *Record, now time.Time) (replayUntil, expiresAt time.Time) {
	window := setting.Or(rec.ReplayUntil.Sub(rec.CreatedAt), policydefault.ReplayWindow)
	keep := max(rec.ExpiresAt.Sub(rec.ReplayUntil), 0)
	if ru := now.Add(window); ru.After(rec.ReplayUntil) {
		replayUntil = ru
	}
	if ea := now.Add(window + keep); ea.After(rec.ExpiresAt) {
		expiresAt = ea
	}
	return replayUntil, expiresAt
}

// replayable refuses a header a replay must never carry: a name that is
// not an HTTP token or is never replayed, or a value that holds a control
// character.
func replayable(h http.Header) error {
	for name, vs := range h {
		if !httpheader.ValidName(name) || httpheader.NeverReplayed(name) {
			return fmt.Errorf("header %q is never replayed", name)
		}
		for _, v := range vs {
			if !httpheader.ValidValue(v) {
				return fmt.Errorf("header %s: value holds a control character", name)
			}
		}
	}
	return nil
}
