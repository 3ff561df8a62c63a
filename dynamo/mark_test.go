package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/dynalite"
	"github.com/idemkit/idemkit/internal/faults"
)

// claimPut tells a claim's PutItem from a completion's and a release's;
// releasePut a release's.
func claimPut(b []byte) bool   { return bytes.Contains(b, []byte(`"st":{"S":"in_flight"}`)) }
func releasePut(b []byte) bool { return bytes.Contains(b, []byte(`"st":{"S":"released"}`)) }

// faultyStore returns a store on a fresh table of the shared server whose
// calls go through a fault transport, a client that sees no faults, and
// the table. The client is built as the SDK builds one by default, with
// its standard retryer and retry quota.
func faultyStore(t *testing.T, opts dynamo.Options, rules ...faults.Rule) (*dynamo.Store, *faults.Transport, *dynamodb.Client, string) {
	t.Helper()
	return faultyStoreVia(t, http.DefaultTransport, opts, rules...)
}

// faultyStoreVia is faultyStore with the server's answers passing through
// base (faults.WithoutConditionItem: as from a server that does not
// return the item with a refusal).
func faultyStoreVia(t *testing.T, base http.RoundTripper, opts dynamo.Options, rules ...faults.Rule) (*dynamo.Store, *faults.Transport, *dynamodb.Client, string) {
	t.Helper()
	clean := client(t)
	table := newTable(t, clean)
	ft := faults.New(base, rules...)
	c, err := dynalite.NewClientVia(t.Context(), dynalite.Endpoint(t), ft)
	if err != nil {
		t.Fatal(err)
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = dynalite.Scale(30 * time.Second)
	}
	s, err := dynamo.New(c, table, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, ft, clean, table
}

// faultyPair returns a store whose calls go through a fault transport over
// base (faultyStoreVia), a store on the same table that sees no faults,
// and the transport.
func faultyPair(t *testing.T, base http.RoundTripper, opts dynamo.Options, rules ...faults.Rule) (faulty, clean *dynamo.Store, ft *faults.Transport) {
	t.Helper()
	s, ft, c, table := faultyStoreVia(t, base, opts, rules...)
	cs, err := dynamo.New(c, table, dynamo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s, cs, ft
}

// inFlightRecord returns an in_flight record of key with owner "o-1",
// created now (the real time, to the millisecond) with a lease ending
// lease later, and now; claimed through s unless s is nil.
func inFlightRecord(t *testing.T, s *dynamo.Store, key string, lease time.Duration) (*idemkit.Record, time.Time) {
	t.Helper()
	now := time.Now().Truncate(time.Millisecond)
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: key}
	rec := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o-1", Fingerprint: "v1:sha256:f",
		LeaseUntil: now.Add(lease), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
	if s != nil {
		if res, err := s.Claim(context.Background(), rec, now, idemkit.ClaimOptions{}); err != nil || !res.Won {
			t.Fatalf("claim: %+v %v", res, err)
		}
	}
	return rec, now
}

// TestRetryQuota measures the SDK's client-side retry quota under
// sustained errors: after a burst of failing calls has drained it, claims
// that fail once get no retry with the quota kept, and all succeed with
// the store's default retryer, which has none.
func TestRetryQuota(t *testing.T) {
	const burst, claims = 60, 20
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("KeepRetryQuota=%v", keep), func(t *testing.T) {
			s, ft, _, _ := faultyStore(t, dynamo.Options{KeepRetryQuota: keep, MaxBackoff: time.Millisecond},
				faults.Rule{Op: "GetItem", Times: -1, Kind: faults.ServerError},
				faults.Rule{Op: "PutItem", Times: -1, Every: 2, Kind: faults.ServerError})
			ctx := context.Background()
			now := time.Now()
			for i := 0; i < burst; i++ {
				if _, err := s.Get(ctx, fmt.Sprintf("o1|1:t1:o1:%d", i%10), now); !errors.Is(err, idemkit.ErrStoreUnavailable) {
					t.Fatalf("Get under a 5xx fault: %v", err)
				}
			}
			failed, quota := 0, 0
			for i := 0; i < claims; i++ {
				sc := idemkit.Scope{Tenant: "t", Operation: "POST /x", Key: fmt.Sprint("quota-", i)}
				rec := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o", Fingerprint: "v1:sha256:q",
					LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
				res, err := s.Claim(ctx, rec, now, idemkit.ClaimOptions{})
				switch {
				case err != nil:
					failed++
					if strings.Contains(err.Error(), "retry quota exceeded") {
						quota++
					}
				case !res.Won:
					t.Fatalf("claim %d lost to %+v", i, res.Existing)
				}
			}
			t.Logf("KeepRetryQuota=%v: after %d failing calls, %d of %d claims failed (%d with \"retry quota exceeded\"), every other claim attempt failing; %d faults injected",
				keep, burst, failed, claims, quota, len(ft.Events()))
			if keep && quota == 0 {
				t.Fatalf("with the SDK's retry quota kept, no claim failed for it (%d failed)", failed)
			}
			if !keep && failed != 0 {
				t.Fatalf("without the retry quota, %d of %d claims failed", failed, claims)
			}
		})
	}
}

