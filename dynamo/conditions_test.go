package dynamo_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

// rawItem reads the item of id as stored, nil when there is none.
func rawItem(t testing.TB, c *dynamodb.Client, table, id string) map[string]types.AttributeValue {
	t.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table),
		Key: map[string]types.AttributeValue{dynamo.AttrID: S(id)}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// updates records the UpdateItem inputs a store sends.
type updates struct {
	dynamo.Client
	ins []*dynamodb.UpdateItemInput
}

func (u *updates) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	u.ins = append(u.ins, in)
	return u.Client.UpdateItem(ctx, in, optFns...)
}

// fullRecord is a record holding every attribute an item can: a
// resolution, a cause, a compressed body with a header, Base64.
func fullRecord(key string, now time.Time) *idemkit.Record {
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: key}
	return &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateCompleted, Fingerprint: "v1:sha256:full", Owner: "o-full",
		Version: "v-full", LeaseUntil: now.Add(-time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour),
		CreatedAt: now.Add(-2 * time.Minute), CompletedAt: now, Cause: idemkit.CauseLeaseExpired,
		Snapshot: &idemkit.Snapshot{Status: 201, Header: http.Header{"Location": {"/orders/1"}, "Content-Type": {"application/json"}},
			Body: []byte(strings.Repeat(`{"line":"abc"},`, 200)), Base64: true},
		Resolution: &idemkit.Resolution{As: idemkit.StateCompleted, Operator: "alice", Reason: "charged", ResolvedAt: now,
			ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour)}}
}

