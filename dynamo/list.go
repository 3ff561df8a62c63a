package dynamo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/setting"
)

// ListIndeterminate implements idemkit.OperatorStore with one Query of a sparse
// index: IndexIndeterminate for all tenants, IndexIndeterminateTenant for
// one. Records come oldest lease first (ties in no set order), across
// tenants too. Expired records are filtered out, so a page may hold fewer
// than limit records (even none) and still have a next token. limit <= 0
// means DefaultListLimit; it is at most MaxListLimit. Index reads are
// eventually consistent: a record marked or resolved a moment ago may be
// missing or still listed. A page token not issued for this tenant's
// listing is refused with an error wrapping idemkit.ErrInvalidPage.
func (s *Store) ListIndeterminate(ctx context.Context, tenant, page string, limit int, now time.Time) ([]*idemkit.Record, string, error) {
	q := listQuery{op: "list indeterminate", kind: "", state: idemkit.StateIndeterminate, hashAttr: attrIndeterminate, hashValue: indeterminateValue, index: IndexIndeterminate}
	if tenant != "" {
		q.hashAttr, q.hashValue, q.index = attrIndeterminateTenant, tenant, IndexIndeterminateTenant
	}
	return s.query(ctx, q, tenant, page, limit, now)
}

// ListsStale implements idemkit.StaleLister: it reports whether
// Options.IndexInFlight is set. In_flight records are indexed only when
// the store claiming them has it, and every store of a table should set
// it alike; a store without it takes the table's to be unindexed.
func (s *Store) ListsStale() bool { return s.opts.IndexInFlight }

// ListStale implements idemkit.StaleLister with one Query of
// IndexIndeterminate, whose hash key in_flight records carry when the
// store that claimed them had Options.IndexInFlight set: the records under
// ix = "in_flight" whose lease ended at now, oldest lease first. A tenant's
// listing reads the same partition and filters on the tenant. Without
// Options.IndexInFlight (ListsStale false) it returns an error wrapping
// errors.ErrUnsupported: records claimed without it are not indexed, and
// an empty listing would be a false all-clear. Paging, limits and
// consistency are as in ListIndeterminate.
func (s *Store) ListStale(ctx context.Context, tenant, page string, limit int, now time.Time) ([]*idemkit.Record, string, error) {
	const op = "list stale"
	if !s.opts.IndexInFlight {
		return nil, "", fmt.Errorf("dynamo: %s: %w: in_flight records are indexed only when the store claiming them has Options.IndexInFlight set", op, errors.ErrUnsupported)
	}
	q := listQuery{op: op, kind: "stale", state: idemkit.StateInFlight, hashAttr: attrIndeterminate, hashValue: inFlightValue, index: IndexIndeterminate, leaseEnded: true, tenantFilter: tenant}
	return s.query(ctx, q, tenant, page, limit, now)
}

// listQuery is one listing of a lease index.
type listQuery struct {
	op, kind            string // kind names the listing in its page tokens
	state               idemkit.State
	hashAttr, hashValue string
	index               string
	leaseEnded          bool   // only records whose lease ended at now
	tenantFilter        string // filter on the tenant attribute
}

func (s *Store) query(ctx context.Context, q listQuery, tenant, page string, limit int, now time.Time) ([]*idemkit.Record, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", s.fail(q.op, err)
	}
	if !utf8.ValidString(tenant) {
		// No record has such a tenant (Create refuses it); sent as is, the
		// SDK would query the tenant with U+FFFD in place of its bad bytes.
		return nil, "", nil
	}
	in, err := s.queryInput(q, tenant, page, limit, now)
	if err != nil {
		return nil, "", err
	}
	client, err := s.list(tenant)
	if err != nil {
		return nil, "", s.fail(q.op, err)
	}
	cctx, cancel := s.ctxFor(ctx)
	defer cancel()
	out, err := client.Query(cctx, in, s.optFns...)
	if err != nil {
		usage(ctx, nil, false)
		return nil, "", s.fail(q.op, err)
	}
	usage(ctx, out.ConsumedCapacity, false)
	recs, err := q.records(&s.lay, out.Items, now)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out.LastEvaluatedKey) > 0 {
		if next, err = s.lay.encodePage(out.LastEvaluatedKey, q.kind, tenant); err != nil {
			return nil, "", s.fail(q.op, err)
		}
	}
	return recs, next, nil
}

