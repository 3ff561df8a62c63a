package dynamo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/itemsize"
	"github.com/idemkit/idemkit/internal/recordid"
	"github.com/idemkit/idemkit/internal/setting"
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
	// set them alike; TableDefinition and Check follow them.
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
	// alike; CreateTable and Check follow it.
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
	o.MaxItemSize = setting.Or(o.MaxItemSize, DefaultMaxItemSize)
	if o.MaxItemSize > MaxItemSizeLimit {
		o.MaxItemSize = MaxItemSizeLimit
	}
	if o.Codec == "" {
		o.Codec = CodecZstd
	}
	o.CallTimeout = setting.Or(o.CallTimeout, DefaultCallTimeout)
	o.DeadlineGap = setting.Or(o.DeadlineGap, DefaultDeadlineGap)
	o.MaxAttempts = setting.Or(o.MaxAttempts, DefaultMaxAttempts)
	o.MaxBackoff = setting.Or(o.MaxBackoff, DefaultMaxBackoff)
	return o
}

// Store is an idemkit.OperatorStore on a DynamoDB table laid out as the
// package documentation describes: a box of versioned records, one item
// each. It is an idemkit.StaleLister too, listing stale leases only with
// Options.IndexInFlight (ListsStale). It is safe for concurrent use.
type Store struct {
	table string
	opts  Options
	// written holds the items of in_flight records this store wrote
	// last, so that the write replacing one (a completion, a renewal,
	// a release) needs not encode it again.
	written written
	// route returns the client for a tenant's records and the operator's
	// Failover that chose it (nil: none); list the client for a tenant's
	// listing ("" for all tenants). regional is set by NewRegional: a
	// record is then routed by its tenant, read from Get's ID.
	route    func(tenant string) (Client, *Failover, error)
	list     func(tenant string) (Client, error)
	regional bool
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
	// lay is where the record ID is in an item; condCreate and namesCreate
	// are Create's condition, naming its partition key.
	lay         layout
	condCreate  *string
	namesCreate map[string]string
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
		lay: layoutOf(opts)}
	// The default key attribute is named as it is: a placeholder is bytes
	// on every fresh request.
	s.condCreate = aws.String("attribute_not_exists(" + attrID + ")")
	if s.lay.keyAttr != attrID {
		s.condCreate, s.namesCreate = aws.String("attribute_not_exists(#k)"), map[string]string{"#k": s.lay.keyAttr}
	}
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

// routed returns the client of tenant's home region and the Failover
// that routed it (nil: none), or a StoreError when ctx is done or the
// region cannot be had. A regional store refuses a tenant it could not
// read back from the record's ID with an error wrapping
// idemkit.ErrRecordInvalid.
func (s *Store) routed(ctx context.Context, op, tenant string) (Client, *Failover, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, s.fail(op, err)
	}
	if s.regional && len(tenant) > recordid.MaxTenantLen {
		// Its ID is the hash alone: Get could not route it.
		return nil, nil, fmt.Errorf("dynamo: %s: %w: a regional store routes a record by the tenant its ID carries, and a tenant over %d bytes is hashed",
			op, idemkit.ErrRecordInvalid, recordid.MaxTenantLen)
	}
	c, fo, err := s.route(tenant)
	if err != nil {
		return nil, nil, s.fail(op, err)
	}
	return c, fo, nil
}

// routedID is routed for the record with id: a regional store reads the
// tenant from the ID, and refuses an ID that carries none with an error
// wrapping idemkit.ErrRecordInvalid (no record has it).
func (s *Store) routedID(ctx context.Context, op, id string) (Client, error) {
	tenant := ""
	if s.regional {
		var err error
		if tenant, err = recordid.Tenant(id); err != nil {
			return nil, fmt.Errorf("dynamo: %s %.40q: %w: a regional store cannot read the tenant of this ID", op, id, idemkit.ErrRecordInvalid)
		}
	}
	c, _, err := s.routed(ctx, op, tenant)
	return c, err
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
		w = itemsize.WriteUnits(itemsize.Of(old))
	}
	idemkit.AddUsage(ctx, 0, w)
}

