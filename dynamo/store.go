package dynamo

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/storearg"
)

// Client is the part of *dynamodb.Client the store uses. Inputs share
// some of their parts (condition expressions, attribute-name maps) between
// calls, so an implementation wrapping the SDK client must not modify an
// input it is given.
type Client interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ Client = (*dynamodb.Client)(nil)

// Defaults applied to the zero fields of Options.
const (
	// MaxItemSizeLimit is DynamoDB's hard limit on an item's size.
	MaxItemSizeLimit = 400 << 10
	// DefaultMaxItemSize leaves headroom under MaxItemSizeLimit.
	DefaultMaxItemSize = 350 << 10
	// DefaultCompressAbove is, by default (Options.CompressAbove zero),
	// the item size above which a body is compressed: one write unit.
	// An item that fits in one as it is cannot be billed less.
	DefaultCompressAbove = 1 << 10
	DefaultCallTimeout   = 2 * time.Second
	DefaultDeadlineGap   = 250 * time.Millisecond
	DefaultMaxAttempts   = 3
	DefaultMaxBackoff    = 200 * time.Millisecond
	DefaultListLimit     = 100
	// MaxListLimit bounds the records of one ListIndeterminate or
	// ListStale page.
	MaxListLimit = 1000
)

// Options configures a Store. The zero value is the documented defaults.
type Options struct {
	// MaxItemSize caps a stored item's size in bytes, counted by DynamoDB's
	// rules. A completion that would exceed it is stored without its body,
	// Snapshot.Omitted set. Zero: DefaultMaxItemSize (350 KB); values above
	// MaxItemSizeLimit are lowered to it.
	MaxItemSize int
	// CompressAbove is the body size from which bodies are compressed
	// (with Codec) when that makes them smaller. Zero: a body is
	// compressed when the item would be larger than DefaultCompressAbove
	// (1 KB, one write unit) with the body as is, and stored as is
	// otherwise, which is what a request costs least with
	// (docs/PERFORMANCE.md); negative: never.
	CompressAbove int
	// Codec compresses bodies: CodecZstd for the fewest write units, so
	// the cheapest requests, CodecS2 for the least CPU. Zero: CodecZstd.
	// Bodies stored with either are read by every store, so it can change
	// at any time.
	Codec Codec
	// CallTimeout bounds one DynamoDB call, SDK retries included.
	// Zero: DefaultCallTimeout (2 s).
	CallTimeout time.Duration
	// DeadlineGap ends a call this long before the context's deadline (the
	// Lambda's), so that a failing store still leaves time to answer 503.
	// A call keeps at least half the remaining time. Zero: DefaultDeadlineGap.
	DeadlineGap time.Duration
	// MaxAttempts is the SDK's attempts per call, the first included.
	// Zero: DefaultMaxAttempts (3).
	MaxAttempts int
	// MaxBackoff caps the SDK's delay between attempts.
	// Zero: DefaultMaxBackoff (200 ms).
	MaxBackoff time.Duration
	// KeepRetryQuota keeps the SDK's client-side retry quota (a token
	// bucket shared by every call of the client: 500 tokens, 5 per retried
	// error, 10 per retried timeout). Under sustained errors it runs dry,
	// and then each call gets one attempt, so a claim whose answer was lost
	// cannot be confirmed or freed. By default (false) the store's calls
	// use a retryer without that quota: MaxAttempts and CallTimeout bound
	// them instead.
	KeepRetryQuota bool
	// IndexInFlight gives in_flight records the hash key of
	// IndexIndeterminate ("in_flight"), so that ListStale can list the
	// ones whose lease ended without scanning the table. It costs index
	// writes on every claim and on every completion or release (see
	// docs/PERFORMANCE.md) and puts every in_flight record in one index
	// partition, whose write ceiling then bounds the claim rate of the
	// table. Every store writing to the table should set it alike.
	IndexInFlight bool

	// KeyAttr, SortKeyAttr, SortKeyValue and KeyPrefix say where records
	// are keyed, so that they can live in an existing table beside other
	// items (a single-table design; see the package documentation). Their
	// zero values are a table of its own: partition key DefaultKeyAttr
	// holding the record ID, no sort key. Every store of the table must
	// set them alike; TableDefinitionFor and Check follow them.
	//
	// KeyAttr names the partition key attribute. Zero: DefaultKeyAttr ("pk").
	KeyAttr string
	// SortKeyAttr names the sort key attribute, if the table has one;
	// every record has SortKeyValue in it (required with SortKeyAttr, at
	// most 1024 bytes).
	SortKeyAttr  string
	SortKeyValue string
	// KeyPrefix is put before the record ID in the partition key, e.g.
	// "IDEM#", at most MaxKeyPrefixLen bytes. A record ID too long to fit
	// with it (a readable ID of over 2048 bytes less the prefix) is
	// refused with idemkit.ErrRecordInvalid.
	KeyPrefix string
	// TTLAttr names the attribute that holds a record's expiry, epoch
	// seconds, on which the table's TTL is enabled, so that a shared table
	// whose TTL is already on another attribute ("ttl", "expires_at") can
	// keep it. Zero: TTLAttr ("exp"). It may not name a key attribute nor
	// another attribute of a record. Every store of the table must set it
	// alike; CreateTableFor and Check follow it.
	TTLAttr string
}

// check refuses options no default can mend.
func (o Options) check() error {
	if o.Codec != "" && !o.Codec.valid() {
		return fmt.Errorf("dynamo: Options.Codec %q: %w", o.Codec, idemkit.ErrInvalidConfig)
	}
	return o.checkLayout()
}

