package idemkit

import (
	"context"
	"time"
)

// Store keeps records for a [Guard]: it is what [New] needs. Its methods
// claim, complete, release, renew, mark and read one record.
// [OperatorStore] adds what operator tools need, and [StaleLister] is an
// optional ability; the contract written here holds for every method of
// all three.
//
// Implementations must be safe for concurrent use and give every method
// the exact semantics documented here; the conformance suite in package
// storetest checks them. Every method takes the current time from the
// caller: a store keeps no clock of its own.
//
// A record is live at now when now is before its ExpiresAt. A record that
// is not live counts as absent to every method but Claim and Reclaim,
// whatever the store still holds (a backend may delete expired records
// late, or never). A store keeps every record, and a released key's
// tombstone, at least MaxWriteDelay past its ExpiresAt before it deletes
// it, so that a late copy of a claim always finds it (see Claim).
//
// Time precision: a store may keep times at millisecond precision, and
// ExpiresAt at second precision rounded up (never down: a record must not
// expire early). Every other time reads back within a millisecond of the
// one written.
//
// Ownership: a *Record or *Snapshot passed in belongs to the caller: a
// store must not modify it, nor any slice or map it holds (Header, Body),
// not even for a moment (a Snapshot's Body may be the bytes of the
// handler's response string), and must not retain them past the call; it
// copies what it keeps. A record returned is the
// caller's own, shared with nothing: changing it changes nothing stored.
//
// Usage: a store reports each round trip it makes to its backend with
// [AddUsage] on the context of the call, with the capacity units it
// consumed (zero when unknown), so that [Event.Usage] counts the store's
// work for the request.
//
// Context: a method whose ctx is done returns promptly with an error that
// is ErrStoreUnavailable; it must not block past ctx.
//
// Lost answers: a write whose answer was lost (a timeout, a reset) may
// have landed, and is then made again, by the store's own client within
// the call (an SDK retry) or by the caller in another call. A store must
// take a change it finds landed by the write it retries as that write's
// own, never as another writer's:
//   - Within one call, a write sent again that finds its first attempt
//     landed answers as that attempt would have. Claim, Reclaim,
//     Complete, Release and Extend tell by their own rules (below). MarkUnknown,
//     MarkIndeterminate and Resolve cannot: the change they make refuses a
//     second copy of itself, as it does another writer's. A store that
//     sends one of them more than once writes a token of the call with
//     the change and compares it in the record that refused the copy
//     (package dynamo does). A store that makes each call once (package
//     memstore) has nothing to recognise.
//   - In another call, the rules of each method answer: Claim and Reclaim
//     win over their own in_flight record, Complete completes its own completed
//     record again, Release leaves a tombstone again and Extend its own
//     lease, and each returns what its first call did. MarkUnknown and
//     MarkIndeterminate return ErrNotOwner and Resolve ErrNotIndeterminate,
//     changing nothing; the caller reads the record to tell its own change
//     (indeterminate with the same Owner and no Resolution; a Resolution
//     equal to its own), as the guard and [Resolve] do.
//
// Preconditions: every id and Record.ID passed in is not empty; every
// owner and Record.Owner is not empty; a record passed to Claim or
// Complete has a Scope.Tenant (the guard refuses a request without one,
// ErrTenantMissing) and the State the method names (in_flight for Claim;
// completed, with a Snapshot, for Complete); a Resolution has As
// completed, with a Snapshot, or failed. A call that breaks one changes
// nothing and returns an error that is ErrRecordInvalid, whatever the
// store holds. So does a record over one of the store's own limits (its
// size, its encoding), which the store documents.
//
// Errors: methods return the sentinel errors named below (test them with
// errors.Is). A bad argument is the caller's fault and retrying cannot
// help: the error is ErrRecordInvalid, never ErrStoreUnavailable. Any
// other failure (network, throttling, timeout) must be returned as an
// error that is ErrStoreUnavailable under errors.Is.
type Store interface {
	// Claim stores rec (State in_flight, Owner set) when no record with
	// rec.ID is stored at all, live or not: a released key's tombstone
	// (StateReleased) and an expired record that the backend has not
	// deleted yet count as stored. It also stores rec over rec's own
	// in_flight record whose LeaseUntil is not after rec.LeaseUntil (a
	// retried claim whose first attempt landed: it is ours; a late copy of
	// it, after the lease was extended, is refused, so that it cannot move
	// the lease back). Otherwise it stores nothing and returns Won false
	// with the record stored, whatever its state and whether or not it is
	// live: the caller decides, from that record, whether to replace it
	// (Reclaim). So a copy of a claim that lands late, after its request
	// was refused or the key was freed, finds the key's record and takes
	// nothing.
	// The check and the write are one atomic step. A store that reads the
	// stored record in a second step may find it gone; it then returns Won
	// false with a nil Existing, which tells the caller to try again.
	Claim(ctx context.Context, rec *Record, now time.Time) (ClaimResult, error)

	// Reclaim stores rec (State in_flight, Owner set) in place of prev, a
	// record of rec.ID that the caller read from this store (a Claim's
	// Existing, or Get), when the stored record is still prev: the same
	// Owner, State and LeaseUntil (to the millisecond). Every write of a
	// record changes one of the three, so a Reclaim decided on a record
	// that changed since it was read, or a late copy of one, stores
	// nothing. It also stores rec over rec's own in_flight record, as
	// Claim does (a retried Reclaim). Otherwise it returns Won false with
	// the record stored, as Claim does, or a nil Existing when none is.
	// Whether prev may be replaced (released, expired, failed, a stale
	// lease under Takeover) is the caller's decision: the store compares,
	// it does not judge.
	Reclaim(ctx context.Context, rec, prev *Record, now time.Time) (ClaimResult, error)

	// Complete stores rec (State completed, CompletedAt and Snapshot set)
	// over the live record with rec.ID whose Owner is rec.Owner and whose
	// State is in_flight, indeterminate (a late completion: a known outcome
	// replaces an unknown one that no operator has resolved), or completed
	// without a Resolution (a retried completion). rec's scope,
	// fingerprint, times and expiry are those of the owner's claim; the
	// stored record's LeaseUntil may stay as the last renewal left it.
	// Otherwise it returns ErrNotOwner and changes nothing. A store with an
	// item size limit stores a snapshot too large for it with Omitted set
	// and no body (replays then answer ErrSnapshotOmitted); it never fails
	// the completion for that reason.
	Complete(ctx context.Context, rec *Record, now time.Time) error

	// Release frees the key held by the live in_flight record with this id
	// and owner, so that it can be claimed again: it replaces the record
	// with a tombstone (State StateReleased, Owner owner, LeaseUntil and
	// ExpiresAt now), which the store keeps, as every record, MaxWriteDelay
	// past its ExpiresAt. A tombstone counts as no record to every method
	// (Get returns ErrNotFound, the listings leave it out, the fenced
	// writes refuse it) but Claim, which stores nothing over it and
	// returns it, and Reclaim, which replaces it: a copy of owner's claim
	// that lands after the release, having waited in the network, cannot
	// make the key in_flight again for a run nobody makes. Release leaves
	// its tombstone in place of any record that is not live, tombstones
	// included (the release of a claim or reclaim that was never
	// confirmed: a copy of it still on its way then finds a record it
	// cannot replace), and returns nil. It returns ErrNotOwner, changing
	// nothing, when the live record has another owner or is not in_flight.
	Release(ctx context.Context, id, owner string, now time.Time) error

	// Extend sets the LeaseUntil of the live in_flight record with this id
	// and owner to leaseUntil (a lease renewal while the handler runs),
	// never back: a leaseUntil before the record's (a late copy of an
	// earlier renewal) changes nothing and returns nil. It returns
	// ErrNotOwner, changing nothing, when there is no such record
	// (completed, released, taken over or marked indeterminate).
	Extend(ctx context.Context, id, owner string, leaseUntil, now time.Time) error

	// MarkUnknown changes the live in_flight record with this id and owner
	// to State indeterminate whatever its lease, Cause
	// CauseOutcomeUnknown, and sets its LeaseUntil to now: its owner reports that the handler's outcome is unknown, so the
	// key must not be run again. It returns ErrNotOwner when there is no
	// such record.
	MarkUnknown(ctx context.Context, id, owner string, now time.Time) error

	// MarkIndeterminate changes the live in_flight record with this id and
	// owner whose lease has expired at now to State indeterminate, Cause
	// CauseLeaseExpired, keeping its LeaseUntil. It
	// returns ErrNotOwner when no such record exists (it was completed,
	// released, taken over, or already marked).
	MarkIndeterminate(ctx context.Context, id, owner string, now time.Time) error

	// Get returns the live record with this id, or ErrNotFound. The guard
	// reads a record without claiming it only for a key older than the
	// record retention, which must not be claimed unless a record of it is
	// live.
	Get(ctx context.Context, id string, now time.Time) (*Record, error)
}