// key returns the key of the item of record id.
func (s *Store) key(id string) map[string]types.AttributeValue { return s.lay.key(id) }

func nowSec(now time.Time) types.AttributeValue   { return num(now.Unix() + keptPastSec) }
func nowMilli(now time.Time) types.AttributeValue { return num(now.UnixMilli()) }

// attrS returns the string attribute name of item; "" when it has none.
func attrS(item map[string]types.AttributeValue, name string) string {
	v, _ := item[name].(*types.AttributeValueMemberS)
	if v == nil {
		return ""
	}
	return v.Value
}

// checkUTF8 refuses a record whose ID, scope, fingerprint, owner or
// version is not UTF-8 with an error wrapping idemkit.ErrRecordInvalid.
// DynamoDB strings are UTF-8 and the SDK sends each invalid byte as
// U+FFFD, so two scopes differing only in such bytes would name one item:
// one would replay the other's response.
func checkUTF8(op string, rec *idemkit.Record) error {
	for _, f := range [...]struct{ name, v string }{
		{"ID", rec.ID}, {"tenant", rec.Scope.Tenant}, {"operation", rec.Scope.Operation},
		{"key", rec.Scope.Key}, {"fingerprint", rec.Fingerprint}, {"owner", rec.Owner}, {"version", rec.Version},
	} {
		if !utf8.ValidString(f.v) {
			return fmt.Errorf("dynamo: %s %q: %w: its %s is not UTF-8", op, rec.ID, idemkit.ErrRecordInvalid, f.name)
		}
	}
	return nil
}

// encode returns the item that stores rec, everything in it derived from
// rec (see item.go), or an error wrapping idemkit.ErrRecordInvalid when
// the store cannot keep it: a string that is not UTF-8, a key over
// DynamoDB's limit, an item over MaxItemSize even without the body. A
// snapshot too large is left out, Omitted set.
func (s *Store) encode(op string, rec *idemkit.Record) (map[string]types.AttributeValue, error) {
	if err := checkUTF8(op, rec); err != nil {
		return nil, err
	}
	if err := s.lay.keyTooLong(op, rec.ID); err != nil {
		return nil, err
	}
	item := baseItem(rec, s.opts.IndexInFlight)
	s.lay.keyItem(item, rec.ID)
	if !s.fits(item, rec.Snapshot) {
		return nil, s.tooLarge(rec.ID, item)
	}
	return item, nil
}

// fits adds snap, if any, to item (snapshotAttrs) and reports whether the
// item is within MaxItemSize. snapshotAttrs checks the size of the item it
// completes, so the item is measured once more only without a snapshot.
func (s *Store) fits(item map[string]types.AttributeValue, snap *idemkit.Snapshot) bool {
	if snap != nil {
		return snapshotAttrs(item, snap, s.opts.MaxItemSize, s.opts.CompressAbove, s.opts.Codec)
	}
	return itemsize.Of(item) <= s.opts.MaxItemSize
}

func (s *Store) tooLarge(id string, item map[string]types.AttributeValue) error {
	return fmt.Errorf("dynamo: record %q needs %d bytes without its body, over the %d-byte item cap: %w", id, itemsize.Of(item), s.opts.MaxItemSize, idemkit.ErrRecordInvalid)
}

// createAttempts bounds the puts of a Create whose refusing item vanished
// before it could be read.
const createAttempts = 3

