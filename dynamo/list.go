package dynamo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
)

// ListIndeterminate implements idemkit.Store with one Query of a sparse
// index: IndexIndeterminate for all tenants, IndexIndeterminateTenant for
// one. Records come oldest lease first (ties in no set order), across
// tenants too. Expired records are filtered out, so a page may hold fewer
// than limit records (even none) and still have a next token. limit <= 0
// means DefaultListLimit; it is at most MaxListLimit. Index reads are
// eventually consistent: a record marked or resolved a moment ago may be
// missing or still listed. A page token not issued for this tenant's
// listing is refused with an error wrapping ErrInvalidPage.
func (s *Store) ListIndeterminate(ctx context.Context, tenant, page string, limit int, now time.Time) ([]*idemkit.Record, string, error) {
	const op = "list indeterminate"
	if err := ctx.Err(); err != nil {
		return nil, "", fail(op, err)
	}
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		FilterExpression:          aws.String("#exp > :nowS AND #st = :indeterminate"),
		ExpressionAttributeNames:  map[string]string{"#exp": AttrExpiresAt, "#st": AttrState},
		ExpressionAttributeValues: map[string]types.AttributeValue{":nowS": nowSec(now), ":indeterminate": vIndeterminate},
		Limit:                     aws.Int32(int32(limit)),
		ScanIndexForward:          aws.Bool(true),
		ReturnConsumedCapacity:    types.ReturnConsumedCapacityTotal,
	}
	hashAttr, hashValue := AttrIndeterminate, IndeterminateValue
	in.IndexName = aws.String(IndexIndeterminate)
	if tenant != "" {
		hashAttr, hashValue = AttrIndeterminateTenant, tenant
		in.IndexName = aws.String(IndexIndeterminateTenant)
	}
	in.KeyConditionExpression = aws.String("#h = :h")
	in.ExpressionAttributeNames["#h"] = hashAttr
	in.ExpressionAttributeValues[":h"] = str(hashValue)
	if page != "" {
		pk, lu, err := decodePage(page, tenant)
		if err != nil {
			return nil, "", err
		}
		in.ExclusiveStartKey = map[string]types.AttributeValue{AttrID: str(pk), AttrLeaseUntil: num(lu), hashAttr: str(hashValue)}
	}
	client, err := s.list(tenant)
	if err != nil {
		return nil, "", fail(op, err)
	}
	cctx, cancel := s.ctxFor(ctx)
	defer cancel()
	out, err := client.Query(cctx, in, s.sdkOpts)
	if err != nil {
		usage(ctx, nil, false)
		return nil, "", fail(op, err)
	}
	usage(ctx, out.ConsumedCapacity, false)
	recs := make([]*idemkit.Record, 0, len(out.Items))
	for _, it := range out.Items {
		if expired(it, now) {
			continue
		}
		r, err := decodeItem(it)
		if err != nil {
			return nil, "", err
		}
		if r.State == idemkit.StateIndeterminate {
			recs = append(recs, r)
		}
	}
	next := ""
	if len(out.LastEvaluatedKey) > 0 {
		if next, err = encodePage(out.LastEvaluatedKey, tenant); err != nil {
			return nil, "", fail(op, err)
		}
	}
	return recs, next, nil
}

// pageToken is a LastEvaluatedKey of a listing, base64url JSON. The hash
// key of the index follows from the tenant, which the token names so that
// it is not replayed against another listing.
type pageToken struct {
	V      int    `json:"v"`
	Tenant string `json:"t"`
	ID     string `json:"pk"`
	Lease  int64  `json:"lu"`
}

func encodePage(lek map[string]types.AttributeValue, tenant string) (string, error) {
	id, ok1 := lek[AttrID].(*types.AttributeValueMemberS)
	lu, ok2 := lek[AttrLeaseUntil].(*types.AttributeValueMemberN)
	if !ok1 || !ok2 {
		return "", fmt.Errorf("dynamo: unexpected LastEvaluatedKey %v", lek)
	}
	n, err := strconv.ParseInt(lu.Value, 10, 64)
	if err != nil {
		return "", fmt.Errorf("dynamo: unexpected LastEvaluatedKey lease %q", lu.Value)
	}
	b, err := json.Marshal(pageToken{V: 1, Tenant: tenant, ID: id.Value, Lease: n})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func decodePage(page, tenant string) (id string, lease int64, err error) {
	b, err := base64.RawURLEncoding.DecodeString(page)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %v", ErrInvalidPage, err)
	}
	var t pageToken
	if err := json.Unmarshal(b, &t); err != nil {
		return "", 0, fmt.Errorf("%w: %v", ErrInvalidPage, err)
	}
	switch {
	case t.V != 1:
		return "", 0, fmt.Errorf("%w: version %d", ErrInvalidPage, t.V)
	case t.ID == "":
		return "", 0, fmt.Errorf("%w: no record ID", ErrInvalidPage)
	case t.Tenant != tenant:
		return "", 0, fmt.Errorf("%w: issued for tenant %q, not %q", ErrInvalidPage, t.Tenant, tenant)
	}
	return t.ID, t.Lease, nil
}
