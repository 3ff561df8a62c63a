package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/itemsize"
)

// resolvableAt is when idemkit.Resolve accepts a decision as on a record
// whose lease ended at leaseUntil: a failed one MaxWriteDelay later.
func resolvableAt(leaseUntil time.Time) time.Time {
	return leaseUntil.Add(time.Minute + idemkit.MaxWriteDelay + time.Second)
}

// TestResolveRefusedByItsRead: idemkit.Resolve reads the record before it
// writes; one that is missing, in flight with a lease that may still run,
// or indeterminate but expired is refused by that read, one consistent
// GetItem, without a write.
func TestResolveRefusedByItsRead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		seed  bool          // create the record
		mark  bool          // and mark it indeterminate
		after time.Duration // when the resolution runs, from the claim
		want  error
	}{
		{name: "missing", after: 2 * time.Second, want: idemkit.ErrNotFound},
		{name: "in-flight", seed: true, after: 2 * time.Second, want: idemkit.ErrMayBeRunning},
		{name: "indeterminate/expired", seed: true, mark: true, after: 3 * time.Hour, want: idemkit.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, cs, ft := faultyPair(t, http.DefaultTransport, dynamo.Options{})
			ctx := context.Background()
			seed := cs
			if !tc.seed {
				seed = nil
			}
			rec, now := inFlightRecord(t, seed, "resolve-read-"+tc.name, time.Second)
			if tc.mark {
				change(t, cs, rec, markedStale)
			}
			got, _, err := idemkit.Resolve(ctx, s, rec.ID, idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops", Reason: "checked"}, now.Add(tc.after))
			if !errors.Is(err, tc.want) || got != nil {
				t.Fatalf("Resolve: %+v %v, want %v", got, err, tc.want)
			}
			if g, u := ft.Calls("GetItem"), ft.Calls("UpdateItem"); g != 1 || u != 0 {
				t.Errorf("%d GetItem, %d UpdateItem calls; want the read alone", g, u)
			}
		})
	}
}

// readHook is the test server's client, running after once, after the
// first GetItem has its answer.
type readHook struct {
	*dynamodb.Client
	after func()
	once  sync.Once
}

func (c *readHook) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := c.Client.GetItem(ctx, in, optFns...)
	c.once.Do(c.after)
	return out, err
}

// TestResolveConcurrent: of two resolutions of one record, both read
// while it is indeterminate, the second to write is refused,
// ErrNotIndeterminate, even when it resolves it the same way: the first's
// write is not taken for its own.
func TestResolveConcurrent(t *testing.T) {
	for _, as := range []idemkit.State{idemkit.StateFailed, idemkit.StateCompleted} {
		t.Run(string(as), func(t *testing.T) {
			clean := client(t)
			table := newTable(t, clean)
			cs := storeOn(t, clean, table, dynamo.Options{})
			ctx := context.Background()
			rec, _ := inFlightRecord(t, cs, "resolve-concurrent-"+string(as), time.Second)
			rec = change(t, cs, rec, markedStale)
			at := resolvableAt(rec.LeaseUntil)
			resolution := func(operator string) idemkit.Resolution {
				res := idemkit.Resolution{As: as, Operator: operator, Reason: "checked"}
				if as == idemkit.StateCompleted {
					res.Snapshot = &idemkit.Snapshot{Status: 201, Body: []byte(`{"id":"ord_1"}`)}
				}
				return res
			}
			// The other operator resolves it between this one's read and
			// its write.
			hook := &readHook{Client: clean, after: func() {
				if _, _, err := idemkit.Resolve(ctx, cs, rec.ID, resolution("ops-a"), at); err != nil {
					t.Errorf("the first resolution: %v", err)
				}
			}}
			s := storeOn(t, hook, table, dynamo.Options{})
			if got, _, err := idemkit.Resolve(ctx, s, rec.ID, resolution("ops-b"), at); !errors.Is(err, idemkit.ErrNotIndeterminate) {
				t.Fatalf("the second resolution: %+v %v, want ErrNotIndeterminate", got, err)
			}
			stored, err := cs.Get(ctx, rec.ID)
			if err != nil || stored.State != as || stored.Resolution == nil || stored.Resolution.Operator != "ops-a" {
				t.Fatalf("stored %+v %v, want the first resolution", stored, err)
			}
		})
	}
}

// TestResolveSizeOfTheRest: a completed resolution's answer is budgeted
// against the whole item it is written into, whatever makes that item
// large: a scope too long for a readable ID (the ID is then short, the
// scope attributes are not) or a long fingerprint. An answer that does not
// fit is stored without its body (Omitted), as a completion's is; it never
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
			rec := create(t, s, &idemkit.Record{ID: tc.scope.ID(false), Scope: tc.scope, State: idemkit.StateInFlight, Fingerprint: tc.fp, Owner: "owner-1",
				LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now})
			change(t, s, rec, markedUnknown(now))
			body := randomBytes(tc.body)
			res := idemkit.Resolution{As: idemkit.StateCompleted, Operator: "alice", Reason: "charged, PSP ref ch_1",
				Snapshot: &idemkit.Snapshot{Status: 201, Header: map[string][]string{"Location": {"/orders/1"}}, Body: body}}
			if _, _, err := idemkit.Resolve(ctx, s, rec.ID, res, now.Add(time.Minute)); err != nil {
				t.Fatalf("Resolve: %v; want the record resolved, its body left out if it does not fit", err)
			}
			got := get(t, s, rec.ID)
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
			if n := itemsize.Of(out.Item); n > tc.cap {
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
		rec := create(t, s, &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o", Fingerprint: "v1:sha256:c",
			LeaseUntil: now.Add(time.Second), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now})
		change(t, s, rec, markedStale)
		res := idemkit.Resolution{As: as, Operator: "ops"}
		if as == idemkit.StateCompleted {
			res.Snapshot = &idemkit.Snapshot{Status: 201, Body: []byte("checked")}
		}
		if _, _, err := idemkit.Resolve(ctx, s, rec.ID, res, resolvableAt(rec.LeaseUntil)); err != nil {
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