func (o Options) withDefaults() Options {
	if o.MaxItemSize <= 0 {
		o.MaxItemSize = DefaultMaxItemSize
	}
	if o.MaxItemSize > MaxItemSizeLimit {
		o.MaxItemSize = MaxItemSizeLimit
	}
	if o.Codec == "" {
		o.Codec = CodecZstd
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.DeadlineGap <= 0 {
		o.DeadlineGap = DefaultDeadlineGap
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	return o
}

// Store is an idemkit.OperatorStore on a DynamoDB table laid out as the
// package documentation describes. It is an idemkit.StaleLister too,
// listing stale leases only with Options.IndexInFlight (ListsStale). It
// is safe for concurrent use.
type Store struct {
	table string
	opts  Options
	// route returns the client for a record ID and the operator's
	// Failover that chose it (nil: none); list the client for a tenant's
	// listing ("" for all tenants).
	route func(id string) (Client, *Failover, error)
	list  func(tenant string) (Client, error)
	// regions holds every client by region name ("" for a store of one
	// client), for Check.
	regions map[string]Client
	// retryer replaces the client's for the store's calls, unless
	// Options.KeepRetryQuota.
	retryer aws.Retryer
	// tableName is table for the inputs, and optFns the SDK options of
	// every call (sdkOpts): made once, not per call.
	tableName *string
	optFns    []func(*dynamodb.Options)
	// lay is where the record ID is in an item; namesClaim and
	// namesRelease are the attribute names of those conditions, whose #pk
	// is its partition key.
	lay                      layout
	namesClaim, namesRelease map[string]string
}

var (
	_ idemkit.OperatorStore = (*Store)(nil)
	_ idemkit.StaleLister   = (*Store)(nil)
)

// New returns a Store keeping records in table through client. It refuses
// a nil client, an empty table and invalid Options with an error wrapping
// idemkit.ErrInvalidConfig.
func New(client Client, table string, opts Options) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("dynamo: nil client: %w", idemkit.ErrInvalidConfig)
	}
	if table == "" {
		return nil, fmt.Errorf("dynamo: empty table name: %w", idemkit.ErrInvalidConfig)
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	one := func(string) (Client, error) { return client, nil }
	route := func(string) (Client, *Failover, error) { return client, nil, nil }
	return newStore(table, opts, route, one, map[string]Client{"": client}), nil
}

func newStore(table string, opts Options, route func(string) (Client, *Failover, error), list func(string) (Client, error), regions map[string]Client) *Store {
	s := &Store{table: table, opts: opts.withDefaults(), route: route, list: list, regions: regions, tableName: aws.String(table),
		lay: layoutOf(opts), namesClaim: namesClaim, namesRelease: namesRelease}
	if s.lay.keyAttr != attrID {
		s.namesClaim, s.namesRelease = maps.Clone(namesClaim), maps.Clone(namesRelease)
		s.namesClaim["#pk"], s.namesRelease["#pk"] = s.lay.keyAttr, s.lay.keyAttr
	}
	s.namesRelease = s.lay.names(s.namesRelease)
	s.optFns = []func(*dynamodb.Options){s.sdkOpts}
	if !s.opts.KeepRetryQuota {
		s.retryer = retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = s.opts.MaxAttempts
			o.MaxBackoff = s.opts.MaxBackoff
			o.RateLimiter = ratelimit.None
		})
	}
	return s
}

// ctxFor returns the context of one call: bounded by CallTimeout and
// ending DeadlineGap before ctx's deadline (keeping at least half the
// time left), so that the SDK's retries stop in time.
func (s *Store) ctxFor(ctx context.Context) (context.Context, context.CancelFunc) {
	now := time.Now()
	end := now.Add(s.opts.CallTimeout)
	if dl, ok := ctx.Deadline(); ok {
		d := dl.Add(-s.opts.DeadlineGap)
		if half := now.Add(dl.Sub(now) / 2); d.Before(half) {
			d = half
		}
		if d.Before(end) {
			end = d
		}
	}
	return context.WithDeadline(ctx, end)
}

// sdkOpts bounds the SDK's retries. The store's own retryer already makes
// at most MaxAttempts attempts: setting RetryMaxAttempts too would only
// make the SDK wrap it again on every call.
func (s *Store) sdkOpts(o *dynamodb.Options) {
	if s.retryer != nil {
		o.Retryer = s.retryer
		return
	}
	o.RetryMaxAttempts = s.opts.MaxAttempts
	if o.Retryer != nil {
		o.Retryer = retry.AddWithMaxBackoffDelay(o.Retryer, s.opts.MaxBackoff)
	}
}

// fail wraps a failed call as idemkit.ErrStoreUnavailable: every error that
// is not a condition outcome means the store could not answer (network,
// throttling, 5xx, timeout, and also a missing table or permission, which
// must fail closed too: those name the table and wrap ErrTableNotFound or
// ErrAccessDenied, and idemkit.ErrNothingStored). A ValidationException is
// the exception: the request itself is refused, so it is
// idemkit.ErrRecordInvalid.
func (s *Store) fail(op string, err error) error {
	if invalid(err) {
		return fmt.Errorf("dynamo: %s: %w: %w", op, idemkit.ErrRecordInvalid, err)
	}
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return &idemkit.StoreError{Op: op, Err: &tableError{table: s.table, what: "not found", sentinel: ErrTableNotFound, err: err}}
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "AccessDeniedException" {
		return &idemkit.StoreError{Op: op, Err: &tableError{table: s.table, what: "access denied", sentinel: ErrAccessDenied, err: err}}
	}
	return &idemkit.StoreError{Op: op, Err: err}
}

// Errors of a call the table itself refuses. Each is wrapped with
// idemkit.ErrNothingStored, and in a StoreError (ErrStoreUnavailable).
var (
	// ErrTableNotFound: the server has no table of the store's name
	// (ResourceNotFoundException). Nothing was stored.
	ErrTableNotFound = errors.New("dynamo: table not found")
	// ErrAccessDenied: the caller may not make the call on the table
	// (AccessDeniedException: a policy lacks the action). Nothing was
	// stored.
	ErrAccessDenied = errors.New("dynamo: access to the table denied")
)

// tableError names the table a call was refused on, and says that
// nothing was stored.
type tableError struct {
	table, what string
	sentinel    error
	err         error
}

func (e *tableError) Error() string {
	return fmt.Sprintf("dynamo: table %s %s, nothing stored: %v", e.table, e.what, e.err)
}

func (e *tableError) Unwrap() []error { return []error{e.sentinel, idemkit.ErrNothingStored, e.err} }