// Create implements idemkit.Store with one PutItem of rec's whole item,
// conditioned on no item of its key (attribute_not_exists). A refusal
// returns the item stored, decoded, as met: the server returns it with the
// failure (ReturnValuesOnConditionCheckFailure=ALL_OLD), or, where it does
// not, one consistent GetItem reads it; if that finds none (deleted
// meanwhile), the put is made again, up to three times in all, and then
// the error is idemkit.ErrStoreUnavailable. A Create fenced by a Failover
// stores nothing (see Failover).
func (s *Store) Create(ctx context.Context, rec *idemkit.Record) (*idemkit.Record, error) {
	const op = "create"
	item, client, fo, err := s.prepare(ctx, op, rec)
	if err != nil {
		return nil, err
	}
	if fo.fences(rec.Scope.Key, writeTime(rec)) {
		return s.fencedCreate(ctx, client, rec, fo)
	}
	in := &dynamodb.PutItemInput{
		TableName:                           s.tableName,
		Item:                                item,
		ConditionExpression:                 s.condCreate,
		ExpressionAttributeNames:            s.namesCreate,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	}
	for attempt := 1; ; attempt++ {
		landed, met, err := s.write(ctx, client, op, rec, item, func(ctx context.Context) (any, error) {
			return client.PutItem(ctx, in, s.optFns...)
		})
		switch {
		case landed || err != nil:
			return nil, err
		case met != nil:
			return met, nil
		case attempt == createAttempts:
			return nil, &idemkit.StoreError{Op: op, Err: fmt.Errorf("dynamo: record %q: the item that refused the put was gone each time it was read", rec.ID)}
		}
	}
}

// prepare returns the item rec is stored as, and the client and failover
// of its tenant's home.
func (s *Store) prepare(ctx context.Context, op string, rec *idemkit.Record) (map[string]types.AttributeValue, Client, *Failover, error) {
	item, err := s.encode(op, rec)
	if err != nil {
		return nil, nil, nil, err
	}
	client, fo, err := s.routed(ctx, op, rec.Scope.Tenant)
	return item, client, fo, err
}

// write makes one conditional write of rec's item with send (a PutItem or
// an UpdateItem), under the context each call gets, and reads its answer:
// landed (its usage counted and the item kept as rec's), or the record the
// condition met (nil: none is stored), or the error.
func (s *Store) write(ctx context.Context, client Client, op string, rec *idemkit.Record, item map[string]types.AttributeValue,
	send func(context.Context) (any, error)) (landed bool, met *idemkit.Record, _ error) {
	cctx, cancel := s.ctxFor(ctx)
	out, err := send(cctx)
	cancel()
	if err == nil {
		var cc *types.ConsumedCapacity
		switch o := out.(type) {
		case *dynamodb.PutItemOutput:
			cc = o.ConsumedCapacity
		case *dynamodb.UpdateItemOutput:
			cc = o.ConsumedCapacity
		}
		usage(ctx, cc, true)
		s.written.put(rec, item)
		return true, nil, nil
	}
	met, err = s.met(ctx, client, op, rec.ID, err)
	return false, met, err
}

// met handles the failure err of a conditional write of the record id:
// when err is a refusal it returns the record stored (nil: none), the
// item returned with the failure or else read with one consistent
// GetItem. Any other failure, and a failed read, is a StoreError.
func (s *Store) met(ctx context.Context, client Client, op, id string, err error) (*idemkit.Record, error) {
	cf, ok := conditionFailed(err)
	if !ok {
		usage(ctx, nil, true)
		return nil, s.fail(op, err)
	}
	failedWriteUsage(ctx, cf.Item)
	item := cf.Item
	if len(item) == 0 {
		if item, err = s.getItem(ctx, client, op, id); err != nil {
			return nil, fmt.Errorf("dynamo: %s was refused, and the record could not be read: %w", op, err)
		}
		if len(item) == 0 {
			return nil, nil
		}
	}
	return s.lay.decode(item)
}