// TestLostClaimAnswers: a claim whose every SDK attempt is applied with
// its answer lost is made again by the engine with the same owner token,
// recognised as ours, and run once.
func TestLostClaimAnswers(t *testing.T) {
	s, _, clean, table := faultyStore(t, dynamo.Options{MaxBackoff: time.Millisecond},
		faults.Rule{Op: "PutItem", Match: claimPut, Times: dynamo.DefaultMaxAttempts, Kind: faults.LostAck})
	g, err := idemkit.New(idemkit.Config{Store: s, ClaimBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "lost-1"}, Fingerprint: "v1:sha256:l"}
	runs := 0
	snap, replayed, err := g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
		runs++
		return &idemkit.Snapshot{Status: 201, Body: []byte("ok")}, nil
	})
	if err != nil || replayed || snap.Status != 201 || runs != 1 {
		t.Fatalf("Do: %+v replayed %v err %v runs %d", snap, replayed, err, runs)
	}
	cs, _ := dynamo.New(clean, table, dynamo.Options{})
	if rec, err := cs.Get(context.Background(), req.Scope.ID(false), time.Now()); err != nil || rec.State != idemkit.StateCompleted {
		t.Fatalf("record %+v %v, want completed", rec, err)
	}
}

// TestLostClaimNotFreed: when the claims' answers are all lost and the
// release fails too, the caller is told a claim may be held, and the
// claim left behind is listed as a stale lease once its lease ends.
func TestLostClaimNotFreed(t *testing.T) {
	s, _, clean, table := faultyStore(t, dynamo.Options{MaxBackoff: time.Millisecond, IndexInFlight: true},
		faults.Rule{Op: "PutItem", Match: claimPut, Times: -1, Kind: faults.LostAck},
		faults.Rule{Op: "PutItem", Match: releasePut, Times: -1, Kind: faults.ServerError})
	g, err := idemkit.New(idemkit.Config{Store: s, ClaimBackoff: time.Millisecond, Policy: idemkit.Policy{Lease: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "lost-2"}, Fingerprint: "v1:sha256:l"}
	_, _, err = g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
		t.Error("handler ran")
		return nil, nil
	})
	var cu *idemkit.ClaimUnknownError
	if !errors.As(err, &cu) || !errors.Is(err, idemkit.ErrStoreUnavailable) {
		t.Fatalf("Do: %v, want a *ClaimUnknownError", err)
	}
	cs, _ := dynamo.New(clean, table, dynamo.Options{IndexInFlight: true})
	after := cu.LeaseUntil.Add(time.Second)
	recs, _, err := cs.ListStale(context.Background(), "acme", "", 10, after)
	if err != nil || len(recs) != 1 || recs[0].ID != req.Scope.ID(false) {
		t.Fatalf("ListStale after the lease: %v %v", recs, err)
	}
}

// markUpdate and resolveUpdate tell a mark's UpdateItem (MarkUnknown,
// MarkIndeterminate) and a resolution's from a lease renewal's.
func markUpdate(b []byte) bool    { return bytes.Contains(b, []byte("SET #st = :indeterminate")) }
func resolveUpdate(b []byte) bool { return bytes.Contains(b, []byte("REMOVE #ix, #it")) }

