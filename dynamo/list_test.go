package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// TestInFlightIndexWrites counts the index writes IndexInFlight adds to a
// request, by watching the lease index between its steps: the claim puts
// the record in the index and the completion or release takes it out, so
// two index writes per request (each ceil(item size / 1 KB) write units by
// DynamoDB's rules; dynalite does not report index capacity). Without the
// option the index never holds an in_flight record. docs/PERFORMANCE.md
// states the figures.
func TestInFlightIndexWrites(t *testing.T) {
	for _, index := range []bool{false, true} {
		t.Run(fmt.Sprintf("IndexInFlight=%v", index), func(t *testing.T) {
			s, c, table := newStore(t, dynamo.Options{IndexInFlight: index})
			inIndex := func() int {
				t.Helper()
				out, err := c.Query(context.Background(), &dynamodb.QueryInput{
					TableName:                 aws.String(table),
					IndexName:                 aws.String(dynamo.IndexIndeterminate),
					KeyConditionExpression:    aws.String("#h = :h"),
					ExpressionAttributeNames:  map[string]string{"#h": dynamo.AttrIndeterminate},
					ExpressionAttributeValues: map[string]types.AttributeValue{":h": &types.AttributeValueMemberS{Value: dynamo.InFlightValue}},
				})
				if err != nil {
					t.Fatal(err)
				}
				return len(out.Items)
			}
			g := guard(t, s)
			writes := 0
			for i, status := range []int{201, 503} {
				before := inIndex()
				req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: fmt.Sprint("cost-", i)}, Fingerprint: "v1:sha256:c"}
				var during int
				if _, _, err := g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
					during = inIndex()
					return &idemkit.Snapshot{Status: status, Body: []byte(`{"id":"ord_1"}`)}, nil
				}); err != nil {
					t.Fatal(err)
				}
				after := inIndex()
				writes += abs(during-before) + abs(after-during)
				if after != before {
					t.Fatalf("status %d: %d in_flight index entries after the request, %d before", status, after, before)
				}
			}
			want := 0
			if index {
				want = 4
			}
			if writes != want {
				t.Fatalf("%d index writes for an executed and a released request, want %d", writes, want)
			}
			t.Logf("IndexInFlight=%v: %d index writes per request", index, writes/2)
			// A renewal moves the record within the index (its range key).
			sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "renewed"}
			now := time.Now()
			rec := create(t, s, &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o", Fingerprint: "v1:sha256:c",
				LeaseUntil: now.Add(time.Second), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now})
			change(t, s, rec, func(r *idemkit.Record) { r.LeaseUntil = now.Add(time.Minute) })
			if index {
				recs, _, err := s.ListStale(context.Background(), "", "", 10, now.Add(30*time.Second))
				if err != nil || len(recs) != 0 {
					t.Fatalf("a renewed lease is listed as stale: %v %v", recs, err)
				}
			}
		})
	}
}

// TestListPages: a page token is refused when malformed or issued for
// another tenant's listing.
func TestListPages(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	ctx := context.Background()
	now := base()
	for i := range 3 {
		sc := idemkit.Scope{Tenant: "acme", Operation: "POST /x", Key: string(rune('a' + i))}
		r := create(t, s, &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o", LeaseUntil: now.Add(time.Second), ExpiresAt: now.Add(time.Hour)})
		change(t, s, r, markedStale)
	}
	recs, next, err := s.ListIndeterminate(ctx, "acme", "", 2, now)
	if err != nil || len(recs) != 2 || next == "" {
		t.Fatalf("first page: %d records, next %q, %v", len(recs), next, err)
	}
	for name, tc := range map[string]struct{ tenant, page string }{
		"other tenant": {"globex", next},
		"all tenants":  {"", next},
		"garbage":      {"acme", "not a token"},
	} {
		if _, _, err := s.ListIndeterminate(ctx, tc.tenant, tc.page, 2, now); !errors.Is(err, idemkit.ErrInvalidPage) {
			t.Errorf("%s: %v, want ErrInvalidPage", name, err)
		}
	}
	recs, next, err = s.ListIndeterminate(ctx, "acme", next, 2, now)
	if err != nil || len(recs) != 1 {
		t.Fatalf("second page: %d records, next %q, %v", len(recs), next, err)
	}
}
