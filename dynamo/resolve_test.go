package dynamo_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// TestResolveRefusedByItsRead: a resolution reads the record before it
// writes; one that is missing, not indeterminate, or indeterminate but
// expired is refused by that read, ErrNotIndeterminate, without a write.
func TestResolveRefusedByItsRead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		seed  bool          // claim the record
		mark  bool          // and mark it indeterminate
		after time.Duration // when the resolution runs, from the claim
	}{
		{name: "missing", after: 2 * time.Second},
		{name: "in-flight", seed: true, after: 2 * time.Second},
		{name: "indeterminate/expired", seed: true, mark: true, after: 3 * time.Hour},
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
				if err := cs.MarkIndeterminate(ctx, rec.ID, rec.Owner, now.Add(2*time.Second)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := s.Resolve(ctx, rec.ID, idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops", Reason: "checked"}, now.Add(tc.after))
			if !errors.Is(err, idemkit.ErrNotIndeterminate) || got != nil {
				t.Fatalf("Resolve: %+v %v, want ErrNotIndeterminate", got, err)
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
			cs, err := dynamo.New(clean, table, dynamo.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			rec, now := inFlightRecord(t, cs, "resolve-concurrent-"+string(as), time.Second)
			at := now.Add(2 * time.Second)
			if err := cs.MarkIndeterminate(ctx, rec.ID, rec.Owner, at); err != nil {
				t.Fatal(err)
			}
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
				if _, err := cs.Resolve(ctx, rec.ID, resolution("ops-a"), at); err != nil {
					t.Errorf("the first resolution: %v", err)
				}
			}}
			s, err := dynamo.New(hook, table, dynamo.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := s.Resolve(ctx, rec.ID, resolution("ops-b"), at); !errors.Is(err, idemkit.ErrNotIndeterminate) {
				t.Fatalf("the second resolution: %+v %v, want ErrNotIndeterminate", got, err)
			}
			stored, err := cs.Get(ctx, rec.ID, at)
			if err != nil || stored.State != as || stored.Resolution == nil || stored.Resolution.Operator != "ops-a" {
				t.Fatalf("stored %+v %v, want the first resolution", stored, err)
			}
		})
	}
}
