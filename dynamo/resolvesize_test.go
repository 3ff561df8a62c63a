package dynamo_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// TestResolveSizeOfTheRest: a completed resolution budgets its answer
// against the item it is written into, whatever makes that item large: a
// scope too long for a readable ID (the ID is then short, the scope
// attributes are not) or a long fingerprint. An answer that does not fit
// is stored without its body (Omitted), as Complete stores it; it never
// fails the resolution, and the item never exceeds MaxItemSize.
func TestResolveSizeOfTheRest(t *testing.T) {
	longOp := "POST /orders/" + strings.Repeat("x", 3000)
	for _, tc := range []struct {
		name      string
		cap       int
		scope     idemkit.Scope
		fp        string
		body      int
		wantsBody bool
	}{
		{"hashed ID at DynamoDB's limit", dynamo.MaxItemSizeLimit, idemkit.Scope{Tenant: "acme", Operation: longOp, Key: "k1"}, "v1:sha256:f", dynamo.MaxItemSizeLimit - 2000, false},
		{"hashed ID under a small cap", 8 << 10, idemkit.Scope{Tenant: "acme", Operation: longOp, Key: "k2"}, "v1:sha256:f", 6 << 10, false},
		{"long fingerprint under a small cap", 8 << 10, idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k3"}, "v1:" + strings.Repeat("f", 3000), 6 << 10, false},
		{"short scope, body fits", 8 << 10, idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k4"}, "v1:sha256:f", 6 << 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c, table := newStore(t, dynamo.Options{MaxItemSize: tc.cap})
			ctx := context.Background()
			now := base()
			rec := &idemkit.Record{ID: tc.scope.ID(false), Scope: tc.scope, State: idemkit.StateInFlight, Fingerprint: tc.fp, Owner: "owner-1",
				LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
			if res, err := s.Claim(ctx, rec, now, idemkit.ClaimOptions{}); err != nil || !res.Won {
				t.Fatalf("claim: %+v, %v", res, err)
			}
			if err := s.MarkUnknown(ctx, rec.ID, rec.Owner, now); err != nil {
				t.Fatal(err)
			}
			body := randomBytes(tc.body)
			res := idemkit.Resolution{As: idemkit.StateCompleted, Operator: "alice", Reason: "charged, PSP ref ch_1",
				Snapshot: &idemkit.Snapshot{Status: 201, Header: map[string][]string{"Location": {"/orders/1"}}, Body: body}}
			got, err := s.Resolve(ctx, rec.ID, res, now)
			if err != nil {
				t.Fatalf("Resolve: %v; want the record resolved, its body left out if it does not fit", err)
			}
			if got.State != idemkit.StateCompleted || got.Snapshot == nil || got.Snapshot.Status != 201 || got.Snapshot.Omitted == tc.wantsBody {
				t.Fatalf("resolved record: state %s, snapshot %v; want completed 201 with body stored %v", got.State, describe(got.Snapshot), tc.wantsBody)
			}
			if tc.wantsBody && !bytes.Equal(got.Snapshot.Body, body) {
				t.Fatal("the stored body differs from the answer")
			}
			if !tc.wantsBody && got.Snapshot.Header.Get("Location") != "/orders/1" {
				t.Fatalf("omitted answer lost its Location: %v", got.Snapshot.Header)
			}
			out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{dynamo.AttrID: S(rec.ID)}, ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatal(err)
			}
			if n := dynamo.ItemSize(out.Item); n > tc.cap {
				t.Fatalf("the resolved item is %d bytes, over the %d-byte MaxItemSize", n, tc.cap)
			}
		})
	}
}

// describe summarizes a snapshot without its body.
func describe(s *idemkit.Snapshot) string {
	if s == nil {
		return "nil"
	}
	return fmt.Sprintf("status %d, omitted %v, %d body bytes, header %v", s.Status, s.Omitted, len(s.Body), s.Header)
}
