package dynamo_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func N(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// TestCorruptItems: items that cannot be decoded give ErrCorruptRecord from
// Get, from a lost claim and from the engine, which does not run the
// handler; nothing panics.
func TestCorruptItems(t *testing.T) {
	s, c, table := newStore(t, dynamo.Options{})
	g, err := idemkit.New(idemkit.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	now := base()
	// valid returns a well-formed completed item for scope sc.
	valid := func(sc idemkit.Scope) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"pk": S(sc.ID(false)), "st": S("completed"), "tn": S(sc.Tenant), "op": S(sc.Operation), "ik": S(sc.Key),
			"fp": S("v1:sha256:c"), "ow": S("o"), "lu": N(now.UnixMilli()), "ru": N(now.Add(time.Hour).UnixMilli()),
			"exp": N(now.Add(time.Hour).Unix()), "sc": N(201), "sb": &types.AttributeValueMemberB{Value: []byte("ok")},
		}
	}
	for _, tc := range []struct {
		name string
		edit func(map[string]types.AttributeValue)
	}{
		{"garbage zstd body", func(it map[string]types.AttributeValue) {
			it["se"] = S("zstd")
			it["sb"] = &types.AttributeValueMemberB{Value: []byte("\x28\xb5\x2f\xfd garbage")}
		}},
		{"unknown body encoding", func(it map[string]types.AttributeValue) { it["se"] = S("br") }},
		{"state as a number", func(it map[string]types.AttributeValue) { it["st"] = N(1) }},
		{"unknown state", func(it map[string]types.AttributeValue) { it["st"] = S("done") }},
		{"no owner", func(it map[string]types.AttributeValue) { delete(it, "ow") }},
		{"replay time as a string", func(it map[string]types.AttributeValue) { it["ru"] = S("soon") }},
		{"body as a string", func(it map[string]types.AttributeValue) { it["sb"] = S("ok") }},
		{"header as a list", func(it map[string]types.AttributeValue) {
			it["sh"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{S("x")}}
		}},
		{"header value as a number", func(it map[string]types.AttributeValue) {
			it["sh"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"Location": &types.AttributeValueMemberL{Value: []types.AttributeValue{N(1)}}}}
		}},
		{"completed without a status", func(it map[string]types.AttributeValue) { delete(it, "sc") }},
		{"status out of range", func(it map[string]types.AttributeValue) { it["sc"] = N(100000) }},
		{"unknown resolution", func(it map[string]types.AttributeValue) { it["ra"] = S("maybe") }},
		// The store never writes a body with the omitted flag, nor an
		// encoding without a body: such an item was edited by hand.
		{"omitted with a body", func(it map[string]types.AttributeValue) { it["som"] = &types.AttributeValueMemberBOOL{Value: true} }},
		{"body encoding without a body", func(it map[string]types.AttributeValue) { delete(it, "sb"); it["se"] = S("zstd") }},
		{"huge number", func(it map[string]types.AttributeValue) {
			it["ca"] = &types.AttributeValueMemberN{Value: "1e30"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: tc.name}
			it := valid(sc)
			tc.edit(it)
			if _, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
				t.Fatal(err)
			}
			id := sc.ID(false)
			if _, err := s.Get(context.Background(), id, now); !errors.Is(err, idemkit.ErrCorruptRecord) {
				t.Fatalf("Get: %v, want ErrCorruptRecord", err)
			}
			rec := &idemkit.Record{ID: id, Scope: sc, State: idemkit.StateInFlight, Owner: "new", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
			if res, err := s.Claim(context.Background(), rec, now, idemkit.ClaimOptions{}); !errors.Is(err, idemkit.ErrCorruptRecord) {
				t.Fatalf("Claim: %+v, %v, want ErrCorruptRecord", res, err)
			}
			_, _, err := g.Do(context.Background(), idemkit.Request{Scope: sc, Fingerprint: "v1:sha256:c"}, func(context.Context) (*idemkit.Snapshot, error) {
				t.Error("handler ran over a corrupt record")
				return nil, errors.New("ran")
			})
			if !errors.Is(err, idemkit.ErrCorruptRecord) {
				t.Fatalf("Do: %v, want ErrCorruptRecord", err)
			}
			// Once expired, a corrupt item is absent like any other.
			later := now.Add(2 * time.Hour)
			if _, err := s.Get(context.Background(), id, later); !errors.Is(err, idemkit.ErrNotFound) {
				t.Fatalf("Get after expiry: %v, want ErrNotFound", err)
			}
		})
	}
}
