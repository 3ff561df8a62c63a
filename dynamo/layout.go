package dynamo

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/recordid"
)

// DynamoDB's limits on a key: the partition key value, the sort key value
// and a key attribute's name, in bytes.
const (
	maxPartitionKey = 2048
	maxSortKey      = 1024
	maxKeyAttrName  = 255
)

// maxHashedID is the longest record ID idemkit.Scope.ID returns for a
// scope too long to be readable: "o1h|", the tenant (at most
// recordid.MaxTenantLen, 1024 bytes) as a length-prefixed field, and a SHA-256
// in hex.
const maxHashedID = len("o1h|") + len("1024:") + recordid.MaxTenantLen + 64

// MaxKeyPrefixLen is the longest Options.KeyPrefix: with it, the key of
// every hashed record ID (a long scope's) still fits DynamoDB's 2048-byte
// partition key.
const MaxKeyPrefixLen = maxPartitionKey - maxHashedID

// recordAttrs are the attribute names of a record item other than its key
// (attrID): none of them may name a key attribute.
var recordAttrs = []string{
	attrState, attrTenant, attrOperation, attrKey, attrFingerprint, attrOwner, attrLeaseUntil,
	attrReplayUntil, attrExpiresAt, attrCreatedAt, attrCompletedAt, attrStatus, attrHeader, attrBody,
	attrBodyEncoding, attrBase64, attrOmitted, attrResolvedAs, attrOperator, attrReason, attrResolvedAt,
	attrIndeterminate, attrIndeterminateTenant, attrCause, attrVersion, attrResReplay, attrResExpires,
}

// layout is where a store keeps the record ID in an item: the partition
// key attribute (the ID after prefix) and, when sortAttr is set, a sort
// key of fixed value sortValue.
type layout struct {
	keyAttr, prefix     string
	sortAttr, sortValue string
	sort                types.AttributeValue // sortValue, shared by every item
	// ttl is the TTL attribute (Options.TTLAttr), where items hold what
	// baseItem writes under attrExpiresAt.
	ttl string
}

// layoutOf returns the layout opts name (check them first).
func layoutOf(opts Options) layout {
	l := layout{keyAttr: opts.KeyAttr, prefix: opts.KeyPrefix, sortAttr: opts.SortKeyAttr, sortValue: opts.SortKeyValue, ttl: opts.TTLAttr}
	if l.keyAttr == "" {
		l.keyAttr = attrID
	}
	if l.ttl == "" {
		l.ttl = attrExpiresAt
	}
	if l.sortAttr != "" {
		l.sort = str(l.sortValue)
	}
	return l
}

// plain reports whether l is the table of its own: key attrID, the ID as
// is, no sort key, TTL on attrExpiresAt.
func (l *layout) plain() bool {
	return l.keyAttr == attrID && l.prefix == "" && l.sortAttr == "" && l.ttl == attrExpiresAt
}

// expired reports whether an item of l is past its TTL at now; it is then
// absent, whatever else it holds.
func (l *layout) expired(item map[string]types.AttributeValue, now time.Time) bool {
	return expiredAt(item, l.ttl, now)
}

// checkAttrNames refuses an attribute name of the options that DynamoDB
// cannot take or that a record attribute has.
func (o Options) checkAttrNames() error {
	for _, a := range [...]struct{ field, name string }{{"KeyAttr", o.KeyAttr}, {"SortKeyAttr", o.SortKeyAttr}, {"TTLAttr", o.TTLAttr}} {
		switch {
		case a.name == "":
		case !utf8.ValidString(a.name) || len(a.name) > maxKeyAttrName:
			return fmt.Errorf("dynamo: Options.%s %q: want a UTF-8 name of at most %d bytes: %w", a.field, a.name, maxKeyAttrName, idemkit.ErrInvalidConfig)
		case a.name == attrExpiresAt && a.field == "TTLAttr":
		case slices.Contains(recordAttrs, a.name):
			return fmt.Errorf("dynamo: Options.%s %q is the name of a record attribute: %w", a.field, a.name, idemkit.ErrInvalidConfig)
		}
	}
	return nil
}