// refused classifies the error of a conditional write and reports its
// usage: a failed condition is the method's sentinel (refusal), anything
// else a StoreError.
func (s *Store) refused(ctx context.Context, op string, err, refusal error) error {
	if _, ok := conditionFailed(err); ok {
		failedWriteUsage(ctx, nil)
		return refusal
	}
	usage(ctx, nil, true)
	return s.fail(op, err)
}

// client returns the client of id's home region, or a StoreError when ctx
// is done or the region cannot be had, or an error wrapping
// idemkit.ErrRecordInvalid when id names no region (a regional store
// cannot read its tenant).
func (s *Store) client(ctx context.Context, op, id string) (Client, error) {
	c, _, err := s.routed(ctx, op, id)
	return c, err
}

// routed is client, with the Failover that routed id (nil: none).
func (s *Store) routed(ctx context.Context, op, id string) (Client, *Failover, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, s.fail(op, err)
	}
	c, fo, err := s.route(id)
	if errors.Is(err, idemkit.ErrRecordInvalid) {
		return nil, nil, fmt.Errorf("dynamo: %s: %w", op, err)
	}
	if err != nil {
		return nil, nil, s.fail(op, err)
	}
	return c, fo, nil
}

func conditionFailed(err error) (*types.ConditionalCheckFailedException, bool) {
	var cf *types.ConditionalCheckFailedException
	ok := errors.As(err, &cf)
	return cf, ok
}

// usage reports one call's consumed capacity to the guarded request.
func usage(ctx context.Context, cc *types.ConsumedCapacity, write bool) {
	var r, w float64
	if cc != nil {
		switch {
		case cc.ReadCapacityUnits != nil || cc.WriteCapacityUnits != nil:
			r, w = aws.ToFloat64(cc.ReadCapacityUnits), aws.ToFloat64(cc.WriteCapacityUnits)
		case write:
			w = aws.ToFloat64(cc.CapacityUnits)
		default:
			r = aws.ToFloat64(cc.CapacityUnits)
		}
	}
	idemkit.AddUsage(ctx, r, w)
}

// failedWriteUsage reports a refused conditional write. DynamoDB charges it
// by the size of the existing item (at least one unit) but does not return
// the consumed capacity with the error, so the units are an estimate.
func failedWriteUsage(ctx context.Context, old map[string]types.AttributeValue) {
	w := 1.0
	if old != nil {
		w = math.Max(1, math.Ceil(float64(itemSize(old))/1024))
	}
	idemkit.AddUsage(ctx, 0, w)
}

// key returns the key of the item of record id.
func (s *Store) key(id string) map[string]types.AttributeValue { return s.lay.key(id) }

func nowSec(now time.Time) types.AttributeValue   { return num(now.Unix() + keptPastSec) }
func nowMilli(now time.Time) types.AttributeValue { return num(now.UnixMilli()) }

// Expressions. A record is live while exp > :nowS (exp is ExpiresAt in
// seconds rounded up, plus KeptPast; :nowS is now in seconds plus
// KeptPast); a lease has expired when lu <= :nowMs.
//
// A claim stores its record only where no item is (attribute_not_exists),
// or over its own in_flight record with a lease not after its own (a
// retried claim). A reclaim stores it over the item it read, unchanged:
// the same owner, state and lease (every write changes one of the three),
// or over its own in_flight record. Neither judges the item: the engine
// decides from the item a refused claim returns whether to reclaim it.
//
// A completion is taken by its owner's record in any state but released
// unless an operator resolved it (ra, which every failed record and a
// completed one an operator decided carry): in_flight, indeterminate (a
// late completion) and completed (a retried one). Said that way its
// condition is the shortest that is correct: on dynalite the longer
// form (the three states in parentheses) took 1-1.5 ms more per
// completion (make bench, "Request shapes").
const (
	condAbsent = "attribute_not_exists(#pk) OR #exp <= :nowS"
	// The frequent conditions name their attributes as they are, without
	// placeholders, where no DynamoDB reserved word stands in the way:
	// each name sent with a request is bytes on every fresh request. The
	// key attribute and the TTL attribute, which Options may name, keep
	// theirs.
	condOurs    = "st = :i AND ow = :o AND lu <= :l"
	condClaim   = "attribute_not_exists(#pk) OR (" + condOurs + ")"
	condReclaim = "(ow = :po AND st = :ps AND lu = :pl) OR (" + condOurs + ")"
	// condFenced is a claim fenced by a Failover: it may only make again
	// our own claim, never store a new record or replace another's.
	condFenced   = condOurs + " AND #exp > :nowS"
	condComplete = "ow = :o AND #exp > :n AND st <> :r AND attribute_not_exists(ra)"
	condOwned    = "#ow = :owner AND #st = :inflight AND #exp > :nowS"
	condExtend   = condOwned + " AND #lu <= :lu"
	condRelease  = condAbsent + " OR #st = :released OR (#ow = :owner AND #st = :inflight)"
	// condReleaseOwned is a release routed by a fencing Failover: it
	// replaces only our own claim, never an absent item, since a tombstone
	// written in the new home would win, by last-writer-wins replication,
	// over an older record of the key not yet replicated from the old one.
	condReleaseOwned = "#ow = :owner AND #st = :inflight"
	condMark         = "#ow = :owner AND #st = :inflight AND #exp > :nowS AND #lu <= :nowMs"
	condResolve      = "#st = :indeterminate AND #exp > :nowS AND #ow = :owner"
)

// The condition expressions and attribute names of the frequent calls,
// made once: inputs only read them (a Client must not modify its input).
var (
	pCondClaim        = aws.String(condClaim)
	pCondReclaim      = aws.String(condReclaim)
	pCondClaimFenced  = aws.String(condFenced)
	pCondComplete     = aws.String(condComplete)
	pCondRelease      = aws.String(condRelease)
	pCondReleaseOwned = aws.String(condReleaseOwned)
	pCondExtend       = aws.String(condExtend)
	pUpdateLease      = aws.String("SET #lu = :lu")

	namesClaim        = map[string]string{"#pk": attrID}
	namesComplete     = map[string]string{"#exp": attrExpiresAt}
	namesRelease      = map[string]string{"#pk": attrID, "#exp": attrExpiresAt, "#ow": attrOwner, "#st": attrState}
	namesExtend       = map[string]string{"#lu": attrLeaseUntil, "#ow": attrOwner, "#st": attrState, "#exp": attrExpiresAt}
	namesReleaseOwned = map[string]string{"#ow": attrOwner, "#st": attrState}
	namesClaimFenced  = map[string]string{"#exp": attrExpiresAt}
)