// TestLostStateChangeAnswers: a mark or a resolution whose first attempt
// lands with its answer lost is refused on the SDK's retry (the record is
// no longer in the state the condition asks for); the store recognises
// its own write by the token it wrote and reports it made (a resolution
// returns the changed record). A later, distinct write of the same kind
// is still refused.
func TestLostStateChangeAnswers(t *testing.T) {
	type change func(s *dynamo.Store, ctx context.Context, id, owner string, now time.Time) (*idemkit.Record, error)
	// A mark returns no record: the stored one is checked below.
	mark := func(f func(*dynamo.Store, context.Context, string, string, time.Time) error) change {
		return func(s *dynamo.Store, ctx context.Context, id, owner string, now time.Time) (*idemkit.Record, error) {
			return nil, f(s, ctx, id, owner, now)
		}
	}
	resolveAs := func(as idemkit.State) change {
		return func(s *dynamo.Store, ctx context.Context, id, _ string, now time.Time) (*idemkit.Record, error) {
			res := idemkit.Resolution{As: as, Operator: "ops", Reason: "checked"}
			if as == idemkit.StateCompleted {
				res.Snapshot = &idemkit.Snapshot{Status: 201, Body: []byte(`{"id":"ord_1"}`)}
			}
			return s.Resolve(ctx, id, res, now)
		}
	}
	for _, tc := range []struct {
		name   string
		kind   faults.Kind
		marked bool // the record is indeterminate before the change
		match  func([]byte) bool
		change change
		want   idemkit.State
		refuse error
	}{
		{"MarkIndeterminate/lost-ack", faults.LostAck, false, markUpdate, mark((*dynamo.Store).MarkIndeterminate), idemkit.StateIndeterminate, idemkit.ErrNotOwner},
		{"MarkIndeterminate/lost-ack-body", faults.LostAckBody, false, markUpdate, mark((*dynamo.Store).MarkIndeterminate), idemkit.StateIndeterminate, idemkit.ErrNotOwner},
		{"MarkUnknown/lost-ack", faults.LostAck, false, markUpdate, mark((*dynamo.Store).MarkUnknown), idemkit.StateIndeterminate, idemkit.ErrNotOwner},
		{"MarkUnknown/lost-ack-body", faults.LostAckBody, false, markUpdate, mark((*dynamo.Store).MarkUnknown), idemkit.StateIndeterminate, idemkit.ErrNotOwner},
		{"Resolve-failed/lost-ack", faults.LostAck, true, resolveUpdate, resolveAs(idemkit.StateFailed), idemkit.StateFailed, idemkit.ErrNotIndeterminate},
		{"Resolve-completed/lost-ack-body", faults.LostAckBody, true, resolveUpdate, resolveAs(idemkit.StateCompleted), idemkit.StateCompleted, idemkit.ErrNotIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, cs, ft := faultyPair(t, http.DefaultTransport, dynamo.Options{MaxBackoff: time.Millisecond},
				faults.Rule{Op: "UpdateItem", Match: tc.match, Times: 1, Kind: tc.kind})
			ctx := context.Background()
			rec, now := inFlightRecord(t, cs, "change-"+tc.name, time.Second)
			at := now.Add(2 * time.Second) // the lease has ended
			if tc.marked {
				if err := cs.MarkIndeterminate(ctx, rec.ID, rec.Owner, at); err != nil {
					t.Fatal(err)
				}
			}
			got, err := tc.change(s, ctx, rec.ID, rec.Owner, at)
			if n := ft.Calls("UpdateItem"); n != 2 || len(ft.Events()) != 1 {
				t.Fatalf("%d UpdateItem calls, %d faults; want the answer lost once and the SDK's retry", n, len(ft.Events()))
			}
			if err != nil {
				t.Fatalf("a change whose answer was lost: %v, want the changed record", err)
			}
			if got != nil && (got.State != tc.want || got.Owner != rec.Owner || got.ID != rec.ID) {
				t.Fatalf("change returned %+v", got)
			}
			// The refusal carries the item where the server returns it
			// (DynamoDB); otherwise one consistent read fetches it.
			wantGets := 1
			if dynalite.Has(t, dynalite.AllOldOnConditionFailure) {
				wantGets = 0
			}
			if tc.marked {
				// A resolution reads the item first: the owner it is fenced
				// on and, completed, the size of its answer.
				wantGets++
			}
			if n := ft.Calls("GetItem"); n != wantGets {
				t.Errorf("%d GetItem calls, want %d", n, wantGets)
			}
			stored, err := cs.Get(ctx, rec.ID, at)
			if err != nil || stored.State != tc.want || stored.Owner != rec.Owner {
				t.Fatalf("stored record %+v %v, want %s", stored, err, tc.want)
			}
			// The same change made again, by another call: the contract's
			// refusal.
			if _, err := tc.change(cs, ctx, rec.ID, rec.Owner, at); !errors.Is(err, tc.refuse) {
				t.Fatalf("the change made again: %v, want %v", err, tc.refuse)
			}
		})
	}
}

