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
// is not live counts as absent to every method, whatever the store still
// holds (a backend may delete expired records late, or never).
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
//     landed answers as that attempt would have. Claim, Complete, Release
//     and Extend tell by their own rules (below). MarkUnknown,
//     MarkIndeterminate and Resolve cannot: the change they make refuses a
//     second copy of itself, as it does another writer's. A store that
//     sends one of them more than once writes a token of the call with
//     the change and compares it in the record that refused the copy
//     (package dynamo does). A store that makes each call once (package
//     memstore) has nothing to recognise.
//   - In another call, the rules of each method answer: Claim wins over
//     its own in_flight record, Complete completes its own completed
//     record again, Release finds its own tombstone and Extend its own
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
	// Claim atomically stores rec (State in_flight, Owner set) when, at now,
	// no record with rec.ID is live, or the live record
	//   - has State failed, another Owner than rec's, rec's Fingerprint
	//     and Scope.Operation (a late copy of the failed run's own claim
	//     must not bring that run back), and a Resolution.ResolvedAt not
	//     after now plus FenceSkew (a claim sent before the resolution,
	//     landing late, must not take the key it freed), or
	//   - is in_flight with the same Owner and a LeaseUntil not after
	//     rec.LeaseUntil (a retried claim whose first attempt was applied:
	//     it is ours; a late copy of it, after the lease was extended, is
	//     refused, so that it cannot move the lease back), or
	//   - is in_flight with its lease expired at now, rec's Fingerprint and
	//     Scope.Operation, and opts.Takeover is set.
	// A key stays bound to its first request: a record is replaced (taken
	// over, or claimed again after a failed resolution) only by a request
	// with its fingerprint and operation, compared as exact strings. The
	// operation is in the ID unless keys are account-wide; there the
	// comparison is what refuses a reuse for another operation.
	// The tombstone a Release leaves counts as no record, except to a claim
	// by an owner released on it (a copy of a released claim, landing late)
	// or made at a now before the tombstone's latest release by more than
	// FenceSkew (a copy sent before the key was freed): that claim stores
	// nothing and returns Won false, Fenced true and a nil Existing. A claim
	// refused by a failed record's time fence returns Fenced true too.
	// Otherwise it stores nothing and returns Won false with the live record
	// that blocked it. When Won is true, Existing holds the record that was
	// replaced, if the store can tell (it may be nil, and is nil for a
	// tombstone).
	// The check and the write are one atomic step. A store that reads the
	// blocking record in a second step may find it gone or changed; it then
	// retries a bounded number of times and may return Won false with a nil
	// Existing, which tells the caller to try again.
	Claim(ctx context.Context, rec *Record, now time.Time, opts ClaimOptions) (ClaimResult, error)

	// Complete stores rec (State completed, CompletedAt and Snapshot set)
	// over the live record with rec.ID whose Owner is rec.Owner and whose
	// State is in_flight, indeterminate (a late completion: a known outcome
	// replaces an unknown one that no operator has resolved), or completed
	// without a Resolution (a retried completion). Otherwise it returns
	// ErrNotOwner and changes nothing. A store with an
	// item size limit stores a snapshot too large for it with Omitted set
	// and no body (replays then answer ErrSnapshotOmitted); it never fails
	// the completion for that reason.
	Complete(ctx context.Context, rec *Record, now time.Time) error

	// Release frees the key held by the live in_flight record with this id
	// and owner, so that it can be claimed again: it replaces the record
	// with a tombstone of owner, made at now, that lives at least until
	// now plus MaxWriteDelay and then expires like any record. A tombstone
	// counts as no record to every method (Get returns ErrNotFound, the
	// listings leave it out, the fenced writes refuse it) and to every
	// claim but those Claim names: a copy of owner's claim that lands after
	// the release, having waited in the network, cannot make the key
	// in_flight again for a run nobody makes. Release leaves the same
	// tombstone when no record with the id is live (a retried release, or
	// the release of a claim that was never confirmed, whose copies may
	// still land), and returns nil. Over a live tombstone it adds owner to
	// the owners released on it (at most MaxReleasedOwners: one that finds
	// them all there starts them again with owner alone), keeps the later
	// of its release time and now (a copy of an earlier release, landing
	// late, moves it back never), and lives at least until now plus
	// MaxWriteDelay. It returns ErrNotOwner, changing nothing, when the
	// live record has another owner or is not in_flight.
	Release(ctx context.Context, id, owner string, now time.Time) error

	// Extend sets the LeaseUntil of the live in_flight record with this id
	// and owner to leaseUntil (a lease renewal while the handler runs),
	// never back: a leaseUntil before the record's (a late copy of an
	// earlier renewal) changes nothing and returns nil. It returns
	// ErrNotOwner, changing nothing, when there is no such record
	// (completed, released, taken over or marked indeterminate).
	Extend(ctx context.Context, id, owner string, leaseUntil, now time.Time) error

	// MarkUnknown changes the live in_flight record with this id and owner
	// to State indeterminate whatever its lease and sets its LeaseUntil to
	// now: its owner reports that the handler's outcome is unknown, so the
	// key must not be run again. It returns ErrNotOwner when there is no
	// such record.
	MarkUnknown(ctx context.Context, id, owner string, now time.Time) error

	// MarkIndeterminate changes the live in_flight record with this id and
	// owner whose lease has expired at now to State indeterminate. It
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
// reach the store after its sender moved on. What a store keeps to refuse
// late copies (a released key's tombstone) lives at least this long past
// the write that made it, by the clock of the instance whose copies it
// refuses. A store must bound the delay of its writes as tightly (package
// dynamo's backend refuses a request signed more than 15 minutes before
// it arrives), or keep such records longer.
//
// A tombstone refuses every claim of an owner released on it, and every
// claim made more than FenceSkew before its latest release; a failed
// record, every claim made more than FenceSkew before its resolution:
// such a claim was sent before the key was freed. What a late copy can
// still do is land over another request's tombstone or failed record
// when it was sent less than FenceSkew (by the clocks compared) before
// the key was freed: a copy of a claim its request saw refused meanwhile
// (409), or one delayed through two releases, sent within FenceSkew of
// the second; it then holds the key, for a run nobody makes, until its
// lease ends. So does a copy of a claim whose every attempt failed and
// whose release failed too (the guard's ErrClaimUnknown).
const MaxWriteDelay = 15 * time.Minute

