package idemkit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/memstore"
)

// claimAt stores an in_flight record of scope k claimed at now whose lease
// ends at leaseUntil.
func claimAt(t *testing.T, s idemkit.Store, k string, now, leaseUntil time.Time) *idemkit.Record {
	t.Helper()
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: k}
	rec := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v1:sha256:aa", Owner: "owner-" + k,
		LeaseUntil: leaseUntil, ReplayUntil: now.Add(24 * time.Hour), ExpiresAt: now.Add(7 * 24 * time.Hour), CreatedAt: now}
	if res, err := s.Claim(context.Background(), rec, now, idemkit.ClaimOptions{}); err != nil || !res.Won {
		t.Fatalf("claim: %+v %v", res, err)
	}
	return rec
}

func decision(as idemkit.State) idemkit.Resolution {
	res := idemkit.Resolution{As: as, Operator: "ops", Reason: "checked the processor"}
	if as == idemkit.StateCompleted {
		res.Snapshot = &idemkit.Snapshot{Status: 201}
	}
	return res
}

// TestResolveRefusals: Resolve refuses, writing nothing, a record that is
// not there, one already completed or failed, and a decision that is
// neither completed nor failed or completed without an answer.
func TestResolveRefusals(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	later := now.Add(time.Hour)
	s := memstore.New()
	stale := claimAt(t, s, "stale", now, now.Add(time.Minute))
	done := claimAt(t, s, "done", now, now.Add(time.Minute))
	done.State, done.CompletedAt, done.Snapshot = idemkit.StateCompleted, now, &idemkit.Snapshot{Status: 201}
	if err := s.Complete(ctx, done, now); err != nil {
		t.Fatal(err)
	}
	failed := claimAt(t, s, "failed", now, now.Add(time.Minute))
	if _, err := s.MarkIndeterminate(ctx, failed.ID, failed.Owner, later); err != nil {
		t.Fatal(err)
	}
	if _, _, err := idemkit.Resolve(ctx, s, failed.ID, decision(idemkit.StateFailed), later); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		id    string
		res   idemkit.Resolution
		err   error
		state idemkit.State // with a *ResolveError: the record's
	}{
		{"not found", "none", decision(idemkit.StateFailed), idemkit.ErrNotFound, ""},
		{"completed", done.ID, decision(idemkit.StateFailed), idemkit.ErrNotIndeterminate, idemkit.StateCompleted},
		{"failed", failed.ID, decision(idemkit.StateCompleted), idemkit.ErrNotIndeterminate, idemkit.StateFailed},
		{"no decision", stale.ID, idemkit.Resolution{Operator: "ops"}, idemkit.ErrRecordInvalid, ""},
		{"indeterminate is no decision", stale.ID, decision(idemkit.StateIndeterminate), idemkit.ErrRecordInvalid, ""},
		{"completed without an answer", stale.ID, idemkit.Resolution{As: idemkit.StateCompleted, Operator: "ops"}, idemkit.ErrRecordInvalid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := idemkit.Resolve(ctx, s, tc.id, tc.res, later)
			if !errors.Is(err, tc.err) || out != nil {
				t.Fatalf("%+v, %v; want %v", out, err, tc.err)
			}
			var re *idemkit.ResolveError
			if errors.As(err, &re) != (tc.state != "") || (re != nil && re.Record.State != tc.state) {
				t.Fatalf("%v: want a *ResolveError only for a record in state %q", err, tc.state)
			}
		})
	}
	if got, err := s.Get(ctx, stale.ID, later); err != nil || got.State != idemkit.StateInFlight {
		t.Fatalf("stale record after refused decisions: %+v %v, want it in_flight still", got, err)
	}
}
