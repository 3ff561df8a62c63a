package dynamo_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/storetest"
)

// newTTLStore returns a store whose TTL attribute is "ttl", on a table of
// its own.
func newTTLStore(t testing.TB, opts dynamo.Options) (*dynamo.Store, *dynamodb.Client, string) {
	t.Helper()
	opts.TTLAttr = "ttl"
	return newLaidOutStore(t, opts)
}

// The contract holds with the TTL on an attribute the table chose. Kept
// cheap, as TestConformanceSingleTable is: the attribute's name changes,
// not the conditions.
func TestConformanceTTLAttr(t *testing.T) {
	storetest.RunWith(t, func(t *testing.T) idemkit.OperatorStore {
		s, _, _ := newTTLStore(t, dynamo.Options{IndexInFlight: true})
		return s
	}, conformanceOptions(t, storetest.Options{DistinctKeys: 100, Racers: 10}))
}

// TestTTLAttrHoldsTheExpiry: with Options.TTLAttr every item, the
// tombstone included, holds its expiry (ExpiresAt plus the time items are
// kept past it) under that attribute and none under "exp"; a record read
// back has the ExpiresAt written.
func TestTTLAttrHoldsTheExpiry(t *testing.T) {
	s, c, table := newTTLStore(t, dynamo.Options{})
	ctx := t.Context()
	now := time.Unix(1_900_000_000, 0).UTC()
	rec := &idemkit.Record{ID: "t|op|k", Scope: idemkit.Scope{Tenant: "t", Operation: "op", Key: "k"}, State: idemkit.StateInFlight,
		Owner: "o1", LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
	rec = create(t, s, rec)
	item := rawItem(t, c, table, rec.ID)
	want := now.Add(2*time.Hour + idemkit.MaxWriteDelay + 5*time.Minute).Unix()
	if got := attrNum(item, "ttl"); got != want {
		t.Errorf("claim's ttl = %d, want ExpiresAt plus KeptPast %d", got, want)
	}
	if _, ok := item[dynamo.TTLAttr]; ok {
		t.Errorf("claim's item has %s too: %v", dynamo.TTLAttr, item)
	}
	got, err := s.Get(ctx, rec.ID)
	if err != nil || !got.ExpiresAt.Equal(rec.ExpiresAt) {
		t.Fatalf("Get: %+v, %v; want ExpiresAt %v", got, err, rec.ExpiresAt)
	}
	change(t, s, rec, releasedAt(now))
	item = rawItem(t, c, table, rec.ID)
	if got, want := attrNum(item, "ttl"), now.Add(idemkit.MaxWriteDelay+5*time.Minute).Unix(); got != want {
		t.Errorf("tombstone's ttl = %d, want %d (%v)", got, want, item)
	}
	if _, ok := item[dynamo.TTLAttr]; ok {
		t.Errorf("tombstone has %s too: %v", dynamo.TTLAttr, item)
	}
}

func TestTTLAttrRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts dynamo.Options
		want string
	}{
		{"a record attribute", dynamo.Options{TTLAttr: dynamo.AttrState}, `Options.TTLAttr "st" is the name of a record attribute`},
		{"the partition key", dynamo.Options{TTLAttr: "pk"}, "is a key attribute too"},
		{"the named partition key", dynamo.Options{KeyAttr: "PK", TTLAttr: "PK"}, "is a key attribute too"},
		{"the sort key", dynamo.Options{SortKeyAttr: "SK", SortKeyValue: "x", TTLAttr: "SK"}, "is a key attribute too"},
		{"too long", dynamo.Options{TTLAttr: strings.Repeat("t", 256)}, "at most 255 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dynamo.New(client(t), "idem", tc.opts)
			if !errors.Is(err, idemkit.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want ErrInvalidConfig saying %q", err, tc.want)
			}
		})
	}
	if _, err := dynamo.New(client(t), "idem", dynamo.Options{TTLAttr: dynamo.TTLAttr}); err != nil {
		t.Errorf("New with TTLAttr %q, the default: %v", dynamo.TTLAttr, err)
	}
}

// ttlOn is a client whose tables have TTL enabled on attr, for a server
// without the TTL API (dynalite).
type ttlOn struct {
	*dynamodb.Client
	attr string
}

func (c ttlOn) DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	return &dynamodb.DescribeTimeToLiveOutput{TimeToLiveDescription: &types.TimeToLiveDescription{
		AttributeName: aws.String(c.attr), TimeToLiveStatus: types.TimeToLiveStatusEnabled}}, nil
}

// TestCheckTTLAttr: Check accepts a table whose TTL is on the store's
// Options.TTLAttr and refuses one whose TTL is on another attribute,
// "exp" included; CheckTTL names the store's attribute.
func TestCheckTTLAttr(t *testing.T) {
	_, c, table := newTTLStore(t, dynamo.Options{})
	for _, tc := range []struct {
		on, want string
	}{
		{"ttl", ""},
		{dynamo.TTLAttr, "TTL is on exp, want ttl "},
		{"expires", "TTL is on expires, want ttl "},
	} {
		s := storeOn(t, ttlOn{c, tc.on}, table, dynamo.Options{TTLAttr: "ttl"})
		err := s.Check(t.Context())
		var mm *dynamo.TableMismatchError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("TTL on %s: Check: %v, want nil", tc.on, err)
		case tc.want != "" && (!errors.As(err, &mm) || len(mm.Problems) != 1 || !strings.HasPrefix(mm.Problems[0], tc.want)):
			t.Errorf("TTL on %s: Check: %v, want a mismatch %q", tc.on, err, tc.want)
		}
		if err := s.CheckTTL(t.Context()); err != nil {
			t.Errorf("TTL on %s: CheckTTL: %v, want nil", tc.on, err)
		}
	}
	s := storeOn(t, c, table, dynamo.Options{TTLAttr: "ttl"})
	if !dynalite.Has(t, dynalite.UpdateTimeToLive) {
		if err := s.CheckTTL(t.Context()); !errors.Is(err, dynamo.ErrTTLDisabled) || !strings.Contains(err.Error(), "want it on ttl") {
			t.Errorf("CheckTTL without the TTL API: %v, want ErrTTLDisabled naming ttl", err)
		}
	}
}

// attrNum returns the number attribute name of item, or -1.
func attrNum(item map[string]types.AttributeValue, name string) int64 {
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return -1
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return -1
	}
	return v
}