// FenceSkew is the clock skew between instances that a store's time fence
// tolerates, DefaultLeaseMargin: a claim made by a clock up to FenceSkew
// behind the one that freed a key (a release, a failed resolution) is not
// taken for a late copy sent before. A claim made by a clock further
// behind is refused as one until that clock catches up, answered as a
// conflict to retry.
const FenceSkew = DefaultLeaseMargin

// MaxReleasedOwners bounds the owners a tombstone fences by name. A key
// released more often within a tombstone's life starts the set again,
// and an owner dropped from it is fenced by time alone: its claims made
// more than FenceSkew before the latest release.
const MaxReleasedOwners = 32

// ClaimOptions modify a claim.
type ClaimOptions struct {
	// Takeover lets the claim replace an in_flight record whose lease has
	// expired (the operation's downstream is itself idempotent).
	Takeover bool
}

// ClaimResult tells what a claim did.
type ClaimResult struct {
	// Won is true when rec was stored: the caller holds the key.
	Won bool
	// Existing is the live record that blocked the claim when Won is false.
	// When Won is true it is the record replaced, if any and if known.
	Existing *Record
	// Fenced is true when the claim lost to a fence against late copies
	// (see Store.Claim): a tombstone, or a failed record's resolution time.
	// A legitimate claim meets it only when its clock runs more than
	// FenceSkew behind the one that freed the key; made later, it may win.
	Fenced bool
}
