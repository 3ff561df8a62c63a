package dynamo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/dynalite"
	"github.com/idemkit/idemkit/internal/eventlog"
)

// TestRefusedMarkUsage: a handler whose outcome is unknown has its claim
// marked; when a retry marked it first, the refused mark is still a call
// the request made and paid for (a failed conditional write costs at
// least one write unit), and so is the read that tells it from the
// request's own mark where the refusal carries no item.
func TestRefusedMarkUsage(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	obs := &eventlog.Log{}
	g, err := idemkit.New(idemkit.Config{Store: s, Observer: obs, Policy: idemkit.Policy{Lease: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "refused-mark"}, Fingerprint: "v1:sha256:u"}
	_, _, err = g.Do(context.Background(), req, func(ctx context.Context) (*idemkit.Snapshot, error) {
		rec, err := s.Get(context.Background(), req.Scope.ID(false), time.Now())
		if err != nil {
			return nil, err
		}
		// A retry, its lease over by its clock, marks the claim first
		// (outside this request: its calls are not this request's).
		if err := s.MarkIndeterminate(context.Background(), rec.ID, rec.Owner, time.Now().Add(2*time.Minute)); err != nil {
			return nil, err
		}
		return nil, idemkit.ErrOutcomeUnknown
	})
	if !errors.Is(err, idemkit.ErrOutcomeUnknown) {
		t.Fatalf("Do: %v, want the handler's ErrOutcomeUnknown", err)
	}
	u := obs.Last().Usage
	// The claim, the refused mark, and the read after it where the
	// refusal carries no item.
	calls := 3
	if dynalite.Has(t, dynalite.AllOldOnConditionFailure) {
		calls = 2
	}
	if u.Calls != calls || u.WriteUnits < 2 {
		t.Fatalf("usage %+v, want %d calls and at least 2 write units (the claim and the refused mark)", u, calls)
	}
}
