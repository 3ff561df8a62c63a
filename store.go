package idemkit

import (
	"context"
	"time"
)

// Store keeps records for a [Guard]: it is what [New] needs. A Store is a
// box of versioned records: it reads one, creates one where none is, and
// replaces one only if it is still the version the caller read. It
// decides nothing about states, owners, leases or expiry: the engine
// does, and hands the store the record to write (see [State] for the
// rules). [OperatorStore] adds the listing operator tools need, and
// [StaleLister] is an optional ability.
//
// Implementations must be safe for concurrent use and give each method
// the exact semantics documented here; the conformance suite in package
// storetest checks them.
//
// Versions: every record written carries a Version that its writer made
// fresh for that write. A store keeps it and compares it, nothing else.
// A write whose answer was lost (a timeout, a reset) may have landed;
// when it is sent again (by the store's own client, or by the caller with
// the same record) it finds its own Version stored, and the store returns
// that record as met: the caller recognises its own write.
//
// Keeping: a store keeps every record it stores, in any state, at least
// MaxWriteDelay past its ExpiresAt, and may delete it after that. So a
// late copy of a Create finds the record and stores nothing.
//
// Time precision: a store may keep times at millisecond precision, and
// ExpiresAt at second precision rounded up. Every other field reads back
// as written.
//
// Ownership: a *Record passed in belongs to the caller: a store must not
// modify it, nor any slice or map it holds, and must not retain them past
// the call. A record returned is the caller's own, shared with nothing.
//
// Limits: a store with an item size limit stores a completed record whose
// Snapshot is too large for it with the Snapshot's Omitted set and no
// body (replays then answer ErrSnapshotOmitted). A record it cannot store
// at all (too large without a body, a string it cannot encode) gives an
// error that is ErrRecordInvalid, and nothing is stored.
//
// Usage: a store reports each round trip to its backend with [AddUsage]
// on the context of the call, with the capacity units it consumed (zero
// when unknown).
//
// Errors: a method whose ctx is done returns promptly. Any failure but
// those named here (network, throttling, timeout) is an error that is
// ErrStoreUnavailable under errors.Is; the write may have landed.
type Store interface {
	// Get returns the record stored with id, in any state, live or not, or
	// an error that is ErrNotFound when none is.
	Get(ctx context.Context, id string) (*Record, error)

	// Create stores rec if no record with rec.ID is stored, and returns
	// nil, nil. Otherwise it stores nothing and returns the record stored
	// (met), in any state, live or not. The check and the write are one
	// atomic step.
	Create(ctx context.Context, rec *Record) (met *Record, err error)

	// Replace stores rec in place of the record stored with rec.ID if that
	// record's Version is prev.Version, and returns nil, nil. Otherwise it
	// stores nothing and returns the record stored (met), or an error that
	// is ErrNotFound when none is. The check and the write are one atomic
	// step. prev is the record as the caller read or wrote it: a store may
	// write only what differs from it.
	Replace(ctx context.Context, rec, prev *Record) (met *Record, err error)
}

// OperatorStore is a Store that operator tools can use: it also lists the
// records that wait for an operator's decision. [Resolve] takes one, and
// so does every command of the idemkit CLI. A guard needs only the Store.
type OperatorStore interface {
	Store

	// ListIndeterminate returns indeterminate records whose ExpiresAt is
	// after now, oldest lease first, at most limit (a store default when
	// limit <= 0). When tenant is not empty only that tenant's records are
	// listed. A non-empty next token is passed as page to get the
	// following page; an empty one means the listing is complete. A page
	// token the store did not issue gives ErrInvalidPage. A listing may be
	// eventually consistent, and a page may hold fewer than limit records
	// while a next token remains. A durable store answers from an index of
	// the records listed, so that its cost grows with the records listed,
	// not with the records stored. An in-process store may scan.
	ListIndeterminate(ctx context.Context, tenant, page string, limit int, now time.Time) (recs []*Record, next string, err error)
}

// StaleLister is an optional interface of an OperatorStore: it lists stale
// leases, in_flight records whose lease ended without an outcome (a
// crashed execution) that no request has marked or taken over yet.
// Operator tools check for it with a type assertion, then call ListsStale;
// the guard never calls it.
//
// A store that can list stale leases only when configured to (it must
// index in_flight records as it stores them) says so with ListsStale: one
// store type serves both configurations, and a store wrapping another
// implements StaleLister by asking the one it wraps.
type StaleLister interface {
	// ListsStale reports whether ListStale lists every stale lease. It
	// does not change over the store's life. When it is false, ListStale
	// lists nothing and returns an error that is errors.ErrUnsupported:
	// an empty listing would read as an all-clear.
	ListsStale() bool

	// ListStale returns in_flight records whose lease has ended at now and
	// whose ExpiresAt is after now, oldest lease first, paged, and
	// answered from an index, as OperatorStore.ListIndeterminate is.
	ListStale(ctx context.Context, tenant, page string, limit int, now time.Time) (recs []*Record, next string, err error)
}

// MaxWriteDelay bounds how late a write sent to a store can land. A write
// whose answer was lost may still be on its way, and reach the store after
// its sender moved on. A store keeps every record at least this long past
// its ExpiresAt, so that a late copy of a Create finds it and stores
// nothing. A store must bound the delay of its writes as tightly (package
// dynamo's backend refuses a request signed more than 15 minutes before it
// arrives), or keep records longer.
const MaxWriteDelay = 15 * time.Minute
