package idemkit

import (
	"errors"
	"strconv"
	"sync/atomic"
	"time"
)

// op is a change the engine makes to a key's record.
type op int

const (
	opClaim       op = iota // store a claim: change.rec, in_flight
	opComplete              // the run change.rec stores its outcome
	opRelease               // the run change.rec frees the key
	opExtend                // the run change.rec renews its lease to change.until
	opMarkUnknown           // the run change.rec reports its outcome unknown
	opMarkStale             // a request marks the stale lease of run change.owner indeterminate
	opResolve               // an operator records change.res on the version change.checked
)

var opNames = [...]string{"claim", "complete", "release", "extend", "mark unknown", "mark indeterminate", "resolve"}

func (o op) String() string { return opNames[o] }

// change is what the engine asks of a key's record, and who asks.
type change struct {
	op op
	// rec is the claim to store (opClaim), or the acting run's claim
	// (opComplete, opRelease, opExtend, opMarkUnknown): its ID, Scope and
	// Owner name the run.
	rec *Record
	// replace is the Version of a record that a claim may replace when
	// the rules allow it (failed; a stale lease under takeover): the
	// record the caller read and judged. Free records (none, released,
	// expired) need no such choice.
	replace  string
	takeover bool // opClaim: a stale lease may be taken over
	// judged: the claim may replace only the record replace names, never
	// a free key (a key older than the record retention is claimed only in
	// place of a live record).
	judged bool

	snap        *Snapshot // opComplete
	completedAt time.Time // opComplete
	until       time.Time // opExtend
	owner       string    // opMarkStale: the owner of the stale lease
	res         *Resolution
	checked     string // opResolve: the Version the operator checked

	// version returns a fresh Version for each write the change makes
	// (the writer's, see versions); next does not read it.
	version *versions
}

// Refusals of next that are not store errors: the caller reads the
// record it was given to tell what to do.
var (
	// errHeld: a claim found a record it may not replace.
	errHeld = errors.New("idemkit: the key is held")
	// errNoChange: a renewal that would move the lease back.
	errNoChange = errors.New("idemkit: nothing to change")
)

// free reports whether r counts as no record at now: none, a released
// key's tombstone, or expired.
func free(r *Record, now time.Time) bool {
	return r == nil || r.State == StateReleased || !r.Live(now)
}

// next returns the record to store in place of prev (nil: none is stored)
// for c at now, without its Version, or the reason c is refused: errHeld,
// errNoChange, ErrNotOwner or ErrNotIndeterminate. It is the one place the
// rules of a record's life are written (see State); it reads nothing but
// its arguments and changes none of them.
func next(prev *Record, c change, now time.Time) (*Record, error) {
	out, err := decide(prev, c, now)
	if out != nil {
		out.Version = ""
	}
	return out, err
}

func decide(prev *Record, c change, now time.Time) (*Record, error) {
	switch c.op {
	case opClaim:
		return nextClaim(prev, c, now)
	case opResolve:
		return nextResolve(prev, c, now)
	case opMarkStale:
		return nextMarkStale(prev, c, now)
	case opRelease:
		return nextRelease(prev, c, now)
	case opComplete:
		return nextComplete(prev, c, now)
	}
	return nextRunWrite(prev, c, now)
}

// nextMarkStale marks the stale lease of run c.owner indeterminate: the
// live in_flight record of that run, whose lease has ended.
func nextMarkStale(prev *Record, c change, now time.Time) (*Record, error) {
	if free(prev, now) || prev.State != StateInFlight || prev.Owner != c.owner || !prev.LeaseExpired(now) {
		return nil, ErrNotOwner
	}
	out := prev.Clone()
	out.State, out.Cause = StateIndeterminate, CauseLeaseExpired
	return out, nil
}

// nextComplete stores the run's outcome over its live record: in flight,
// or indeterminate and not resolved (a late completion replaces an
// unknown outcome no operator has decided: a known outcome is better).
func nextComplete(prev *Record, c change, now time.Time) (*Record, error) {
	if free(prev, now) || prev.Owner != c.rec.Owner ||
		prev.State != StateInFlight && (prev.State != StateIndeterminate || prev.Resolution != nil) {
		return nil, ErrNotOwner
	}
	out := prev.Clone()
	// The snapshot is shared, not copied: neither next nor a store
	// changes it.
	out.State, out.Cause, out.CompletedAt, out.Snapshot = StateCompleted, "", c.completedAt, c.snap
	return out, nil
}