// OperatorStore is a Store that operator tools can use: it also records an
// operator's decision on an indeterminate record and lists the records
// that wait for one. [Resolve] takes one, and so does every command of the
// idemkit CLI. A guard needs only the Store.
type OperatorStore interface {
	Store

	// Resolve records an operator's decision on the live indeterminate
	// record with this id and owner, the run the operator checked: State
	// becomes res.As (completed or failed), the
	// Snapshot becomes res.Snapshot and CompletedAt the resolution's time
	// for completed, and Resolution is kept.
	// It returns ErrNotIndeterminate, changing nothing, when there is no
	// live indeterminate record with the id and owner: a decision on one
	// run never lands on a later run of the key. Non-zero res.ReplayUntil and
	// res.ExpiresAt replace the record's. A zero res.ResolvedAt is stored
	// as now; res.Snapshot is ignored for failed and may be stored Omitted
	// as in Complete. A retried Resolve whose first attempt was applied gets
	// ErrNotIndeterminate: read the record to see the outcome.
	Resolve(ctx context.Context, id, owner string, res Resolution, now time.Time) (*Record, error)

	// ListIndeterminate returns live indeterminate records, oldest lease
	// first, at most limit (a store default when limit <= 0). When tenant is
	// not empty only that tenant's records are listed. A non-empty next
	// token is passed as page to get the following page; an empty one means
	// the listing is complete. A page token the store did not issue gives
	// ErrInvalidPage. A listing may be eventually consistent, and a page
	// may hold fewer than limit records while a next token remains.
	// A durable store answers from an index of the records listed, so that
	// its cost grows with the records listed, not with the records stored:
	// it must not scan its table. An in-process store (package memstore)
	// may scan its memory.
	ListIndeterminate(ctx context.Context, tenant, page string, limit int, now time.Time) (recs []*Record, next string, err error)
}

