package dynamo

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/dynalite"
)

// TestBlocksIsTheClaimCondition: blocks, which judges a record read after
// a claim was refused where the server does not return the item, agrees
// with the claim's condition as the server evaluates it, for each record a
// claim of ours can meet: our own in_flight record with a lease ending
// before, at or after the claim's (a sub-millisecond lease included, which
// the item stores rounded up), another owner's, and one whose lease ended,
// with and without Takeover.
func TestBlocksIsTheClaimCondition(t *testing.T) {
	ctx := context.Background()
	c, err := dynalite.NewClient(ctx, dynalite.Endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	table := dynalite.CreateTable(t, c, TableDefinition("idem"))
	s, err := New(c, table, Options{CallTimeout: dynalite.Scale(30 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Millisecond)
	lease := now.Add(10 * time.Second)
	for _, tc := range []struct {
		name     string
		curOwner string
		curLease time.Time // the stored record's lease end
		recLease time.Time // the claim's
		takeover bool
	}{
		{"own/same-lease", "o-1", lease, lease, false},
		{"own/sub-ms-lease", "o-1", lease.Add(300 * time.Microsecond), lease.Add(300 * time.Microsecond), false},
		{"own/claim-rounds-to-stored", "o-1", lease.Add(time.Millisecond), lease.Add(300 * time.Microsecond), false},
		{"own/later-claim", "o-1", lease, lease.Add(time.Millisecond), false},
		{"own/earlier-claim", "o-1", lease.Add(time.Millisecond), lease, false},
		{"own/earlier-claim-sub-ms", "o-1", lease.Add(2 * time.Millisecond), lease.Add(300 * time.Microsecond), false},
		{"own/earlier-claim-takeover", "o-1", lease.Add(time.Minute), lease, true},
		{"other/live", "o-2", lease, lease, false},
		{"other/live-takeover", "o-2", lease, lease, true},
		{"other/lease-ended", "o-2", now.Add(-time.Second), lease, false},
		{"other/lease-ended-takeover", "o-2", now.Add(-time.Second), lease, true},
		{"own/lease-ended-earlier-claim-takeover", "o-1", now.Add(-time.Millisecond), now.Add(-time.Second), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "blocks-" + tc.name}
			rec := func(owner string, leaseUntil time.Time) *idemkit.Record {
				return &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: owner, Fingerprint: "v1:sha256:b",
					LeaseUntil: leaseUntil, ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
			}
			if res, err := s.Claim(ctx, rec(tc.curOwner, tc.curLease), now.Add(-time.Minute), idemkit.ClaimOptions{}); err != nil || !res.Won {
				t.Fatalf("seed: %+v %v", res, err)
			}
			cur, err := s.Get(ctx, sc.ID(false), now)
			if err != nil {
				t.Fatal(err)
			}
			claim := rec("o-1", tc.recLease)
			opts := idemkit.ClaimOptions{Takeover: tc.takeover}
			in, err := s.claimInput(claim, now, opts, false)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.PutItem(ctx, in)
			_, refused := conditionFailed(err)
			if err != nil && !refused {
				t.Fatal(err)
			}
			if got := blocks(cur, claim, now, opts); got != refused {
				t.Errorf("blocks = %v; the server's condition refused the claim: %v", got, refused)
			}
		})
	}
}
