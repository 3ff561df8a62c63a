package idemkit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemkit/idemkit/internal/recordid"
)

// ErrInvalidConfig is wrapped by the error [New] returns for a
// configuration it refuses (such as a RecordRetention below the
// ReplayWindow).
var ErrInvalidConfig = errors.New("idemkit: invalid configuration")

// Errors returned by [Guard.Do] when the handler was not run.
var (
	// ErrTenantMissing: the request has no tenant. The guard fails closed.
	ErrTenantMissing = errors.New("idemkit: no tenant for the request (misconfiguration)")
	// ErrFingerprintMismatch: the key was used before with a different request.
	ErrFingerprintMismatch = errors.New("idemkit: idempotency key reused with a different request")
	// ErrOperationMismatch: with account-wide keys, the key was used before
	// for a different operation.
	ErrOperationMismatch = errors.New("idemkit: idempotency key reused for a different operation")
	// ErrInFlight: a request with the same key is being executed. The error
	// is a *ConflictError that carries the time to wait.
	ErrInFlight = errors.New("idemkit: a request with this idempotency key is in flight")
	// ErrIndeterminate: an earlier execution's lease expired without an
	// outcome and the operation fails closed; an operator must resolve it.
	ErrIndeterminate = errors.New("idemkit: the outcome of an earlier request with this key is unknown")
	// ErrOutcomePending: an earlier execution's lease ended without an
	// outcome a moment ago and its run may still complete: retry later.
	// The error is a *ConflictError that says when. Past that time the
	// record waits for an operator (ErrIndeterminate), unless the run
	// completed meanwhile and a retry replays its response.
	ErrOutcomePending = errors.New("idemkit: the outcome of an earlier request with this key is pending")
	// ErrStoreUnavailable: the store could not be reached or refused the
	// request for a transient reason. Nothing is cached; retry later.
	ErrStoreUnavailable = errors.New("idemkit: idempotency store unavailable")
	// ErrKeyExpired: the key embeds a time (UUIDv7) older than the
	// operation's record retention, so an earlier request may have been
	// forgotten. It is refused rather than run.
	ErrKeyExpired = errors.New("idemkit: idempotency key is older than the retention period")
	// ErrReplayWindowPassed: the request completed, but its response is no
	// longer replayed. The error is an *OutcomeError naming the outcome.
	ErrReplayWindowPassed = errors.New("idemkit: the replay window of this idempotency key has passed")
	// ErrSnapshotOmitted: the request completed, but its response was too
	// large to store. The error is an *OutcomeError naming the outcome.
	ErrSnapshotOmitted = errors.New("idemkit: the response of this idempotency key was too large to store")
	// ErrClaimUnknown: the claim could not be made, and freeing it failed
	// too, so a claim may be stored although the handler did not run. The
	// error is a *ClaimUnknownError, and ErrStoreUnavailable too.
	ErrClaimUnknown = errors.New("idemkit: the claim may be stored; the key may stay held until its lease ends")
	// ErrCorruptRecord: the stored record could not be decoded. The handler
	// is not run and nothing is replayed.
	ErrCorruptRecord = errors.New("idemkit: stored idempotency record is corrupt")
	// ErrRecordInvalid: the store refused the record of the request as
	// invalid (larger than it can hold, a value over one of its limits).
	// Retrying the same request cannot succeed, so it is never
	// ErrStoreUnavailable. The handler is not run.
	ErrRecordInvalid = errors.New("idemkit: the store refused the idempotency record as invalid")
	// ErrNothingStored is wrapped by a store's error that proves the call
	// stored nothing and that making it again would fail the same way (the
	// table does not exist, the caller may not write it). The guard then
	// neither tries the claim again nor frees it, since no key is held.
	// Such an error is ErrStoreUnavailable too.
	ErrNothingStored = errors.New("idemkit: nothing stored")
)

// ErrLeaseLost is the cause (context.Cause) of a renewed handler's
// context when the guard cancels it because it can no longer protect the
// run. Under either policy, that is when no renewal has landed and the
// lease is about to end, when the renewals ran out (MaxRenewals), or when
// they reached the record's expiry. "About to end" is LeaseMargin before
// the end, or later when the renewal interval is too short for that.
// Under [Takeover] it is also when the key was taken over.
//
// Past its lease, another request may run the handler again ([Takeover]),
// or an operator may resolve the key ([FailClosed]); a failed resolution
// frees it for a retry. Under FailClosed the guard keeps the key of such a
// run as an unknown outcome ([ErrOutcomeUnknown]) instead of freeing it.
// A handler that stops when its context is done never runs alongside
// another run, nor past an operator's decision. The error Do returns for
// such a run, and the Observer's event, wrap ErrLeaseLost.
var ErrLeaseLost = errors.New("idemkit: the lease on the idempotency key was lost")

// ErrTenantTooLong: the tenant is longer than 1024 bytes. It is
// also ErrTenantMissing under errors.Is. Like a missing tenant it is a
// misconfiguration, and the request fails closed.
var ErrTenantTooLong = fmt.Errorf("%w: tenant longer than %d bytes", ErrTenantMissing, recordid.MaxTenantLen)