// checkLayout refuses key options DynamoDB or the record items cannot
// take.
func (o Options) checkLayout() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("dynamo: %s: %w", fmt.Sprintf(format, args...), idemkit.ErrInvalidConfig)
	}
	if err := o.checkAttrNames(); err != nil {
		return err
	}
	keyAttr := o.KeyAttr
	if keyAttr == "" {
		keyAttr = attrID
	}
	switch {
	case o.TTLAttr != "" && (o.TTLAttr == keyAttr || o.TTLAttr == o.SortKeyAttr):
		return bad("Options.TTLAttr %q is a key attribute too", o.TTLAttr)
	case o.SortKeyAttr == keyAttr:
		return bad("Options.SortKeyAttr %q is the partition key attribute too", o.SortKeyAttr)
	case o.SortKeyAttr == "" && o.SortKeyValue != "":
		return bad("Options.SortKeyValue %q without Options.SortKeyAttr", o.SortKeyValue)
	case o.SortKeyAttr != "" && o.SortKeyValue == "":
		return bad("Options.SortKeyAttr %q without Options.SortKeyValue (DynamoDB refuses an empty key)", o.SortKeyAttr)
	case !utf8.ValidString(o.SortKeyValue) || len(o.SortKeyValue) > maxSortKey:
		return bad("Options.SortKeyValue: want UTF-8 of at most %d bytes, DynamoDB's sort key limit", maxSortKey)
	case !utf8.ValidString(o.KeyPrefix):
		return bad("Options.KeyPrefix %q is not UTF-8", o.KeyPrefix)
	case len(o.KeyPrefix) > MaxKeyPrefixLen:
		return bad("Options.KeyPrefix is %d bytes, at most %d: with a hashed record ID (%d bytes) the key would be over DynamoDB's %d-byte partition key limit",
			len(o.KeyPrefix), MaxKeyPrefixLen, maxHashedID, maxPartitionKey)
	}
	return nil
}

// key returns the key of the item of record id.
func (l *layout) key(id string) map[string]types.AttributeValue {
	if l.plain() {
		return map[string]types.AttributeValue{attrID: str(id)}
	}
	k := map[string]types.AttributeValue{l.keyAttr: str(l.prefix + id)}
	if l.sortAttr != "" {
		k[l.sortAttr] = l.sort
	}
	return k
}

// keyItem moves the record ID of item, written under attrID by baseItem,
// to l's key attributes, and its expiry, written under attrExpiresAt, to
// l's TTL attribute.
func (l *layout) keyItem(item map[string]types.AttributeValue, id string) {
	if l.plain() {
		return
	}
	if l.ttl != attrExpiresAt {
		if v, ok := item[attrExpiresAt]; ok {
			delete(item, attrExpiresAt)
			item[l.ttl] = v
		}
	}
	if l.keyAttr == attrID && l.prefix == "" && l.sortAttr == "" {
		return
	}
	delete(item, attrID)
	item[l.keyAttr] = str(l.prefix + id)
	if l.sortAttr != "" {
		item[l.sortAttr] = l.sort
	}
}

// keyTooLong returns an error wrapping idemkit.ErrRecordInvalid when the
// partition key of id, with l's prefix, is over DynamoDB's limit.
func (l *layout) keyTooLong(op, id string) error {
	if n := len(l.prefix) + len(id); l.prefix != "" && n > maxPartitionKey {
		return fmt.Errorf("dynamo: %s %q: %w: with the key prefix its partition key is %d bytes, over DynamoDB's %d", op, id, idemkit.ErrRecordInvalid, n, maxPartitionKey)
	}
	return nil
}

// ours reports whether item is a record of l: in a shared table, other
// items (another prefix, another sort key) may carry index attributes.
func (l *layout) ours(item map[string]types.AttributeValue) bool {
	if l.plain() {
		return true
	}
	if l.sortAttr != "" && attrS(item, l.sortAttr) != l.sortValue {
		return false
	}
	k, ok := item[l.keyAttr].(*types.AttributeValueMemberS)
	return ok && strings.HasPrefix(k.Value, l.prefix)
}

// decode is decodeItem for an item of l.
func (l *layout) decode(item map[string]types.AttributeValue) (*idemkit.Record, error) {
	if l.plain() {
		return decodeItem(item)
	}
	d := &decoder{it: item, ttl: l.ttl}
	k := d.str(l.keyAttr, true)
	id, ok := strings.CutPrefix(k, l.prefix)
	d.id = id
	if !ok {
		d.fail("key %s %q lacks the prefix %q", l.keyAttr, k, l.prefix)
	}
	return d.record()
}