// Replace implements idemkit.Store with one UpdateItem conditioned on the
// version stored being prev.Version (v = :p). It writes only what differs
// between prev's item and rec's: the attributes rec's item has that prev's
// lacks or holds otherwise (SET), and those prev's has and rec's lacks
// (REMOVE); the key is never written. Where the condition holds the item
// stored is prev's, so the item left is rec's. A refusal returns the item
// stored, decoded, as met (returned with the failure, or read with one
// consistent GetItem), or an error that is idemkit.ErrNotFound when there
// is none. A Replace fenced by a Failover stores nothing (see Failover).
func (s *Store) Replace(ctx context.Context, rec, prev *idemkit.Record) (*idemkit.Record, error) {
	const op = "replace"
	item, client, fo, err := s.prepare(ctx, op, rec)
	if err != nil {
		return nil, err
	}
	if fo.fencing() {
		if write, err := s.fenceReplace(rec, prev, fo); !write {
			return nil, err
		}
	}
	// prev's item, as this store would have written it: where prev cannot
	// be encoded (an item of another store's options), every attribute
	// rec's item lacks is removed.
	old := s.written.get(prev)
	if old == nil {
		var perr error
		if old, perr = s.encode(op, prev); perr != nil {
			old = nil
		}
	}
	in := s.replaceInput(rec.ID, item, old, prev.Version)
	landed, met, err := s.write(ctx, client, op, rec, item, func(ctx context.Context) (any, error) {
		return client.UpdateItem(ctx, in, s.optFns...)
	})
	switch {
	case landed || err != nil:
		return nil, err
	case met == nil:
		return nil, fmt.Errorf("dynamo: %s %q: %w", op, rec.ID, idemkit.ErrNotFound)
	}
	return met, nil
}

// written keeps the items of the last in_flight records a store wrote, by
// ID and version: the record a run replaces next is the one it wrote
// last. Items are never changed once encoded.
type written struct {
	mu    sync.Mutex
	keys  [writtenSize]string
	items map[string]map[string]types.AttributeValue
	next  int
}

// writtenSize bounds the items kept: the runs in flight in one process.
const writtenSize = 64

// writtenKey is a record's version: versions never repeat, whatever the
// key.
func writtenKey(r *idemkit.Record) string { return r.Version }

// put keeps rec's item when rec is in_flight (a completed or resolved
// record is rarely replaced, and its item holds the body).
func (w *written) put(rec *idemkit.Record, item map[string]types.AttributeValue) {
	if rec.State != idemkit.StateInFlight || rec.Version == "" {
		return
	}
	k := writtenKey(rec)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.items == nil {
		w.items = make(map[string]map[string]types.AttributeValue, writtenSize)
	}
	delete(w.items, w.keys[w.next])
	w.keys[w.next], w.items[k] = k, item
	w.next = (w.next + 1) % writtenSize
}

// get returns the item kept for prev, nil when none is.
func (w *written) get(prev *idemkit.Record) map[string]types.AttributeValue {
	if prev.Version == "" {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.items[writtenKey(prev)]
}

// bare are the attribute names an expression may name as they are: none
// is a DynamoDB reserved word (TestConditions sends each). Every other
// name (a key or TTL attribute Options name) gets a placeholder.
var bare = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range recordAttrs {
		m[n] = true
	}
	return m
}()

// replaceInput returns the UpdateItem that turns old, the item of the
// version prevVersion, into item (nil old: an item of unknown attributes,
// each record attribute item lacks is removed). Its names are placed in a
// set order, so that two calls of the same change send the same bytes.
func (s *Store) replaceInput(id string, item, old map[string]types.AttributeValue, prevVersion string) *dynamodb.UpdateItemInput {
	set, remove := s.diff(item, old)
	values := make(map[string]types.AttributeValue, len(set)+1)
	var names map[string]string
	ref := func(name string) string {
		if bare[name] {
			return name
		}
		if names == nil {
			names = map[string]string{}
		}
		p := "#" + strconv.Itoa(len(names))
		names[p] = name
		return p
	}
	var upd strings.Builder
	for i, name := range set {
		if i == 0 {
			upd.WriteString("SET ")
		} else {
			upd.WriteString(", ")
		}
		p := placeholder(i)
		values[p] = item[name]
		upd.WriteString(ref(name))
		upd.WriteString(" = ")
		upd.WriteString(p)
	}
	for i, name := range remove {
		if i == 0 {
			upd.WriteString(" REMOVE ")
		} else {
			upd.WriteString(", ")
		}
		upd.WriteString(ref(name))
	}
	cond := attrVersion + " = :p"
	values[":p"] = str(prevVersion)
	expr := upd.String()
	return &dynamodb.UpdateItemInput{
		TableName:                           s.tableName,
		Key:                                 s.key(id),
		UpdateExpression:                    &expr,
		ConditionExpression:                 &cond,
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	}
}