// nextRunWrite makes the run's other writes over its live in_flight
// record: a renewal (never back) or its report of an unknown outcome.
func nextRunWrite(prev *Record, c change, now time.Time) (*Record, error) {
	if free(prev, now) || prev.Owner != c.rec.Owner || prev.State != StateInFlight {
		return nil, ErrNotOwner
	}
	out := prev.Clone()
	switch {
	case c.op == opExtend && c.until.Before(prev.LeaseUntil):
		// Never back: a renewal decided before a later one landed.
		return nil, errNoChange
	case c.op == opExtend:
		out.LeaseUntil = c.until
	case c.op == opMarkUnknown:
		out.State, out.Cause, out.LeaseUntil = StateIndeterminate, CauseOutcomeUnknown, now
	default:
		return nil, ErrNotOwner
	}
	return out, nil
}

// nextClaim stores c.rec where the key is free, and in place of the
// record c.replace names where it may be replaced: a failed one, or a
// stale lease under takeover; the key then keeps its first fingerprint.
// A claim that meets itself marked early takes itself back in flight.
func nextClaim(prev *Record, c change, now time.Time) (*Record, error) {
	out := c.rec.Clone()
	switch {
	case free(prev, now) && !c.judged:
		return out, nil
	case !free(prev, now) && markedEarly(prev, c.rec.Owner, now):
		// Our own claim, landed with its answer lost and marked by a
		// request whose clock runs ahead before we knew it was stored:
		// taken back in flight as it was, as the run's late completion
		// would take the record over the mark.
		back := prev.Clone()
		back.State, back.Cause = StateInFlight, ""
		return back, nil
	case free(prev, now), prev.Version != c.replace:
	case prev.State == StateFailed, prev.State == StateInFlight && c.takeover && prev.LeaseExpired(now):
		out.Fingerprint = prev.Fingerprint
		return out, nil
	}
	return nil, errHeld
}

// markedEarly reports whether r is the claim of owner, marked
// indeterminate by a request that judged its lease ended while, by now
// (the owner's clock), it has not; no operator decided it.
func markedEarly(r *Record, owner string, now time.Time) bool {
	return r.Owner == owner && r.State == StateIndeterminate && r.Cause == CauseLeaseExpired &&
		r.Resolution == nil && !r.LeaseExpired(now)
}

// nextRelease leaves a tombstone in place of the run's live in_flight
// record, or of a record that counts as none (the release of a claim that
// was never confirmed: a copy of it still on its way then finds a record
// and stores nothing).
func nextRelease(prev *Record, c change, now time.Time) (*Record, error) {
	if !free(prev, now) && (prev.State != StateInFlight || prev.Owner != c.rec.Owner) {
		return nil, ErrNotOwner
	}
	return &Record{ID: c.rec.ID, Scope: c.rec.Scope, State: StateReleased, Fingerprint: c.rec.Fingerprint,
		Owner: c.rec.Owner, LeaseUntil: now, ExpiresAt: now, CreatedAt: now}, nil
}

// nextResolve applies an operator's decision to the live indeterminate
// record it checked, and to no later run.
func nextResolve(prev *Record, c change, now time.Time) (*Record, error) {
	if free(prev, now) || prev.State != StateIndeterminate || prev.Version != c.checked {
		return nil, ErrNotIndeterminate
	}
	res := *c.res
	res.Snapshot = nil
	if res.ResolvedAt.IsZero() {
		res.ResolvedAt = now
	}
	out := prev.Clone()
	out.State, out.Resolution = res.As, &res
	if res.As == StateCompleted {
		out.Snapshot, out.CompletedAt = c.res.Snapshot.Clone(), res.ResolvedAt
	}
	if !res.ReplayUntil.IsZero() {
		out.ReplayUntil = res.ReplayUntil
	}
	if !res.ExpiresAt.IsZero() {
		out.ExpiresAt = res.ExpiresAt
	}
	return out, nil
}

// versions makes the versions of the writes of the writer owner: owner
// itself first, then owner.1, owner.2 and so on. Owner tokens never
// repeat, so neither do versions.
type versions struct {
	owner string
	n     atomic.Int64
}

// next returns a fresh version.
func (v *versions) next() string {
	i := v.n.Add(1) - 1
	if i == 0 {
		return v.owner
	}
	return v.owner + "." + strconv.FormatInt(i, 10)
}