// TestConditions: the store's two conditions, on the test server. A
// Create over an item stores nothing and returns the record stored; a
// Replace of another version stores nothing and returns the record
// stored; a Replace over no item is ErrNotFound and makes none; a Replace
// writes only what differs, and leaves exactly the item of the record it
// stores.
func TestConditions(t *testing.T) {
	s, c, table := newStore(t, dynamo.Options{IndexInFlight: true})
	ctx := context.Background()
	now := base()
	refusal := 2 // calls of a refused write: the write, then a GetItem
	if dynalite.Has(t, dynalite.AllOldOnConditionFailure) {
		refusal = 1
	}
	counted := func(t *testing.T, want int, f func(s *dynamo.Store)) {
		t.Helper()
		cc := newCounting(c)
		cs := storeOn(t, cc, table, dynamo.Options{IndexInFlight: true})
		f(cs)
		if n := cc.Calls("PutItem") + cc.Calls("UpdateItem") + cc.Calls("GetItem"); n != want {
			t.Errorf("%d calls, want %d", n, want)
		}
	}
	same := func(t *testing.T, what string, got, want *idemkit.Record) {
		t.Helper()
		if got == nil || got.Version != want.Version || got.Owner != want.Owner || got.State != want.State {
			t.Fatalf("%s: %+v, want the record of version %s", what, got, want.Version)
		}
	}

	t.Run("create over an item", func(t *testing.T) {
		first, _ := inFlightRecord(t, s, "c-exists", time.Minute)
		before := rawItem(t, c, table, first.ID)
		second := first.Clone()
		second.Owner, second.Version = "o-2", "v-2"
		counted(t, refusal, func(s *dynamo.Store) {
			met, err := s.Create(ctx, second)
			if err != nil {
				t.Fatal(err)
			}
			same(t, "met", met, first)
		})
		if after := rawItem(t, c, table, first.ID); !reflect.DeepEqual(after, before) {
			t.Fatalf("the refused Create changed the item:\n%v\nwas\n%v", after, before)
		}
	})

	t.Run("replace of another version", func(t *testing.T) {
		stored, _ := inFlightRecord(t, s, "r-stale", time.Minute)
		stale := stored.Clone()
		stale.Version = "v-earlier"
		before := rawItem(t, c, table, stored.ID)
		next := stored.Clone()
		next.Version, next.LeaseUntil = "v-next", now.Add(time.Hour)
		counted(t, refusal, func(s *dynamo.Store) {
			met, err := s.Replace(ctx, next, stale)
			if err != nil {
				t.Fatal(err)
			}
			same(t, "met", met, stored)
		})
		if after := rawItem(t, c, table, stored.ID); !reflect.DeepEqual(after, before) {
			t.Fatal("the refused Replace changed the item")
		}
	})

	t.Run("replace over nothing", func(t *testing.T) {
		prev, _ := inFlightRecord(t, nil, "r-none", time.Minute)
		prev.Version = "v-1"
		next := prev.Clone()
		next.Version = "v-2"
		counted(t, 2, func(s *dynamo.Store) {
			if met, err := s.Replace(ctx, next, prev); !errors.Is(err, idemkit.ErrNotFound) || met != nil {
				t.Fatalf("Replace over no item: %+v, %v; want ErrNotFound", met, err)
			}
		})
		if item := rawItem(t, c, table, prev.ID); item != nil {
			t.Fatalf("the refused Replace made an item: %v", item)
		}
	})

	t.Run("replace writes the difference", func(t *testing.T) {
		u := &updates{Client: c}
		us := storeOn(t, u, table, dynamo.Options{IndexInFlight: true})
		full := fullRecord("r-diff", now)
		if met, err := us.Create(ctx, full); err != nil || met != nil {
			t.Fatal(met, err)
		}
		// Every attribute but the scope's and the fingerprint changes or
		// goes: a claim in place of the resolved record, then its
		// indeterminate, failed and completed successors, each back to
		// the full record (every attribute name is sent as it is, and
		// none is a DynamoDB reserved word).
		claim := &idemkit.Record{ID: full.ID, Scope: full.Scope, State: idemkit.StateInFlight, Fingerprint: full.Fingerprint, Owner: "o-new",
			Version: "v-claim", LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(3 * time.Hour), CreatedAt: now}
		indet := claim.Clone()
		indet.Version, indet.State, indet.Cause = "v-indet", idemkit.StateIndeterminate, idemkit.CauseOutcomeUnknown
		omitted := full.Clone()
		omitted.Version, omitted.Resolution, omitted.Snapshot = "v-omitted", nil, &idemkit.Snapshot{Status: 200, Omitted: true}
		full2 := full.Clone()
		full2.Version = "v-full2"
		prev := full
		for _, rec := range []*idemkit.Record{claim, indet, full2, omitted, claim.Clone(), full} {
			if rec.Version == prev.Version {
				rec.Version += "-again"
			}
			n := len(u.ins)
			if met, err := us.Replace(ctx, rec, prev); err != nil || met != nil {
				t.Fatalf("replace %s by %s: %+v, %v", prev.Version, rec.Version, met, err)
			}
			want, err := dynamo.Encode(us, rec)
			if err != nil {
				t.Fatal(err)
			}
			if got := rawItem(t, c, table, rec.ID); !reflect.DeepEqual(got, want) {
				t.Fatalf("item after replacing %s by %s:\n%v\nwant\n%v", prev.Version, rec.Version, got, want)
			}
			old, _ := dynamo.Encode(us, prev)
			in := u.ins[n]
			for name, v := range old {
				if w, ok := want[name]; ok && reflect.DeepEqual(v, w) && name != dynamo.AttrID && strings.Contains(*in.UpdateExpression, name+" =") {
					t.Errorf("replace %s by %s wrote %s, which did not change: %s", prev.Version, rec.Version, name, *in.UpdateExpression)
				}
			}
			if len(in.ExpressionAttributeNames) > 0 {
				t.Errorf("placeholders %v: want every attribute named as it is", in.ExpressionAttributeNames)
			}
			got, err := us.Get(ctx, rec.ID)
			if err != nil || got.Version != rec.Version || got.State != rec.State || got.Owner != rec.Owner {
				t.Fatalf("read back %+v, %v", got, err)
			}
			prev = rec
		}
	})
}