var (
	vInFlight      = str(string(idemkit.StateInFlight))
	vIndeterminate = str(string(idemkit.StateIndeterminate))
	vReleased      = str(stReleased)
)

// stReleased is the state of a released key's tombstone, which counts as
// no record (see Release).
const stReleased = string(idemkit.StateReleased)

// released reports whether item is a tombstone.
func released(item map[string]types.AttributeValue) bool { return attrS(item, attrState) == stReleased }

// claimAttempts bounds the put-then-get rounds of a claim whose blocking
// record vanished or changed before it could be read.
const claimAttempts = 3

// Claim implements idemkit.Store with one conditional PutItem. When the
// server does not return the item that refused it with the failure, one
// consistent GetItem reads it; if that finds none (deleted meanwhile), the
// claim is tried again, up to three times, and then reported lost with a
// nil Existing, which the engine retries. A claim fenced by a Failover
// (see Failover) wins only over its own in_flight record: it returns the
// live record that answers the request without a claim, or else a
// *FailoverError.
func (s *Store) Claim(ctx context.Context, rec *idemkit.Record, now time.Time) (idemkit.ClaimResult, error) {
	const op = "claim"
	if err := storearg.Claim(rec); err != nil {
		return idemkit.ClaimResult{}, fmt.Errorf("dynamo: %s: %w", op, err)
	}
	return s.claim(ctx, op, rec, nil, now)
}

// Reclaim implements idemkit.Store with one PutItem conditioned on the
// item read (its owner, state and lease), as Claim is made.
func (s *Store) Reclaim(ctx context.Context, rec, prev *idemkit.Record, now time.Time) (idemkit.ClaimResult, error) {
	const op = "reclaim"
	if err := storearg.Reclaim(rec, prev); err != nil {
		return idemkit.ClaimResult{}, fmt.Errorf("dynamo: %s: %w", op, err)
	}
	return s.claim(ctx, op, rec, prev, now)
}

// claim makes a Claim (prev nil) or a Reclaim of rec.
func (s *Store) claim(ctx context.Context, op string, rec, prev *idemkit.Record, now time.Time) (idemkit.ClaimResult, error) {
	if err := checkUTF8(op, rec); err != nil {
		return idemkit.ClaimResult{}, err
	}
	if err := s.lay.keyTooLong(op, rec.ID); err != nil {
		return idemkit.ClaimResult{}, err
	}
	client, fo, err := s.routed(ctx, op, rec.ID)
	if err != nil {
		return idemkit.ClaimResult{}, err
	}
	fenced := fo.fences(rec.Scope.Key, now)
	in, err := s.claimInput(rec, prev, now, fenced)
	if err != nil {
		return idemkit.ClaimResult{}, err
	}
	for attempt := 1; ; attempt++ {
		cctx, cancel := s.ctxFor(ctx)
		out, err := client.PutItem(cctx, in, s.optFns...)
		cancel()
		if err == nil {
			usage(ctx, out.ConsumedCapacity, true)
			return s.claimWon(out), nil
		}
		cf, ok := conditionFailed(err)
		if !ok {
			usage(ctx, nil, true)
			return idemkit.ClaimResult{}, s.fail(op, err)
		}
		cur, err := s.refusedBy(ctx, client, op, cf, rec.ID)
		switch {
		case err != nil:
			return idemkit.ClaimResult{}, err
		case fenced:
			return s.fenced(cur, rec, now, fo)
		case cur != nil && !ours(cur, rec):
			return idemkit.ClaimResult{Existing: cur}, nil
		case attempt == claimAttempts:
			// Gone, or ours, each time it was read: let the engine try
			// again.
			return idemkit.ClaimResult{}, nil
		}
	}
}

// ours reports whether cur is rec's own in_flight claim with a lease not
// after rec's, which a claim of rec stores over (a retried claim).
func ours(cur, rec *idemkit.Record) bool {
	return cur.State == idemkit.StateInFlight && cur.Owner == rec.Owner && cur.LeaseUntil.UnixMilli() <= ceilMilli(rec.LeaseUntil)
}

// checkUTF8 refuses a record whose ID, scope, fingerprint or owner is not
// UTF-8 with an error wrapping idemkit.ErrRecordInvalid. DynamoDB strings
// are UTF-8 and the SDK sends each invalid byte as U+FFFD, so two scopes
// differing only in such bytes would name one item: one would replay the
// other's response.
func checkUTF8(op string, rec *idemkit.Record) error {
	for _, f := range [...]struct{ name, v string }{
		{"ID", rec.ID}, {"tenant", rec.Scope.Tenant}, {"operation", rec.Scope.Operation},
		{"key", rec.Scope.Key}, {"fingerprint", rec.Fingerprint}, {"owner", rec.Owner},
	} {
		if !utf8.ValidString(f.v) {
			return fmt.Errorf("dynamo: %s %q: %w: its %s is not UTF-8", op, rec.ID, idemkit.ErrRecordInvalid, f.name)
		}
	}
	return nil
}