// StaleLister is an optional interface of an OperatorStore: it lists stale
// leases, in_flight records whose lease ended without an outcome (a
// crashed execution, or a claim whose answer was lost and whose release
// failed) that no request has marked or taken over yet. Operator tools
// check for it with a type assertion, then call ListsStale; the guard
// never calls it.
//
// A store that can list stale leases only when configured to (it must
// index in_flight records as it claims them) says so with ListsStale, not
// with a type of its own: one store type serves both configurations, and
// a store wrapping another implements StaleLister by asking the one it
// wraps.
type StaleLister interface {
	// ListsStale reports whether ListStale lists every stale lease. It
	// does not change over the store's life. When it is false, ListStale
	// lists nothing and returns an error that is errors.ErrUnsupported:
	// an empty listing would read as an all-clear.
	ListsStale() bool

	// ListStale returns live in_flight records whose lease has ended at now,
	// oldest lease first, paged, and answered from an index, as
	// OperatorStore.ListIndeterminate is.
	ListStale(ctx context.Context, tenant, page string, limit int, now time.Time) (recs []*Record, next string, err error)
}

// MaxWriteDelay bounds how late a write sent to a store can land. A write
// whose answer was lost (a timeout, a reset) may still be on its way, and
// reach the store after its sender moved on. A store keeps what it stores
// (a released key's tombstone, an expired record) at least this long past
// its ExpiresAt, by the clock of the instance whose copies it must refuse:
// a late copy of a claim then finds the key's record, and a claim stores
// nothing over a stored record (Store.Claim). A store must bound the delay
// of its writes as tightly (package dynamo's backend refuses a request
// signed more than 15 minutes before it arrives), or keep records longer.
const MaxWriteDelay = 15 * time.Minute

// ClaimResult tells what a claim did.
type ClaimResult struct {
	// Won is true when rec was stored: the caller holds the key.
	Won bool
	// Existing is the stored record that kept the claim from being made
	// when Won is false, in any state (StateReleased included), live or
	// not; nil when the store found none. When Won is true it is the
	// record replaced, if any and if the store can tell.
	Existing *Record
}