// TestLostStateChangeErrors: a mark or a resolution that fails is a
// StoreError, not its refusal, whether the write itself fails or it is
// refused (its answer lost, then its retry refused) and the record cannot
// be read again to tell whether the write was its own.
func TestLostStateChangeErrors(t *testing.T) {
	resolve := func(s *dynamo.Store, ctx context.Context, id, _ string, now time.Time) (*idemkit.Record, error) {
		return s.Resolve(ctx, id, idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops", Reason: "checked"}, now)
	}
	mark := func(f func(*dynamo.Store, context.Context, string, string, time.Time) error) func(*dynamo.Store, context.Context, string, string, time.Time) (*idemkit.Record, error) {
		return func(s *dynamo.Store, ctx context.Context, id, owner string, now time.Time) (*idemkit.Record, error) {
			return nil, f(s, ctx, id, owner, now)
		}
	}
	for _, tc := range []struct {
		name   string
		marked bool // the record is indeterminate before the change
		rules  []faults.Rule
		change func(s *dynamo.Store, ctx context.Context, id, owner string, now time.Time) (*idemkit.Record, error)
		refuse error
	}{
		{"MarkUnknown/unavailable", false, []faults.Rule{{Op: "UpdateItem", Times: -1, Kind: faults.ServerError}},
			mark((*dynamo.Store).MarkUnknown), idemkit.ErrNotOwner},
		{"MarkIndeterminate/unreadable", false, []faults.Rule{{Op: "UpdateItem", Match: markUpdate, Times: 1, Kind: faults.LostAck}, {Op: "GetItem", Times: -1, Kind: faults.ServerError}},
			mark((*dynamo.Store).MarkIndeterminate), idemkit.ErrNotOwner},
		{"Resolve/unavailable", true, []faults.Rule{{Op: "UpdateItem", Match: resolveUpdate, Times: -1, Kind: faults.ServerError}},
			resolve, idemkit.ErrNotIndeterminate},
		// The first GetItem is the resolution's read before its write.
		{"Resolve/unreadable", true, []faults.Rule{{Op: "UpdateItem", Match: resolveUpdate, Times: 1, Kind: faults.LostAck}, {Op: "GetItem", Skip: 1, Times: -1, Kind: faults.ServerError}},
			resolve, idemkit.ErrNotIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A refusal carries no item, as on a server that does not
			// return it: the store must read the record.
			s, cs, ft := faultyPair(t, faults.WithoutConditionItem(http.DefaultTransport), dynamo.Options{MaxBackoff: time.Millisecond}, tc.rules...)
			ctx := context.Background()
			rec, now := inFlightRecord(t, cs, "change-err-"+tc.name, time.Second)
			at := now.Add(2 * time.Second) // the lease has ended
			if tc.marked {
				if err := cs.MarkIndeterminate(ctx, rec.ID, rec.Owner, at); err != nil {
					t.Fatal(err)
				}
			}
			got, err := tc.change(s, ctx, rec.ID, rec.Owner, at)
			var se *idemkit.StoreError
			if !errors.As(err, &se) || errors.Is(err, tc.refuse) || got != nil {
				t.Fatalf("change: %+v %v; want a StoreError", got, err)
			}
			if len(ft.Events()) < 2 {
				t.Fatalf("faults injected: %v, want the failed write or the lost answer and the failed read", ft.Events())
			}
		})
	}
}