// Errors returned by a [Store].
var (
	// ErrNotFound: no live record has the ID.
	ErrNotFound = errors.New("idemkit: record not found")
	// ErrNotOwner: a fenced write was refused because the record is no longer
	// in the state the caller's owner token allows (taken over, released,
	// resolved or expired).
	ErrNotOwner = errors.New("idemkit: record is not owned by this token")
	// ErrNotIndeterminate: Resolve found no indeterminate record.
	ErrNotIndeterminate = errors.New("idemkit: record is not indeterminate")
	// ErrInvalidPage: ListIndeterminate or ListStale was given a page
	// token the store did not issue.
	ErrInvalidPage = errors.New("idemkit: invalid page token")
)

// ConflictError is returned while the key is held: by another request
// (Reason ErrInFlight), or by a record marked indeterminate because its
// lease ended ([CauseLeaseExpired]) while its run may still complete
// (Reason ErrOutcomePending, until Until).
type ConflictError struct {
	// Reason is ErrInFlight (nil: ErrInFlight too) or ErrOutcomePending.
	Reason error
	// RetryAfter is the time to wait before a retry, at least one second.
	RetryAfter time.Duration
	// Until, with ErrOutcomePending, is when the run can no longer be
	// expected to complete: after it a retry gets ErrIndeterminate, unless
	// the run completed.
	Until time.Time
}

func (e *ConflictError) Error() string {
	if e.reason() == ErrOutcomePending {
		return fmt.Sprintf("%v until %s (retry after %s)", ErrOutcomePending, e.Until.UTC().Format(time.RFC3339), e.RetryAfter)
	}
	return fmt.Sprintf("%v (retry after %s)", ErrInFlight, e.RetryAfter)
}

// Is reports whether target is the Reason.
func (e *ConflictError) Is(target error) bool { return target == e.reason() }

func (e *ConflictError) reason() error {
	if e.Reason == nil {
		return ErrInFlight
	}
	return e.Reason
}

// OutcomeError names the outcome of a completed request whose response
// cannot be replayed: its replay window passed ([ErrReplayWindowPassed]) or
// its body was too large to store ([ErrSnapshotOmitted]).
type OutcomeError struct {
	Reason      error     // ErrReplayWindowPassed or ErrSnapshotOmitted
	Status      int       // the status first returned
	Location    string    // the Location header first returned, if any
	CompletedAt time.Time // when the request completed
}

func (e *OutcomeError) Error() string {
	return fmt.Sprintf("%v (status %d, completed %s)", e.Reason, e.Status, e.CompletedAt.UTC().Format(time.RFC3339))
}

func (e *OutcomeError) Unwrap() error { return e.Reason }

// StoreError wraps a failure of the store with the operation that failed.
// It is [ErrStoreUnavailable] under errors.Is.
type StoreError struct {
	Op  string // the store method in lower case words: "claim", "mark indeterminate", "list stale", ...
	Err error
}

func (e *StoreError) Error() string { return fmt.Sprintf("idemkit: store %s: %v", e.Op, e.Err) }

// Unwrap returns ErrStoreUnavailable and the underlying error.
func (e *StoreError) Unwrap() []error { return []error{ErrStoreUnavailable, e.Err} }

// ClaimUnknownError is returned when a claim failed and freeing it failed
// too. The handler did not run, but a claim may be stored, since its
// answer may have been lost. Until LeaseUntil a retry with the key gets
// ErrInFlight. After it the record is a stale lease (StaleLister.ListStale
// lists it), which the next request handles by the operation's
// StalePolicy. Under FailClosed the record is marked indeterminate for an
// operator; under Takeover the key is claimed again. It is ErrClaimUnknown
// and ErrStoreUnavailable under errors.Is.
type ClaimUnknownError struct {
	LeaseUntil time.Time // when the claim, if stored, stops holding the key
	Err        error     // the claim's and the release's errors
}

func (e *ClaimUnknownError) Error() string {
	return fmt.Sprintf("%v (until %s): %v", ErrClaimUnknown, e.LeaseUntil.UTC().Format(time.RFC3339), e.Err)
}

// Is reports whether target is ErrClaimUnknown.
func (e *ClaimUnknownError) Is(target error) bool { return target == ErrClaimUnknown }

// Unwrap returns the claim's and the release's errors.
func (e *ClaimUnknownError) Unwrap() error { return e.Err }

// callerCancelled reports whether err, returned by a call made with ctx,
// is the caller's own cancellation of ctx and leaves nothing held: it is
// no store failure (observe.EventCancelled). A claim that could not be freed
// (ErrClaimUnknown) is a store failure even then.
func callerCancelled(ctx context.Context, err error) bool {
	return errors.Is(ctx.Err(), context.Canceled) && errors.Is(err, context.Canceled) && !errors.Is(err, ErrClaimUnknown)
}
