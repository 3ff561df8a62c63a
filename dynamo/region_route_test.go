package dynamo_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// TestRegionalUnroutableID: an ID a regional store cannot route (not an
// idemkit ID, or one whose tenant is hashed) is a bad argument:
// ErrRecordInvalid, never ErrStoreUnavailable (a 503 telling the client to
// retry), and no call is made.
func TestRegionalUnroutableID(t *testing.T) {
	eu, _, table := twoRegions(t)
	cc := newCounting(eu)
	s, err := dynamo.NewRegional(dynamo.Regions{Clients: map[string]dynamo.Client{"eu-west-1": cc}, Home: func(string) string { return "eu-west-1" }, Local: "eu-west-1"}, table, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	// A tenant over MaxTenantLen in a scope too long for a readable ID:
	// the ID is the hash alone.
	long := idemkit.Scope{Tenant: strings.Repeat("t", idemkit.MaxTenantLen+1), Operation: "POST /" + strings.Repeat("o", 1100), Key: "k"}
	if !strings.HasPrefix(long.ID(false), "o1x|") {
		t.Fatalf("ID %.10q..., want a hashed tenant", long.ID(false))
	}
	ctx := context.Background()
	now := time.Now()
	for _, id := range []string{"not-an-id", long.ID(false)} {
		rec := &idemkit.Record{ID: id, Scope: long, State: idemkit.StateInFlight, Owner: "o", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
		done := *rec
		done.State, done.Snapshot = idemkit.StateCompleted, &idemkit.Snapshot{Status: 201}
		calls := map[string]func() error{
			"Claim":    func() error { _, err := s.Claim(ctx, rec, now, idemkit.ClaimOptions{}); return err },
			"Complete": func() error { return s.Complete(ctx, &done, now) },
			"Release":  func() error { return s.Release(ctx, id, "o", now) },
			"Extend":   func() error { return s.Extend(ctx, id, "o", now.Add(time.Minute), now) },
			"MarkIndeterminate": func() error {
				err := s.MarkIndeterminate(ctx, id, "o", now)
				return err
			},
			"MarkUnknown": func() error { return s.MarkUnknown(ctx, id, "o", now) },
			"Resolve": func() error {
				_, err := s.Resolve(ctx, id, idemkit.Resolution{As: idemkit.StateFailed}, now)
				return err
			},
			"Get": func() error { _, err := s.Get(ctx, id, now); return err },
		}
		for name, call := range calls {
			err := call()
			if !errors.Is(err, idemkit.ErrRecordInvalid) || errors.Is(err, idemkit.ErrStoreUnavailable) {
				t.Errorf("%s(%.20q...): %v; want ErrRecordInvalid, not ErrStoreUnavailable", name, id, err)
			}
		}
	}
	for _, op := range []string{"PutItem", "GetItem", "UpdateItem"} {
		if n := cc.Calls(op); n != 0 {
			t.Errorf("%d %s calls for unroutable IDs", n, op)
		}
	}
}
