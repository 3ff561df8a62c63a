package dynamo_test

import (
	"context"
	"errors"
	"testing"
	"time"

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
			s, ft, clean, table := faultyStore(t, dynamo.Options{})
			cs, err := dynamo.New(clean, table, dynamo.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			now := time.Now().Truncate(time.Millisecond)
			sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "resolve-read-" + tc.name}
			rec := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o-1", Fingerprint: "v1:sha256:r",
				LeaseUntil: now.Add(time.Second), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
			if tc.seed {
				if res, err := cs.Claim(ctx, rec, now, idemkit.ClaimOptions{}); err != nil || !res.Won {
					t.Fatalf("claim: %+v %v", res, err)
				}
			}
			if tc.mark {
				if _, err := cs.MarkIndeterminate(ctx, rec.ID, rec.Owner, now.Add(2*time.Second)); err != nil {
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