// claimInput returns the conditional PutItem of a claim of rec (in place
// of prev, for a Reclaim), or an error wrapping idemkit.ErrRecordInvalid
// when its item would exceed MaxItemSize even without the body. A fenced
// claim's condition accepts only our own live in_flight record.
func (s *Store) claimInput(rec, prev *idemkit.Record, now time.Time, fenced bool) (*dynamodb.PutItemInput, error) {
	item := baseItem(rec)
	s.lay.keyItem(item, rec.ID)
	if s.opts.IndexInFlight && rec.State == idemkit.StateInFlight {
		item[attrIndeterminate] = str(inFlightValue)
	}
	if !s.fits(item, rec.Snapshot) {
		return nil, s.tooLarge(rec.ID, item)
	}
	// Our own in_flight record is ours to claim again only with the lease
	// this claim writes: a late copy of the claim, landing after the lease
	// was renewed, must not move it back.
	cond, names := pCondClaim, s.namesClaim
	values := map[string]types.AttributeValue{":i": vInFlight, ":o": item[attrOwner], ":l": item[attrLeaseUntil]}
	switch {
	case fenced:
		cond, names = pCondClaimFenced, s.lay.names(namesClaimFenced)
		values[":nowS"] = nowSec(now)
	case prev != nil:
		cond, names = pCondReclaim, nil
		values[":po"], values[":ps"], values[":pl"] = str(prev.Owner), str(string(prev.State)), num(prev.LeaseUntil.UnixMilli())
	}
	return &dynamodb.PutItemInput{
		TableName:                           s.tableName,
		Item:                                item,
		ConditionExpression:                 cond,
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	}, nil
}

// claimWon returns the result of a claim whose PutItem succeeded. The
// item replaced is not asked for (ReturnValues would add to every claim):
// a Claim replaces none but its own, and a Reclaim's caller knows the one
// it replaced.
func (s *Store) claimWon(*dynamodb.PutItemOutput) idemkit.ClaimResult {
	return idemkit.ClaimResult{Won: true}
}

// refusedBy reports the usage of a claim refused by its condition (cf) and
// returns the record that refused it, in any state and live or not: the
// item returned with the failure, or else the item read after it (nil:
// none).
func (s *Store) refusedBy(ctx context.Context, client Client, op string, cf *types.ConditionalCheckFailedException, id string) (*idemkit.Record, error) {
	failedWriteUsage(ctx, cf.Item)
	item := cf.Item
	if len(item) == 0 {
		var err error
		if item, err = s.getItem(ctx, client, op, id); err != nil || len(item) == 0 {
			return nil, err
		}
	}
	return s.lay.decode(item)
}

// fenced answers a claim that a Failover's fence refused (see Failover):
// the live record cur that answers the request without a claim (in
// flight, completed, indeterminate), as any claim would be answered, or
// else a *FailoverError naming the failover: a claim in place of a
// record that lets the key run again (released, expired, failed, a stale
// lease) waits for reconciliation.
func (s *Store) fenced(cur, rec *idemkit.Record, now time.Time, fo *Failover) (idemkit.ClaimResult, error) {
	if cur != nil && cur.Live(now) && cur.State != idemkit.StateReleased && cur.State != idemkit.StateFailed && !staleLease(cur, rec, now) {
		return idemkit.ClaimResult{Existing: cur}, nil
	}
	ferr := &FailoverError{Tenant: rec.Scope.Tenant, Key: rec.Scope.Key, Failover: *fo}
	if cur != nil && cur.Live(now) && cur.State != idemkit.StateReleased {
		ferr.State = cur.State
	}
	return idemkit.ClaimResult{}, s.fail("claim", ferr)
}

// fits adds snap, if any, to item (snapshotAttrs) and reports whether the
// item is within MaxItemSize. snapshotAttrs checks the size of the item it
// completes, so the item is measured once more only without a snapshot.
func (s *Store) fits(item map[string]types.AttributeValue, snap *idemkit.Snapshot) bool {
	if snap != nil {
		return snapshotAttrs(item, snap, s.opts.MaxItemSize, s.opts.CompressAbove, s.opts.Codec)
	}
	return itemSize(item) <= s.opts.MaxItemSize
}

func (s *Store) tooLarge(id string, item map[string]types.AttributeValue) error {
	return fmt.Errorf("dynamo: record %q needs %d bytes without its body, over the %d-byte item cap: %w", id, itemSize(item), s.opts.MaxItemSize, idemkit.ErrRecordInvalid)
}

// Complete implements idemkit.Store with one conditional UpdateItem
// fenced on the owner token and the state: in_flight, indeterminate (a
// late completion), or completed without an operator's resolution. It
// sends what the completion adds or may change (the state, the cause, the
// completion time, the snapshot) and removes the index keys and the mark;
// the rest of the item is the owner's claim's, as stored (its lease as
// last renewed). A
// snapshot that would make the item larger than MaxItemSize is stored
// without its body, Snapshot.Omitted set.
func (s *Store) Complete(ctx context.Context, rec *idemkit.Record, now time.Time) error {
	const op = "complete"
	if err := storearg.Complete(rec); err != nil {
		return fmt.Errorf("dynamo: %s: %w", op, err)
	}
	if err := checkUTF8(op, rec); err != nil {
		return err
	}
	if err := s.lay.keyTooLong(op, rec.ID); err != nil {
		return err
	}
	client, err := s.client(ctx, op, rec.ID)
	if err != nil {
		return err
	}
	item := baseItem(rec)
	s.lay.keyItem(item, rec.ID)
	if !s.fits(item, rec.Snapshot) {
		return s.tooLarge(rec.ID, item)
	}
	cctx, cancel := s.ctxFor(ctx)
	defer cancel()
	out, err := client.UpdateItem(cctx, s.completion(rec, item, now), s.optFns...)
	if err != nil {
		return s.refused(ctx, op, err, idemkit.ErrNotOwner)
	}
	usage(ctx, out.ConsumedCapacity, true)
	return nil
}

// completed are the attributes a completion sets, from its item: the
// state, the completion time and the snapshot's. The others (the scope,
// the fingerprint, the owner, the claim's times, its lease as last
// renewed, its expiry) are the owner's claim's, which the condition
// holds, and are not sent again. None is a DynamoDB reserved word, so
// none needs a placeholder.
var completed = []string{attrState, attrCompletedAt, attrStatus, attrHeader, attrBody, attrBodyEncoding, attrBase64, attrOmitted}

// completionValues are the placeholders of the values a completion
// sets, made once.
var completionValues = func() []string {
	p := make([]string, len(completed)+1)
	for i := range p {
		p[i] = ":" + strconv.Itoa(i)
	}
	return p
}()

