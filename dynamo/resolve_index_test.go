package dynamo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// TestResolvedRecordsLeaveTheIndexes: a resolution (either way) removes
// the record's lease-index keys (read back with a consistent GetItem: the
// sparse indexes hold exactly the items that carry them), so that neither
// index keeps an entry for it. The listings filter on the state, so a
// resolved record left in an index would not be listed, but every listing
// would read it, and pay for it, until it expired.
func TestResolvedRecordsLeaveTheIndexes(t *testing.T) {
	ctx := context.Background()
	s, c, table := newStore(t, dynamo.Options{})
	now := base()
	tenant := fmt.Sprintf("acme-%d", now.UnixNano())
	var ids []string
	for i, as := range []idemkit.State{idemkit.StateFailed, idemkit.StateCompleted} {
		sc := idemkit.Scope{Tenant: tenant, Operation: "POST /orders", Key: fmt.Sprint("resolved-", i)}
		rec := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o", Fingerprint: "v1:sha256:c",
			LeaseUntil: now.Add(time.Second), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
		if _, err := s.Claim(ctx, rec, now, idemkit.ClaimOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkIndeterminate(ctx, rec.ID, "o", now.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		res := idemkit.Resolution{As: as, Operator: "ops"}
		if as == idemkit.StateCompleted {
			res.Snapshot = &idemkit.Snapshot{Status: 201, Body: []byte("checked")}
		}
		if _, err := s.Resolve(ctx, rec.ID, res, now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	for _, id := range ids {
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{dynamo.AttrID: &types.AttributeValueMemberS{Value: id}}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []string{dynamo.AttrIndeterminate, dynamo.AttrIndeterminateTenant} {
			if v, ok := out.Item[a]; ok {
				t.Errorf("resolved record %s keeps index key %s = %v", id, a, v)
			}
		}
	}
}
