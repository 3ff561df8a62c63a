package dynamo_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// racyGets stands for other requests changing the record between a
// claim's failed PutItem and its GetItem: before and after run around
// every GetItem. It drops the item a failed PutItem returns, as a server
// without ReturnValuesOnConditionCheckFailure does (dynalite), so that the
// claim reads the record whatever the test server is.
type racyGets struct {
	dynamo.Client
	before, after func()
	puts          atomic.Int32
}

func (r *racyGets) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.puts.Add(1)
	out, err := r.Client.PutItem(ctx, in, optFns...)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		ccf.Item = nil
	}
	return out, err
}

func (r *racyGets) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if r.before != nil {
		r.before()
	}
	out, err := r.Client.GetItem(ctx, in, optFns...)
	if r.after != nil {
		r.after()
	}
	return out, err
}

// TestClaimRecordVanishes: when the record that failed a claim's condition
// is gone by the time it is read, the claim is tried again; it is never
// reported won unless its write succeeded.
func TestClaimRecordVanishes(t *testing.T) {
	c := client(t)
	table := newTable(t, c)
	ctx := context.Background()
	now := base()
	direct, _ := dynamo.New(c, table, testOptions())
	rec := func(key, owner string) *idemkit.Record {
		sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: key}
		return &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v1:sha256:v", Owner: owner, LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	}
	hold := func(r *idemkit.Record) func() {
		return func() {
			if res, err := direct.Claim(ctx, r, now, idemkit.ClaimOptions{}); err != nil || !res.Won {
				t.Errorf("holder claim: %+v, %v", res, err)
			}
		}
	}
	release := func(r *idemkit.Record) func() {
		return func() {
			_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{dynamo.AttrID: S(r.ID)}})
			if err != nil {
				t.Error(err)
			}
		}
	}

	t.Run("released between the calls", func(t *testing.T) {
		holder, mine := rec("once", "holder"), rec("once", "mine")
		hold(holder)()
		racy := &racyGets{Client: c, before: release(holder)}
		s, _ := dynamo.New(racy, table, testOptions())
		res, err := s.Claim(ctx, mine, now, idemkit.ClaimOptions{})
		if err != nil || !res.Won {
			t.Fatalf("claim: %+v, %v; want a win once the holder released", res, err)
		}
		if n := racy.puts.Load(); n != 2 {
			t.Fatalf("%d PutItem calls, want 2", n)
		}
		if got, err := direct.Get(ctx, mine.ID, now); err != nil || got.Owner != "mine" {
			t.Fatalf("stored %+v, %v", got, err)
		}
	})

	// The record read after the failed write no longer blocks the claim,
	// though it is still there: the claim is tried again and wins.
	for _, tc := range []struct {
		name     string
		takeover bool
		change   func(holder *idemkit.Record)
	}{
		{"resolved as failed between the calls", false, func(holder *idemkit.Record) {
			if err := direct.MarkUnknown(ctx, holder.ID, "holder", now); err != nil {
				t.Error(err)
			}
			if _, err := direct.Resolve(ctx, holder.ID, idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops"}, now); err != nil {
				t.Error(err)
			}
		}},
		{"lease ended between the calls (takeover)", true, func(holder *idemkit.Record) {
			// The lease's end moved into the past (Extend never moves it
			// back): as if the holder's lease had ended.
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: aws.String(table), Key: map[string]types.AttributeValue{dynamo.AttrID: S(holder.ID)},
				UpdateExpression:          aws.String("SET #lu = :lu"),
				ExpressionAttributeNames:  map[string]string{"#lu": dynamo.AttrLeaseUntil},
				ExpressionAttributeValues: map[string]types.AttributeValue{":lu": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(-time.Second).UnixMilli(), 10)}},
			})
			if err != nil {
				t.Error(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			holder, mine := rec(tc.name, "holder"), rec(tc.name, "mine")
			hold(holder)()
			racy := &racyGets{Client: c, before: func() { tc.change(holder) }}
			s, _ := dynamo.New(racy, table, testOptions())
			res, err := s.Claim(ctx, mine, now, idemkit.ClaimOptions{Takeover: tc.takeover})
			if err != nil || !res.Won {
				t.Fatalf("claim: %+v, %v; want a win over a record that no longer blocks it", res, err)
			}
			if n := racy.puts.Load(); n != 2 {
				t.Fatalf("%d PutItem calls, want 2", n)
			}
			if got, err := direct.Get(ctx, mine.ID, now); err != nil || got.Owner != "mine" {
				t.Fatalf("stored %+v, %v", got, err)
			}
		})
	}

	t.Run("keeps changing", func(t *testing.T) {
		// Before each read the holder releases; after it, a holder claims
		// again: every write of ours fails and every read finds nothing.
		holder, mine := rec("churn", "holder"), rec("churn", "mine")
		hold(holder)()
		racy := &racyGets{Client: c, before: release(holder), after: hold(holder)}
		s, _ := dynamo.New(racy, table, testOptions())
		res, err := s.Claim(ctx, mine, now, idemkit.ClaimOptions{})
		if err != nil || res.Won || res.Existing != nil {
			t.Fatalf("claim: %+v, %v; want lost with no record, for the engine to retry", res, err)
		}
		if n := racy.puts.Load(); n != 3 {
			t.Fatalf("%d PutItem calls, want 3", n)
		}
		if got, err := direct.Get(ctx, holder.ID, now); err != nil || got.Owner != "holder" {
			t.Fatalf("stored %+v, %v; want the holder's record", got, err)
		}
		// Through the engine the churn ends in a conflict; nothing runs.
		g, _ := idemkit.New(idemkit.Config{Store: s})
		_, _, err = g.Do(ctx, idemkit.Request{Scope: mine.Scope, Fingerprint: mine.Fingerprint}, func(context.Context) (*idemkit.Snapshot, error) {
			t.Error("handler ran without a claim")
			return nil, errors.New("ran")
		})
		if !errors.Is(err, idemkit.ErrInFlight) {
			t.Fatalf("Do: %v, want ErrInFlight", err)
		}
	})
}
