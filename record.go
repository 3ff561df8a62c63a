package idemkit

import (
	"net/http"
	"time"
)

// State is the lifecycle state of a record. The engine alone changes it,
// by these rules (a store only keeps what it is given):
//
//	(none)    --claim-----> in_flight
//	in_flight --complete--> completed
//	in_flight --release---> released (a tombstone)
//	released, expired, (none) --claim--> in_flight (new owner)
//	failed --claim, same fingerprint--> in_flight (new owner)
//	in_flight --lease expired, Takeover----> in_flight (new owner)
//	in_flight --lease expired, FailClosed--> indeterminate (CauseLeaseExpired)
//	in_flight --handler: ErrOutcomeUnknown--> indeterminate (CauseOutcomeUnknown)
//	in_flight --renewal--> in_flight (a later LeaseUntil)
//	indeterminate --owner's late completion--> completed
//	indeterminate (CauseLeaseExpired) --owner's claim retry, its lease not ended by its clock--> in_flight (same owner)
//	indeterminate --resolve as completed--> completed
//	indeterminate --resolve as failed-----> failed (claimable again)
//
// An expired record (ExpiresAt not after now) counts as absent in every
// state, as a released one does; both stay stored, so that a late copy of
// a claim finds them and stores nothing.
type State string

const (
	StateInFlight      State = "in_flight"
	StateCompleted     State = "completed"
	StateIndeterminate State = "indeterminate"
	// StateFailed is an indeterminate record an operator resolved as not
	// done. It keeps the resolution for audit and can be claimed again.
	StateFailed State = "failed"
	// StateReleased is a released key's tombstone: its handler failed and
	// the key was freed. It counts as no record, but it stays stored, so
	// that a late copy of a claim finds it and stores nothing. Owner is the
	// releasing owner, LeaseUntil and ExpiresAt the time of the release.
	StateReleased State = "released"
)

// Record is what a store keeps for one scope.
type Record struct {
	// ID is the store key, Scope.ID(accountWide).
	ID    string
	Scope Scope
	State State
	// Fingerprint is the opaque, versioned fingerprint of the first request.
	Fingerprint string
	// Owner is the random token of the execution holding or having held the
	// claim.
	Owner string
	// Version identifies the write that stored the record: its writer makes
	// a fresh one for every write. A store replaces a record only if it is
	// still the version read, and a writer recognises its own landed write
	// by it.
	Version string
	// LeaseUntil is when an in_flight claim stops protecting the key.
	LeaseUntil time.Time
	// ReplayUntil is when the stored response stops being replayed. After it,
	// requests get an *OutcomeError naming the outcome instead.
	ReplayUntil time.Time
	// ExpiresAt is when the record counts as absent (the TTL).
	ExpiresAt   time.Time
	CreatedAt   time.Time
	CompletedAt time.Time // zero unless completed
	// Snapshot is the stored response; nil unless completed.
	Snapshot *Snapshot
	// Resolution is set when an operator resolved an indeterminate record.
	Resolution *Resolution
	// Cause says why the record became indeterminate, kept after an
	// operator's resolution for audit. Empty on a record never marked.
	Cause Cause
}

// Cause is why a record became indeterminate.
type Cause string

const (
	// CauseOutcomeUnknown: the record's run reported that its outcome is
	// unknown (ErrOutcomeUnknown), so only an operator can tell.
	CauseOutcomeUnknown Cause = "outcome_unknown"
	// CauseLeaseExpired: a request found the run's lease ended without an
	// outcome. The run may still complete, and
	// its late completion replaces the record; a request that meets it
	// soon after the lease ended is told to retry later (ErrOutcomePending).
	CauseLeaseExpired Cause = "lease_expired"
)

// Live reports whether the record counts as present at now.
func (r *Record) Live(now time.Time) bool { return now.Before(r.ExpiresAt) }

// LeaseExpired reports whether an in_flight record's lease has ended at now.
func (r *Record) LeaseExpired(now time.Time) bool { return !now.Before(r.LeaseUntil) }

// Clone returns a deep copy of r.
func (r *Record) Clone() *Record {
	if r == nil {
		return nil
	}
	c := *r
	c.Snapshot = r.Snapshot.Clone()
	if r.Resolution != nil {
		res := *r.Resolution
		res.Snapshot = r.Resolution.Snapshot.Clone()
		c.Resolution = &res
	}
	return &c
}

// Snapshot is a stored response: what a replay sends back.
type Snapshot struct {
	Status int
	// Header holds only the allow-listed headers, canonical names.
	Header http.Header
	// Body is the response body exactly as the handler returned it. For a
	// Lambda proxy response with Base64 set, it is the base64 text.
	Body []byte
	// Base64 records a Lambda proxy response's IsBase64Encoded flag.
	Base64 bool
	// Omitted is set when the body was too large to store; Body is empty
	// and replays answer with ErrSnapshotOmitted.
	Omitted bool
}

// Clone returns a deep copy of s.
func (s *Snapshot) Clone() *Snapshot {
	if s == nil {
		return nil
	}
	c := *s
	c.Header = s.Header.Clone()
	if s.Body != nil {
		c.Body = append([]byte{}, s.Body...)
	}
	return &c
}

// Resolution records an operator's decision on an indeterminate record.
type Resolution struct {
	// As is StateCompleted (Snapshot is then the answer replayed) or
	// StateFailed (the key may be used again).
	As         State
	Snapshot   *Snapshot
	Operator   string
	Reason     string
	ResolvedAt time.Time
	// ReplayUntil, when not zero, replaces the record's ReplayUntil: a
	// completed resolution made after the first request's replay window
	// gives the answer a window of its own, so that retries get it.
	ReplayUntil time.Time
	// ExpiresAt, when not zero, replaces the record's ExpiresAt. It should
	// not come before ReplayUntil.
	ExpiresAt time.Time
}
