// Package dynamo is an idemkit.OperatorStore and idemkit.StaleLister on
// Amazon DynamoDB (AWS SDK for Go v2). It is a box of versioned records:
// each record is one item, and each write is one conditional request whose
// condition is about existence and version only, so the check and the
// write are one atomic step on the server:
//
//   - Create is one PutItem of the whole item, conditioned on no item of
//     its key (attribute_not_exists(pk)).
//   - Replace is one UpdateItem conditioned on the version stored being
//     the one the caller read (v = :p): it sets the attributes that differ
//     between the item of the record read and the item of the record
//     written, and removes those the first has and the second lacks.
//     Where the condition holds, the item stored is the first, so the
//     item left is exactly the second.
//
// Get is one consistent GetItem; ListIndeterminate and ListStale are one
// Query of a sparse index each. A refused write returns the item stored
// (ReturnValuesOnConditionCheckFailure=ALL_OLD), decoded, as met; where
// the server leaves it out, one consistent GetItem reads it.
//
// No rule of a record's life lives here: the store checks no owner, state,
// lease or expiry, and keeps whatever record it is given, tombstones and
// expired records included (Get returns them as they are). The engine
// decides every change (see idemkit.State). What the store adds to a
// record is derived from it: the index keys of its state, the TTL
// attribute, and the snapshot's encoding.
//
// Items are kept KeptPast (idemkit.MaxWriteDelay and five minutes, for
// the SDK's clock-skew correction) past their record's expiry: exp, the
// TTL attribute, holds ExpiresAt plus that. A copy of a write lands within
// MaxWriteDelay of its signing or never, since DynamoDB refuses a request
// whose SigV4 signature is more than 15 minutes old ("Signature
// expired"), so a late copy of a Create always finds the item, even after
// the record expired, and a late copy of a Replace finds another version.
//
// # Item layout
//
// Partition key pk is the record ID (idemkit.Record.ID), at most 2048
// bytes, DynamoDB's limit: a longer scope has a hashed ID, and tn, op and
// ik keep it readable. There is no sort key. Times are epoch milliseconds, except exp, the table's TTL
// attribute (named by Options.TTLAttr, "exp" by default), which is epoch
// seconds rounded up, plus KeptPast (so a record
// may count as live up to one second longer than its ExpiresAt; lu is
// rounded up too, so a lease never ends early).
//
//	pk   S     record ID                      ca   N  CreatedAt (ms)
//	st   S     state (released: a tombstone)  da   N  CompletedAt (ms), when set
//	tn   S     Scope.Tenant                   sc   N  snapshot status
//	op   S     Scope.Operation                sh   M  snapshot header: name -> L of S
//	ik   S     Scope.Key                      sb   B  snapshot body
//	fp   S     Fingerprint                    se   S  body encoding: "zstd" or "s2"; absent: raw
//	ow   S     Owner token                    s64  BOOL  Snapshot.Base64, when true
//	v    S     Version                        som  BOOL  Snapshot.Omitted, when true
//	lu   N     LeaseUntil (ms, rounded up)    ra, ro, rr, rt  Resolution: As, Operator,
//	ru   N     ReplayUntil (ms)                               Reason, ResolvedAt (ms)
//	exp  N     ExpiresAt (s, rounded up)      rq, rx  Resolution: ReplayUntil,
//	           plus KeptPast: the TTL, named          ExpiresAt (ms), when set
//	           by Options.TTLAttr
//	ix   S     "indeterminate" while indeterminate; "in_flight" while in
//	           flight, with Options.IndexInFlight; else absent
//	it   S     tenant, only while indeterminate
//	cz   S     why the record became indeterminate (idemkit.Record.Cause);
//	           absent on a record never marked
//
// A header value that is not UTF-8 (HTTP allows bytes 0x80-0xFF) is a B
// in its list, so that it is replayed byte for byte; a store of an older
// version reads such a record as corrupt, never as another value.
//
// The layout is this package's to change: only the names a table's
// definition and its TTL need are exported (DefaultKeyAttr, TTLAttr and
// the Index* constants; TableDefinition has the rest). A completed
// resolution's answer is the record's snapshot (sc, sh, sb, ...), not
// stored twice: a Resolution read back holds no Snapshot.
//
// Two sparse global secondary indexes (projection ALL) list indeterminate
// records without a scan: IndexIndeterminate (hash ix, range lu) for all
// tenants and IndexIndeterminateTenant (hash it, range lu) for one, both
// oldest lease first. An indeterminate record's item carries ix and it;
// a resolved one's does not. The ix index has one hash key value per state: fine for the rare
// indeterminate records it holds. Options.IndexInFlight also puts every
// in_flight record under ix = "in_flight", so that ListStale lists the
// ones whose lease ended (range lu <= now) without a scan; it costs two
// index writes per request and makes that one partition's write ceiling
// the table's claim-rate ceiling, hence opt-in (docs/PERFORMANCE.md).
//
// # Single-table designs
//
// Options.KeyAttr, Options.SortKeyAttr with Options.SortKeyValue, and
// Options.KeyPrefix put the records in an existing table beside other
// items: a record is then the item whose partition key KeyAttr holds
// KeyPrefix and the record ID, and whose sort key, when the table has
// one, holds SortKeyValue; it has no pk attribute (unless KeyAttr is pk).
// Every other attribute, the conditions and the indexes are as above,
// Create's condition naming KeyAttr where it names pk. Their zero values are the
// layout above, unchanged. New refuses a key attribute named as one of the
// record's attributes (those the layout above names), an empty
// SortKeyValue, and a KeyPrefix over MaxKeyPrefixLen bytes (with it, every
// hashed record ID still fits DynamoDB's 2048-byte partition key); a
// readable record ID too long to fit with the prefix is refused as
// idemkit.ErrRecordInvalid.
//
// The two indexes keep their attributes and values (ix, it, lu): they are
// the record's own attributes, the tenant index's key is the record's
// tenant, written with the record, and an index holds only items
// that carry its key attributes. An item of another type that does carry
// them is never listed: a listing skips every item outside the layout
// (another sort key value, a partition key without the prefix), so two
// stores of different prefixes or sort keys may share one table, and
// each lists only its own records. Such items still count toward the
// listing's page size, and the table's other item types must not use the
// record attribute names for values of another type in those indexes
// (DynamoDB refuses such a write: an index key's type is fixed).
//
// TableDefinition and CreateTable make a table of such a layout,
// and Check checks it: the key schema Options names, the two indexes and,
// if TTL is on, that it is on the store's TTL attribute (Options.TTLAttr,
// exp by default; CheckTTL reports TTL that is off). A table has one TTL
// attribute: a shared table whose other items expire on an attribute of
// their own (say "ttl") names it in Options.TTLAttr, or Check reports the
// TTL attribute (records on a table whose TTL is elsewhere are still
// listed as absent once expired, and the engine judges them so; only
// their storage is kept).
//
// # Retries
//
// The store's calls use the SDK's standard retryer (Options.MaxAttempts,
// Options.MaxBackoff) without its client-side retry quota, which runs dry
// under sustained errors and would then leave a claim, and the release of
// a claim whose answer was lost, a single attempt each.
// Options.KeepRetryQuota keeps the client's own retryer instead.
//
// A write the SDK sends again, its first attempt landed with its answer
// lost, is refused by its own condition (the item exists; its version
// changed) and returns the item it stored as met: the caller recognises
// its own write by its Version (the lost answers of the idemkit.Store
// contract). A late copy of a write that was followed by others finds
// another version and stores nothing.
//
// # Expiry
//
// DynamoDB deletes expired items lazily (hours to days late). Nothing here
// relies on it: Get returns a record whatever its ExpiresAt, for the
// engine to judge, and the listings leave out records expired at the now
// they are given. An item relies only on not being deleted before its exp.
//
// # Snapshot size
//
// A body is compressed with Options.Codec when that makes it smaller and,
// by default, when the item would take more than one write unit (1 KB)
// with the body as is: below that, compressing cannot make the request
// cheaper (Options.CompressAbove sets a body size instead). The codec is
// zstd (the default, the fewest write units) or S2 (about a quarter of
// zstd's CPU, about half again as many bytes). Both formats carry a checksum, and every store
// reads both, whatever its own codec. Concurrent completions compress in
// parallel: the package makes an encoder per completion compressing at
// once, up to GOMAXPROCS, and keeps them (about 1 MB each for zstd) for
// the life of the process. The item size is computed by DynamoDB's
// rules before any write; a completion that would exceed
// Options.MaxItemSize (default 350 KB, under DynamoDB's 400 KB) is stored
// without its body and with Snapshot.Omitted set, so replays answer
// idemkit.ErrSnapshotOmitted instead of running the request again; so is
// a body over 16 MB, however well it compresses, since a stored body is
// never decoded to more than that. No write larger than the cap is sent.
//
// # Errors
//
// A failed condition is the contract's outcome: the record met, or
// idemkit.ErrNotFound for a Replace over no item. Every other failure
// (throttling, 5xx, network, timeout, and also a missing table or denied
// permission) is an *idemkit.StoreError, idemkit.ErrStoreUnavailable under
// errors.Is, returned after the SDK's retries: each call gets
// Options.MaxAttempts attempts within Options.CallTimeout, ending
// Options.DeadlineGap before the context's deadline. An item that cannot
// be decoded gives an error wrapping idemkit.ErrCorruptRecord. A request
// DynamoDB refuses as invalid (ValidationException), a record over the
// item cap even without its body, and a record whose ID, scope,
// fingerprint or owner is not UTF-8 (DynamoDB strings are; the SDK would
// send each bad byte as U+FFFD, and two scopes would name one item) give
// an error wrapping
// idemkit.ErrRecordInvalid, never ErrStoreUnavailable: sent again, they
// would be refused again.
//
// # Capacity
//
// Every call asks for ReturnConsumedCapacity=TOTAL and reports what it
// consumed with idemkit.AddUsage, once per call. A refused conditional
// write returns no capacity; it is reported as DynamoDB bills it, by the
// size of the item returned with the failure (at least one write unit).
//
// # Regions
//
// With global tables, use NewRegional: each tenant has a home region and
// every call for its records goes there (see Regions). A record is routed
// by its tenant, and Get by the tenant its ID carries, which ties this
// package to the ID encoding of idemkit.Scope.ID. An operator moves a
// tenant with a Failover, whose claims, marks of stale leases and
// resolutions of keys not first used after it are fenced until the
// records its old home wrote are known to have replicated: the store
// tells them from the records it is asked to write.
//
// # Table
//
// TableDefinition and CreateTable make a table laid out as the Options
// say, for tests and local use; the SAM template declares the same names.
package dynamo
