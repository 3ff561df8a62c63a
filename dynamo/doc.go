// Package dynamo is an idemkit.OperatorStore and idemkit.StaleLister on
// Amazon DynamoDB (AWS SDK for Go v2). Each record is one item; every
// state change is one conditional write, so the check and the write are
// one atomic step on the server:
//
//	Claim              PutItem    attribute_not_exists(pk)
//	                              OR (st = in_flight AND ow = :owner AND lu <= :lu)
//	Reclaim            PutItem    (ow = :prevOwner AND st = :prevState AND lu = :prevLease)
//	                              OR (st = in_flight AND ow = :owner AND lu <= :lu)
//	Complete           UpdateItem ow = :owner AND exp > :nowS AND st <> released
//	                              AND attribute_not_exists(ra)
//	                              (SET st, da, the snapshot's and cz; REMOVE ix, it, mk)
//	Release            PutItem    attribute_not_exists(pk) OR exp <= :nowS OR st = released
//	                              OR (ow = :owner AND st = in_flight)
//	                              (the tombstone: pk, st = released, ow, lu = :nowMs, exp)
//	Extend             UpdateItem ow = :owner AND st = in_flight AND exp > :nowS AND lu <= :lu (SET lu)
//	MarkUnknown        UpdateItem ow = :owner AND st = in_flight AND exp > :nowS
//	                              (SET st, ix, it, mk, lu = :nowMs, cz = outcome_unknown)
//	MarkIndeterminate  UpdateItem ow = :owner AND st = in_flight AND exp > :nowS AND lu <= :nowMs
//	                              (SET st, ix, it, mk, cz = lease_expired)
//	Resolve            UpdateItem st = indeterminate AND exp > :nowS AND ow = :owner
//	                              (after a consistent GetItem reading the owner and, as
//	                              completed, sizing the answer)
//	Get                GetItem, consistent
//	ListIndeterminate  Query of a sparse index
//	ListStale          Query of the ix index (Options.IndexInFlight)
//
// A lost claim returns the blocking item with the failure
// (ReturnValuesOnConditionCheckFailure=ALL_OLD): one call per replay. When
// the server leaves it out, one consistent GetItem reads it.
//
// A claim stores nothing over any item of its key, whatever its state,
// live or not: the engine decides from the item returned whether the
// request replays, is refused, or claims in its place (a released key's
// tombstone, an expired record, a failed one, a stale lease under
// Takeover), with a Reclaim conditioned on the item as read. So a copy of
// a claim that waited in the network and lands late takes nothing: a
// Claim finds an item, a Reclaim finds it changed.
//
// A release leaves the key's tombstone, an item of its own state
// (released) holding the releasing owner in ow and the release's time in
// lu. Every method but Claim, Reclaim and Release reads it as no record.
// A release replaces the in_flight item as the DeleteItem it replaces did,
// for one write unit, and the tombstone carries no index key; a release
// over a tombstone, or over no live record (a claim never confirmed,
// whose copies may still land), leaves its own. A refused release is
// idemkit.ErrNotOwner.
//
// Items are kept KeptPast (idemkit.MaxWriteDelay and five minutes, for
// the SDK's clock-skew correction) past their record's expiry: exp, the
// TTL attribute, holds ExpiresAt plus that, and every condition compares
// it with now plus the same. A copy of a write lands within
// MaxWriteDelay of its signing or never, since DynamoDB refuses a request
// whose SigV4 signature is more than 15 minutes old ("Signature
// expired"), so a late copy of a claim always finds the item it must not
// replace, even after the record expired.
//
// # Item layout
//
// Partition key pk is the record ID (idemkit.Record.ID), at most
// idemkit.MaxIDLen (2048) bytes, DynamoDB's limit: a longer scope has a
// hashed ID, and tn, op and ik keep it readable. There is no sort key. Times are epoch milliseconds, except exp, the table's TTL
// attribute (named by Options.TTLAttr, "exp" by default), which is epoch
// seconds rounded up, plus KeptPast (so a record
// may count as live up to one second longer than its ExpiresAt; lu is
// rounded up too, so a lease never ends early).
//
//	pk   S     record ID                      ca   N  CreatedAt (ms)
//	st   S     state, or released             da   N  CompletedAt (ms), when set
//	tn   S     Scope.Tenant                   sc   N  snapshot status
//	op   S     Scope.Operation                sh   M  snapshot header: name -> L of S
//	ik   S     Scope.Key                      sb   B  snapshot body
//	fp   S     Fingerprint                    se   S  body encoding: "zstd" or "s2"; absent: raw
//	ow   S     Owner token (fencing)          s64  BOOL  Snapshot.Base64, when true
//	lu   N     LeaseUntil (ms, rounded up)    som  BOOL  Snapshot.Omitted, when true
//	ru   N     ReplayUntil (ms)               ra, ro, rr, rt  Resolution: As, Operator,
//	exp  N     ExpiresAt (s, rounded up)                      Reason, ResolvedAt (ms)
//	           plus KeptPast: the TTL, named by Options.TTLAttr
//	ix   S     "indeterminate" while indeterminate; "in_flight" while in
//	           flight, with Options.IndexInFlight; else absent
//	it   S     tenant, only while indeterminate
//	mk   S     a random token of the last mark or resolution
//	cz   S     why the record became indeterminate (idemkit.Record.Cause):
//	           "outcome_unknown" (MarkUnknown) or "lease_expired"
//	           (MarkIndeterminate); kept by a resolution; absent on a
//	           record never marked
//
// A header value that is not UTF-8 (HTTP allows bytes 0x80-0xFF) is a B
// in its list, so that it is replayed byte for byte; a store of an older
// version reads such a record as corrupt, never as another value.
//
// The layout is this package's to change: only the names a table's
// definition and its TTL need are exported (DefaultKeyAttr, TTLAttr and
// the Index* constants; TableDefinition has the rest). A completed
// resolution's snapshot is the record's snapshot (sc, sh, sb, ...), not
// stored twice.
//
// Two sparse global secondary indexes (projection ALL) list indeterminate
// records without a scan: IndexIndeterminate (hash ix, range lu) for all
// tenants and IndexIndeterminateTenant (hash it, range lu) for one, both
// oldest lease first. MarkIndeterminate sets ix and it; Resolve removes
// them. The ix index has one hash key value per state: fine for the rare
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
// Every other attribute, the conditions and the indexes are as above, the
// conditions naming KeyAttr where they name pk. Their zero values are the
// layout above, unchanged. New refuses a key attribute named as one of the
// record's attributes (those the layout above names), an empty
// SortKeyValue, and a KeyPrefix over MaxKeyPrefixLen bytes (with it, every
// hashed record ID still fits DynamoDB's 2048-byte partition key); a
// readable record ID too long to fit with the prefix is refused as
// idemkit.ErrRecordInvalid.
//
// The two indexes keep their attributes and values (ix, it, lu): they are
// the record's own attributes, the tenant index's key is copied from tn
// in the same update that marks a record, and an index holds only items
// that carry its key attributes. An item of another type that does carry
// them is never listed: a listing skips every item outside the layout
// (another sort key value, a partition key without the prefix), so two
// stores of different prefixes or sort keys may share one table, and
// each lists only its own records. Such items still count toward the
// listing's page size, and the table's other item types must not use the
// record attribute names for values of another type in those indexes
// (DynamoDB refuses such a write: an index key's type is fixed).
//
// TableDefinitionFor and CreateTableFor make a table of such a layout,
// and Check checks it: the key schema Options names, the two indexes and,
// if TTL is on, that it is on the store's TTL attribute (Options.TTLAttr,
// exp by default; CheckTTL reports TTL that is off). A table has one TTL
// attribute: a shared table whose other items expire on an attribute of
// their own (say "ttl") names it in Options.TTLAttr, or Check reports the
// TTL attribute (records on a
// table whose TTL is elsewhere are still read as absent once expired;
// only their storage is kept).
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
// lost, is recognised as the call's own (the lost answers of the
// idemkit.Store contract): a claim and a completion by their conditions
// (our owner token), a release by its own tombstone, made at its :nowMs,
// which it writes again, and a mark (MarkUnknown, MarkIndeterminate) or a
// resolution by a random token of the call it writes in mk and finds in
// the item that refused the retry (returned with the refusal, or read
// with one consistent GetItem).
//
// A copy of a claim or of a renewal that lands late, after a later
// renewal (lu later than its own :lu), is refused: it would move the lease
// back to an end that may have passed, and a retry would take the running
// request over or mark it indeterminate. A renewal so refused reads the
// item and returns nil while the record is still ours. A resolution is
// fenced on the owner of the indeterminate record it read: a late copy,
// after the key ran again and another run's outcome became unknown, is
// refused.
//
// # Expiry
//
// DynamoDB deletes expired items lazily (hours to days late). Nothing here
// relies on it: every condition compares exp with the caller's now, and
// Get and ListIndeterminate treat an expired item as absent. A tombstone
// relies only on not being deleted before its exp.
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
// Condition failures become the contract's outcomes (idemkit.ErrNotOwner,
// idemkit.ErrNotIndeterminate, a lost claim). Every other failure
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
// every call for its records goes there (see Regions). The tenant is read
// from the record ID (idemkit.IDTenant), which ties this package to the ID
// encoding of idemkit.Scope.ID. An operator moves a tenant with a
// Failover, whose claims (and marks and resolutions of records of keys
// not first used after it) are fenced until the records its old home
// wrote are known to have replicated.
//
// # Table
//
// TableDefinition and CreateTable create a matching table for tests and
// local use (TableDefinitionFor and CreateTableFor for a single-table
// layout); the SAM template declares the same names.
package dynamo