// completion returns the UpdateItem of rec's completion, item being rec's
// whole item (its size checked): it sets what the completion adds and
// removes what only a claim or a mark carries (the index keys, the mark,
// and the cause unless rec has one). It allocates little: it is on every
// fresh request's path.
func (s *Store) completion(rec *idemkit.Record, item map[string]types.AttributeValue, now time.Time) *dynamodb.UpdateItemInput {
	values := make(map[string]types.AttributeValue, len(completed)+4)
	values[":o"], values[":n"], values[":r"] = item[attrOwner], nowSec(now), vReleased
	var upd strings.Builder
	upd.Grow(96)
	upd.WriteString("SET ")
	n := 0
	set := func(name string, v types.AttributeValue) {
		if n > 0 {
			upd.WriteString(", ")
		}
		p := completionValues[n]
		n++
		values[p] = v
		upd.WriteString(name)
		upd.WriteString(" = ")
		upd.WriteString(p)
	}
	for _, name := range completed {
		if v, ok := item[name]; ok {
			set(name, v)
		}
	}
	if v, ok := item[attrCause]; ok {
		set(attrCause, v)
		upd.WriteString(removeMarks)
	} else {
		upd.WriteString(removeMarks + ", " + attrCause)
	}
	expr := upd.String()
	return &dynamodb.UpdateItemInput{
		TableName:                 s.tableName,
		Key:                       s.key(rec.ID),
		UpdateExpression:          &expr,
		ConditionExpression:       pCondComplete,
		ExpressionAttributeNames:  s.lay.names(namesComplete),
		ExpressionAttributeValues: values,
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
}

// removeMarks removes what only a claim or a mark carries.
const removeMarks = " REMOVE " + attrIndeterminate + ", " + attrIndeterminateTenant + ", " + attrMark

// Release implements idemkit.Store with one conditional PutItem of the
// key's tombstone (st released, ow the owner, lu the release's time, exp
// KeptPast later), in place of the owner's in_flight record, of a
// tombstone, or of no live record. A refused release is
// idemkit.ErrNotOwner: another's live record, or ours in another state.
// Routed by a Failover that fences, it replaces only the owner's in_flight
// record: a tombstone of an absent one would win, under global tables'
// last-writer-wins replication, over an older record of the key that has
// not replicated from the previous region yet.
func (s *Store) Release(ctx context.Context, id, owner string, now time.Time) error {
	const op = "release"
	if err := storearg.Owned(id, owner); err != nil {
		return fmt.Errorf("dynamo: %s: %w", op, err)
	}
	if !utf8.ValidString(id) || s.lay.keyTooLong(op, id) != nil {
		// No record has such an ID (Claim refuses it); sent as is, the SDK
		// would write the tombstone of another ID, or DynamoDB refuse the
		// key as too long.
		return nil
	}
	client, fo, err := s.routed(ctx, op, id)
	if err != nil {
		return err
	}
	cond, names := pCondRelease, s.namesRelease
	values := map[string]types.AttributeValue{":nowS": nowSec(now), ":owner": str(owner), ":inflight": vInFlight, ":released": vReleased}
	if fo.fencing() {
		cond, names = pCondReleaseOwned, namesReleaseOwned
		values = map[string]types.AttributeValue{":owner": values[":owner"], ":inflight": vInFlight}
	}
	tomb := map[string]types.AttributeValue{attrID: str(id), attrState: vReleased, attrOwner: str(owner), attrLeaseUntil: nowMilli(now),
		attrExpiresAt: num(expSec(now))}
	s.lay.keyItem(tomb, id)
	cctx, cancel := s.ctxFor(ctx)
	defer cancel()
	out, err := client.PutItem(cctx, &dynamodb.PutItemInput{
		TableName:                           s.tableName,
		Item:                                tomb,
		ConditionExpression:                 cond,
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	}, s.optFns...)
	if err == nil {
		usage(ctx, out.ConsumedCapacity, true)
		return nil
	}
	cur, err := s.refusedItem(ctx, client, op, id, err, "whether the key is free")
	switch {
	case err != nil:
		return err
	case fo.fencing() && (len(cur) == 0 || released(cur)):
		return nil // the fenced release writes no tombstone of its own
	}
	return idemkit.ErrNotOwner
}

// Extend implements idemkit.Store with one conditional UpdateItem of the
// lease, fenced on the owner token and state in_flight, that never moves
// the lease back: a late copy of an earlier renewal, landing after a
// later one, is refused by the condition; the item, returned with the
// failure (read with one consistent GetItem where the server does not),
// then tells it from a record that is no longer ours.
func (s *Store) Extend(ctx context.Context, id, owner string, leaseUntil, now time.Time) error {
	const op = "extend"
	if err := storearg.Owned(id, owner); err != nil {
		return fmt.Errorf("dynamo: %s: %w", op, err)
	}
	client, err := s.client(ctx, op, id)
	if err != nil {
		return err
	}
	cctx, cancel := s.ctxFor(ctx)
	defer cancel()
	out, err := client.UpdateItem(cctx, &dynamodb.UpdateItemInput{
		TableName:                           s.tableName,
		Key:                                 s.key(id),
		UpdateExpression:                    pUpdateLease,
		ConditionExpression:                 pCondExtend,
		ExpressionAttributeNames:            s.lay.names(namesExtend),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":lu": num(ceilMilli(leaseUntil)), ":owner": str(owner), ":inflight": vInFlight, ":nowS": nowSec(now)},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	}, s.optFns...)
	if err == nil {
		usage(ctx, out.ConsumedCapacity, true)
		return nil
	}
	cur, err := s.refusedItem(ctx, client, op, id, err, "whether it is still ours")
	if err != nil {
		return err
	}
	if attrS(cur, attrState) != string(idemkit.StateInFlight) || attrS(cur, attrOwner) != owner || s.lay.expired(cur, now) {
		return idemkit.ErrNotOwner
	}
	// Ours, with a lease already ending at or after leaseUntil.
	return nil
}