// diff returns the attributes of item to set, those that differ from old's,
// and those of old to remove, sorted, never a key attribute (nil old: an
// item of unknown attributes, each record attribute item lacks is
// removed).
func (s *Store) diff(item, old map[string]types.AttributeValue) (set, remove []string) {
	isKey := func(name string) bool {
		return name == s.lay.keyAttr || (s.lay.sortAttr != "" && name == s.lay.sortAttr)
	}
	for name, v := range item {
		if isKey(name) {
			continue
		}
		if o, ok := old[name]; ok && name != attrVersion && equalValue(o, v) {
			continue
		}
		set = append(set, name)
	}
	gone := func(name string) {
		if _, ok := item[name]; !ok && !isKey(name) && !slices.Contains(remove, name) {
			remove = append(remove, name)
		}
	}
	if old == nil {
		for _, name := range recordAttrs {
			gone(name)
		}
		gone(s.lay.ttl)
	}
	for name := range old {
		gone(name)
	}
	slices.Sort(set)
	slices.Sort(remove)
	return set, remove
}

// placeholders are the value placeholders of an update, made once.
var placeholders = func() []string {
	p := make([]string, 40)
	for i := range p {
		p[i] = ":" + strconv.Itoa(i)
	}
	return p
}()

// placeholder returns the i-th value placeholder of an update.
func placeholder(i int) string {
	if i < len(placeholders) {
		return placeholders[i]
	}
	return ":" + strconv.Itoa(i)
}

// equalValue reports whether two attribute values are the same.
func equalValue(a, b types.AttributeValue) bool {
	switch a := a.(type) {
	case *types.AttributeValueMemberS:
		b, ok := b.(*types.AttributeValueMemberS)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberN:
		b, ok := b.(*types.AttributeValueMemberN)
		return ok && a.Value == b.Value
	case *types.AttributeValueMemberB:
		b, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(a.Value, b.Value)
	case *types.AttributeValueMemberBOOL:
		b, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && a.Value == b.Value
	}
	return reflect.DeepEqual(a, b)
}

// Get implements idemkit.Store with one consistent GetItem. It returns the
// record stored in any state, live or not.
func (s *Store) Get(ctx context.Context, id string) (*idemkit.Record, error) {
	const op = "get"
	if !utf8.ValidString(id) || s.lay.keyTooLong(op, id) != nil {
		// No record has such an ID (Create refuses it); sent as is, the SDK
		// would read another ID, or DynamoDB refuse the key as too long.
		return nil, fmt.Errorf("dynamo: %s %q: %w", op, id, idemkit.ErrNotFound)
	}
	client, err := s.routedID(ctx, op, id)
	if err != nil {
		return nil, err
	}
	item, err := s.getItem(ctx, client, op, id)
	if err != nil {
		return nil, err
	}
	if len(item) == 0 {
		return nil, fmt.Errorf("dynamo: %s %q: %w", op, id, idemkit.ErrNotFound)
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
// it at now; a listing then leaves it out.
func expiredAt(item map[string]types.AttributeValue, attr string, now time.Time) bool {
	n, ok := item[attr].(*types.AttributeValueMemberN)
	if !ok {
		return false
	}
	exp, err := strconv.ParseInt(n.Value, 10, 64)
	return err == nil && exp <= now.Unix()+keptPastSec
}