// queryInput returns the Query of one page of q: limit records at most
// (DefaultListLimit when not positive, capped at MaxListLimit), starting
// after the page token, if any.
func (s *Store) queryInput(q listQuery, tenant, page string, limit int, now time.Time) (*dynamodb.QueryInput, error) {
	limit = min(setting.Or(limit, DefaultListLimit), MaxListLimit)
	filter := "#exp > :nowS AND #st = :state"
	names := map[string]string{"#exp": s.lay.ttl, "#st": attrState, "#h": q.hashAttr}
	values := map[string]types.AttributeValue{":nowS": nowSec(now), ":state": str(string(q.state)), ":h": str(q.hashValue)}
	keyCond := "#h = :h"
	if q.leaseEnded {
		keyCond += " AND #lu <= :nowMs"
		names["#lu"] = attrLeaseUntil
		values[":nowMs"] = nowMilli(now)
	}
	if q.tenantFilter != "" {
		filter += " AND #tn = :tn"
		names["#tn"] = attrTenant
		values[":tn"] = str(q.tenantFilter)
	}
	in := &dynamodb.QueryInput{
		TableName:                 s.tableName,
		IndexName:                 aws.String(q.index),
		KeyConditionExpression:    aws.String(keyCond),
		FilterExpression:          aws.String(filter),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
		Limit:                     aws.Int32(int32(limit)),
		ScanIndexForward:          aws.Bool(true),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
	if page != "" {
		t, err := decodeToken(page, q.kind, tenant)
		if err != nil {
			return nil, err
		}
		if (t.SK != "") != (s.lay.sortAttr != "") {
			return nil, fmt.Errorf("dynamo: %w: issued for a table keyed otherwise", idemkit.ErrInvalidPage)
		}
		in.ExclusiveStartKey = map[string]types.AttributeValue{s.lay.keyAttr: str(t.ID), attrLeaseUntil: num(t.Lease), q.hashAttr: str(q.hashValue)}
		if s.lay.sortAttr != "" {
			in.ExclusiveStartKey[s.lay.sortAttr] = str(t.SK)
		}
	}
	return in, nil
}

// records decodes the items of a page that are records of l (a shared
// table's other items may carry the index keys) and keeps the records q
// lists at now: live, in q's state, with an ended lease and of q's tenant when q
// asks for them (the index and the filter may lag).
func (q listQuery) records(l *layout, items []map[string]types.AttributeValue, now time.Time) ([]*idemkit.Record, error) {
	recs := make([]*idemkit.Record, 0, len(items))
	for _, it := range items {
		if l.expired(it, now) || !l.ours(it) {
			continue
		}
		r, err := l.decode(it)
		if err != nil {
			return nil, err
		}
		if !ownID(r) {
			// Another store's item whose key only starts like ours: a
			// prefix of which ours is a prefix (IDEM# and IDEM#EU#), or
			// none where ours is empty.
			continue
		}
		if r.State == q.state && (!q.leaseEnded || r.LeaseExpired(now)) && (q.tenantFilter == "" || r.Scope.Tenant == q.tenantFilter) {
			recs = append(recs, r)
		}
	}
	return recs, nil
}

// pageToken is a LastEvaluatedKey of a listing, base64url JSON. The hash
// key of the index follows from the tenant, which the token names so that
// it is not replayed against another listing.
type pageToken struct {
	V      int    `json:"v"`
	Kind   string `json:"k,omitempty"` // "" indeterminate, "stale"
	Tenant string `json:"t"`
	ID     string `json:"pk"`           // the partition key value
	SK     string `json:"sk,omitempty"` // the sort key value, in a table with one
	Lease  int64  `json:"lu"`
}

func encodePage(lek map[string]types.AttributeValue, tenant string) (string, error) {
	return encodePageOf(lek, "", tenant)
}

func decodePage(page, tenant string) (id string, lease int64, err error) {
	return decodePageOf(page, "", tenant)
}

// encodePageOf and decodePageOf name the listing (kind) in the token, so
// that a token of one listing is refused by another.
func encodePageOf(lek map[string]types.AttributeValue, kind, tenant string) (string, error) {
	l := layoutOf(Options{})
	return l.encodePage(lek, kind, tenant)
}

func decodePageOf(page, kind, tenant string) (id string, lease int64, err error) {
	t, err := decodeToken(page, kind, tenant)
	if err != nil {
		return "", 0, err
	}
	return t.ID, t.Lease, nil
}

// encodePage returns the token of a page ending at lek, the
// LastEvaluatedKey of a query of an index of l's table (its key, which
// may be another item's, and the index key).
func (l *layout) encodePage(lek map[string]types.AttributeValue, kind, tenant string) (string, error) {
	id, ok1 := lek[l.keyAttr].(*types.AttributeValueMemberS)
	lu, ok2 := lek[attrLeaseUntil].(*types.AttributeValueMemberN)
	sk, ok3 := lek[l.sortAttr].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 || (l.sortAttr != "" && (!ok3 || sk.Value == "")) {
		return "", fmt.Errorf("dynamo: unexpected LastEvaluatedKey %v", lek)
	}
	skv := ""
	if ok3 {
		skv = sk.Value
	}
	n, err := strconv.ParseInt(lu.Value, 10, 64)
	if err != nil {
		return "", fmt.Errorf("dynamo: unexpected LastEvaluatedKey lease %q", lu.Value)
	}
	b, err := json.Marshal(pageToken{V: 1, Kind: kind, Tenant: tenant, ID: id.Value, SK: skv, Lease: n})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// decodeToken returns the token page, refusing one not issued for the
// listing kind of tenant.
func decodeToken(page, kind, tenant string) (t pageToken, err error) {
	b, err := base64.RawURLEncoding.DecodeString(page)
	if err != nil {
		return t, fmt.Errorf("dynamo: %w: %v", idemkit.ErrInvalidPage, err)
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, fmt.Errorf("dynamo: %w: %v", idemkit.ErrInvalidPage, err)
	}
	switch {
	case t.V != 1:
		return t, fmt.Errorf("dynamo: %w: version %d", idemkit.ErrInvalidPage, t.V)
	case t.ID == "":
		return t, fmt.Errorf("dynamo: %w: no record ID", idemkit.ErrInvalidPage)
	case t.Kind != kind:
		return t, fmt.Errorf("dynamo: %w: issued for another listing (%q)", idemkit.ErrInvalidPage, t.Kind)
	case t.Tenant != tenant:
		return t, fmt.Errorf("dynamo: %w: issued for tenant %q, not %q", idemkit.ErrInvalidPage, t.Tenant, tenant)
	}
	return t, nil
}

// ownID reports whether r's ID, as this store reads it from the item's key,
// is the ID of the scope the item holds: the key is this store's prefix
// and nothing more before the ID.
func ownID(r *idemkit.Record) bool {
	return r.ID == r.Scope.ID(strings.HasPrefix(r.ID, "a1"))
}