// refusedItem handles the failure err of a conditional write of the item
// with id, counted in ctx's usage. When err is a refusal it returns the
// item that failed the condition (returned with it, or read with one
// consistent GetItem where the server does not; nil when there is none),
// for the caller to tell whether the write was its own after all. Any
// other failure, and a failed read (which was to tell what), is a
// StoreError.
func (s *Store) refusedItem(ctx context.Context, client Client, op, id string, err error, what string) (map[string]types.AttributeValue, error) {
	cf, ok := conditionFailed(err)
	if !ok {
		usage(ctx, nil, true)
		return nil, s.fail(op, err)
	}
	failedWriteUsage(ctx, cf.Item)
	if len(cf.Item) > 0 {
		return cf.Item, nil
	}
	item, err := s.getItem(ctx, client, op, id)
	if err != nil {
		return nil, fmt.Errorf("dynamo: %s was refused, and the record could not be read again to tell %s: %w", op, what, err)
	}
	return item, nil
}

// attrS returns the string attribute name of item; "" when it has none.
func attrS(item map[string]types.AttributeValue, name string) string {
	v, _ := item[name].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

// MarkUnknown implements idemkit.Store with one conditional UpdateItem,
// fenced on the owner token and state in_flight, that also sets the sparse
// index keys and ends the lease at now.
func (s *Store) MarkUnknown(ctx context.Context, id, owner string, now time.Time) error {
	return s.toIndeterminate(ctx, "mark unknown", id, owner, now, condOwned, num(ceilMilli(now)), idemkit.CauseOutcomeUnknown)
}

// MarkIndeterminate implements idemkit.Store with one conditional
// UpdateItem that also sets the sparse index keys.
func (s *Store) MarkIndeterminate(ctx context.Context, id, owner string, now time.Time) error {
	if err := s.fenceWrite(ctx, "mark indeterminate", id, now); err != nil {
		return err
	}
	return s.toIndeterminate(ctx, "mark indeterminate", id, owner, now, condMark, nowMilli(now), idemkit.CauseLeaseExpired)
}

// toIndeterminate sets the record's state to indeterminate, its cause, its
// index keys and a new token (mk) under cond; cause CauseOutcomeUnknown
// (MarkUnknown) also sets its lease end to nowMs (which cond compares with
// otherwise). Its own mark, refused
// on the SDK's retry after its answer was lost, is reported as made
// (ownRefused); any other mark, earlier or concurrent, is ErrNotOwner.
func (s *Store) toIndeterminate(ctx context.Context, op, id, owner string, now time.Time, cond string, nowMs types.AttributeValue, cause idemkit.Cause) error {
	if err := storearg.Owned(id, owner); err != nil {
		return fmt.Errorf("dynamo: %s: %w", op, err)
	}
	client, err := s.client(ctx, op, id)
	if err != nil {
		return err
	}
	update := "SET #st = :indeterminate, #ix = :ix, #it = #tn, #mk = :mk, #cz = :cz"
	if cause == idemkit.CauseOutcomeUnknown {
		update += ", #lu = :nowMs"
	}
	mark := rand.Text()
	cctx, cancel := s.ctxFor(ctx)
	defer cancel()
	out, err := client.UpdateItem(cctx, &dynamodb.UpdateItemInput{
		TableName:                           s.tableName,
		Key:                                 s.key(id),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            map[string]string{"#st": attrState, "#ix": attrIndeterminate, "#it": attrIndeterminateTenant, "#tn": attrTenant, "#ow": attrOwner, "#exp": s.lay.ttl, "#lu": attrLeaseUntil, "#mk": attrMark, "#cz": attrCause},
		ExpressionAttributeValues:           map[string]types.AttributeValue{":indeterminate": vIndeterminate, ":ix": str(indeterminateValue), ":owner": str(owner), ":inflight": vInFlight, ":nowS": nowSec(now), ":nowMs": nowMs, ":mk": str(mark), ":cz": str(string(cause))},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	}, s.optFns...)
	if err == nil {
		usage(ctx, out.ConsumedCapacity, true)
		return nil
	}
	_, err = s.ownRefused(ctx, client, op, id, err, idemkit.StateIndeterminate, mark, now, idemkit.ErrNotOwner)
	return err
}

// ownRefused handles the failure err of a state change of the item with
// id that wrote the token mark in mk: when err is a refusal and the item
// that failed the condition (refusedItem) is live, in state st and holds
// mark, the change is this very call's, landed by an attempt whose answer
// was lost and refused on the SDK's retry, and the item is returned. Any
// other refusal is refusal; any other error, or a failed read, a
// StoreError.
func (s *Store) ownRefused(ctx context.Context, client Client, op, id string, err error, st idemkit.State, mark string, now time.Time, refusal error) (map[string]types.AttributeValue, error) {
	old, err := s.refusedItem(ctx, client, op, id, err, "whether the write was this call's own, its answer lost")
	if err != nil {
		return nil, err
	}
	if attrS(old, attrState) != string(st) || attrS(old, attrMark) != mark || s.lay.expired(old, now) {
		return nil, refusal
	}
	return old, nil
}

// Resolve implements idemkit.OperatorStore with one conditional UpdateItem. A zero
// res.ResolvedAt is stored as now; a completed resolution's snapshot
// follows the same size rules as Complete and is the record's Snapshot
// (Resolution.Snapshot is not stored twice). A resolution first reads the
// item (one consistent GetItem), to refuse at once a record of another
// owner than the run the operator checked; the update is fenced on that
// owner, so that a copy of it landing late, after the key ran again and
// that run's outcome became unknown too, is refused instead of deciding
// an outcome nobody looked at; and a completed resolution's snapshot is
// budgeted against the rest of the item, so that an answer too large for
// it is stored without its body instead of being refused. res.Snapshot is
// required when res.As is completed and ignored when it is failed.
func (s *Store) Resolve(ctx context.Context, id, owner string, res idemkit.Resolution, now time.Time) (*idemkit.Record, error) {
	const op = "resolve"
	if err := storearg.Resolution(id, owner, res); err != nil {
		return nil, fmt.Errorf("dynamo: %w", err)
	}
	if err := s.fenceWrite(ctx, op, id, now); err != nil {
		return nil, err
	}
	client, err := s.client(ctx, op, id)
	if err != nil {
		return nil, err
	}
	at := res.ResolvedAt
	if at.IsZero() {
		at = now
	}
	mark := rand.Text()
	set := map[string]types.AttributeValue{attrState: str(string(res.As)), attrMark: str(mark)}
	resolutionAttrs(set, &res, at)
	putTime(set, attrReplayUntil, res.ReplayUntil)
	if !res.ExpiresAt.IsZero() {
		set[s.lay.ttl] = num(expSec(res.ExpiresAt))
	}
	if res.As == idemkit.StateCompleted {
		set[attrCompletedAt] = num(at.UnixMilli())
	}
	// The resolution is of the run the operator checked, and is fenced on
	// its owner: a resolution read against another run (the key ran again
	// and that run's outcome became unknown too), or a copy of it landing
	// late, is refused instead of deciding an outcome nobody looked at.
	rest, read, err := s.rest(ctx, client, op, id, set, now)
	if err != nil {
		return nil, err
	}
	if read != owner {
		return nil, idemkit.ErrNotIndeterminate
	}
	// The snapshot is budgeted against the rest of the item as stored:
	// the ID alone does not bound it (a hashed ID is short whatever the
	// scope, and the fingerprint has no fixed length).
	if res.As == idemkit.StateCompleted && !snapshotAttrs(set, res.Snapshot, s.opts.MaxItemSize-rest, s.opts.CompressAbove, s.opts.Codec) {
		return nil, s.tooLarge(id, set)
	}
	names := map[string]string{"#ix": attrIndeterminate, "#it": attrIndeterminateTenant, "#exp": s.lay.ttl, "#ow": attrOwner}
	values := map[string]types.AttributeValue{":indeterminate": vIndeterminate, ":nowS": nowSec(now), ":owner": str(owner)}
	upd := "SET "
	i := 0
	for name, v := range set {
		if i > 0 {
			upd += ", "
		}
		n, p := "#a"+strconv.Itoa(i), ":a"+strconv.Itoa(i)
		names[n], values[p] = name, v
		upd += n + " = " + p
		i++
	}
	names["#st"] = attrState
	upd += " REMOVE #ix, #it"
	cctx, cancel := s.ctxFor(ctx)
	defer cancel()
	out, err := client.UpdateItem(cctx, &dynamodb.UpdateItemInput{
		TableName:                           s.tableName,
		Key:                                 s.key(id),
		UpdateExpression:                    aws.String(upd),
		ConditionExpression:                 aws.String(condResolve),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	}, s.optFns...)
	if err != nil {
		item, err := s.ownRefused(ctx, client, op, id, err, res.As, mark, now, idemkit.ErrNotIndeterminate)
		if err != nil {
			return nil, err
		}
		return s.lay.decode(item)
	}
	usage(ctx, out.ConsumedCapacity, true)
	return s.lay.decode(out.Attributes)
}

// rest reads the item with id with one consistent GetItem and returns the
// size of what a resolution of it keeps (every attribute but those set
// replaces and the index keys it removes) and its owner. A missing,
// expired or not indeterminate item is ErrNotIndeterminate, as the update
// would be.
func (s *Store) rest(ctx context.Context, client Client, op, id string, set map[string]types.AttributeValue, now time.Time) (int, string, error) {
	item, err := s.getItem(ctx, client, op, id)
	if err != nil {
		return 0, "", err
	}
	owner := attrS(item, attrOwner)
	if attrS(item, attrState) != string(idemkit.StateIndeterminate) || owner == "" || s.lay.expired(item, now) {
		return 0, "", idemkit.ErrNotIndeterminate
	}
	n := 0
	for name, v := range item {
		if _, replaced := set[name]; replaced || name == attrIndeterminate || name == attrIndeterminateTenant {
			continue
		}
		n += len(name) + valueSize(v)
	}
	return n, owner, nil
}

// Get implements idemkit.Store with one consistent GetItem.
func (s *Store) Get(ctx context.Context, id string, now time.Time) (*idemkit.Record, error) {
	const op = "get"
	if err := storearg.ID(id); err != nil {
		return nil, fmt.Errorf("dynamo: %s: %w", op, err)
	}
	if s.lay.keyTooLong(op, id) != nil {
		return nil, idemkit.ErrNotFound // Claim refuses such an ID
	}
	client, err := s.client(ctx, op, id)
	if err != nil {
		return nil, err
	}
	return s.get(ctx, client, op, id, now)
}

func (s *Store) get(ctx context.Context, client Client, op, id string, now time.Time) (*idemkit.Record, error) {
	item, err := s.getItem(ctx, client, op, id)
	if err != nil {
		return nil, err
	}
	if len(item) == 0 || s.lay.expired(item, now) || released(item) {
		return nil, idemkit.ErrNotFound
	}
	return s.lay.decode(item)
}

// getItem reads the item with id with one consistent GetItem, counted in
// ctx's usage; nil when there is none.
func (s *Store) getItem(ctx context.Context, client Client, op, id string) (map[string]types.AttributeValue, error) {
	cctx, cancel := s.ctxFor(ctx)
	defer cancel()
	out, err := client.GetItem(cctx, &dynamodb.GetItemInput{
		TableName:              s.tableName,
		Key:                    s.key(id),
		ConsistentRead:         aws.Bool(true),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}, s.optFns...)
	if err != nil {
		usage(ctx, nil, false)
		return nil, s.fail(op, err)
	}
	usage(ctx, out.ConsumedCapacity, false)
	return out.Item, nil
}

// expiredAt reports whether an item whose TTL attribute is attr is past
// it at now; it is then absent, whatever else it holds.
func expiredAt(item map[string]types.AttributeValue, attr string, now time.Time) bool {
	n, ok := item[attr].(*types.AttributeValueMemberN)
	if !ok {
		return false
	}
	exp, err := strconv.ParseInt(n.Value, 10, 64)
	return err == nil && exp <= now.Unix()+keptPastSec
}
