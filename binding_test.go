package idemkit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/testkit"
)

// endFirstRun leaves the key of r, run first by the fixture's guard, as
// end says: "stale", an in_flight record whose lease has ended (a crashed
// run), or "failed", an outcome-unknown run an operator resolved failed.
func endFirstRun(t *testing.T, f *fixture, r idemkit.Request, accountWide bool, end string) {
	t.Helper()
	ctx := context.Background()
	id := r.Scope.ID(accountWide)
	switch end {
	case "stale":
		now := f.clock.Now()
		rec := &idemkit.Record{ID: id, Scope: r.Scope, State: idemkit.StateInFlight, Fingerprint: r.Fingerprint, Owner: "crashed", Version: "crashed",
			LeaseUntil: now.Add(time.Second), ReplayUntil: now.Add(24 * time.Hour), ExpiresAt: now.Add(7 * 24 * time.Hour), CreatedAt: now}
		if met, err := f.store.Create(ctx, rec); err != nil || met != nil {
			t.Fatalf("claim: %+v %v", met, err)
		}
		f.clock.Advance(2 * time.Second)
	case "failed":
		_, _, err := f.guard.Do(ctx, r, func(context.Context) (*idemkit.Snapshot, error) {
			return nil, fmt.Errorf("provider timed out: %w", idemkit.ErrOutcomeUnknown)
		})
		if !errors.Is(err, idemkit.ErrOutcomeUnknown) {
			t.Fatalf("first run: %v, want ErrOutcomeUnknown", err)
		}
		f.clock.Advance(time.Second)
		f.resolveFailed(t, id, f.clock.Now())
	}
}

// TestKeyBoundToFirstRequest: a key stays bound to its first request's
// fingerprint and, with account-wide keys, operation, through a takeover
// and a failed resolution. Another request with the key (another body,
// another operation) gets the mismatch and does not run; the first
// request's retry then runs, once, and is replayed after.
func TestKeyBoundToFirstRequest(t *testing.T) {
	for _, end := range []string{"stale", "failed"} {
		for _, other := range []struct {
			what        string
			accountWide bool
			change      func(*idemkit.Request)
			want        error
		}{
			{"fingerprint", false, func(r *idemkit.Request) { r.Fingerprint = "v1:sha256:another-body" }, idemkit.ErrFingerprintMismatch},
			{"fingerprint/account-wide", true, func(r *idemkit.Request) { r.Fingerprint = "v1:sha256:another-body" }, idemkit.ErrFingerprintMismatch},
			{"operation/account-wide", true, func(r *idemkit.Request) { r.Scope.Operation = "POST /refunds" }, idemkit.ErrOperationMismatch},
		} {
			t.Run(end+"/"+other.what, func(t *testing.T) {
				f := newFixture(t, func(c *idemkit.Config) {
					c.AccountWide = other.accountWide
					c.Policy.OnStaleLease = idemkit.Takeover
				})
				first := req("k")
				endFirstRun(t, f, first, other.accountWide, end)
				b := first
				other.change(&b)
				for i := 0; i < 2; i++ {
					if _, _, err := f.do(t, b, respond(201, "other")); !errors.Is(err, other.want) {
						t.Fatalf("another request, attempt %d: %v, want %v", i, err, other.want)
					}
				}
				if f.runs != 0 {
					t.Fatalf("the other request ran %d times", f.runs)
				}
				if snap, replayed, err := f.do(t, first, respond(201, "first")); err != nil || replayed || string(snap.Body) != "first" {
					t.Fatalf("the first request's retry: %+v %v %v; want it run", snap, replayed, err)
				}
				if snap, replayed, err := f.do(t, first, respond(201, "again")); err != nil || !replayed || string(snap.Body) != "first" || f.runs != 1 {
					t.Fatalf("then: %+v %v %v runs %d; want the replay of the one run", snap, replayed, err, f.runs)
				}
			})
		}
	}
}

// TestReclaimKeepsStoredFingerprint: a key first claimed with a
// fingerprint of an older version is claimed again (taken over, or after
// a failed resolution) by the same request under the current version,
// which FingerprintAs matches with the stored one: it runs, once, and the
// record keeps the stored fingerprint string, so that the key stays bound
// to the string the store compares.
func TestReclaimKeepsStoredFingerprint(t *testing.T) {
	for _, end := range []string{"stale", "failed"} {
		t.Run(end, func(t *testing.T) {
			f := newFixture(t, func(c *idemkit.Config) { c.Policy.OnStaleLease = idemkit.Takeover })
			old := req("k")
			old.Fingerprint = "v0:sha256:old"
			endFirstRun(t, f, old, false, end)
			cur := req("k") // the same request, fingerprinted under v1
			cur.FingerprintAs = testkit.FingerprintAs("v0", old.Fingerprint)
			if snap, replayed, err := f.do(t, cur, respond(201, "run")); err != nil || replayed || string(snap.Body) != "run" {
				t.Fatalf("the request under v1: %+v %v %v; want it run", snap, replayed, err)
			}
			rec, err := getLive(context.Background(), f.store, cur.Scope.ID(false), f.clock.Now())
			if err != nil || rec.State != idemkit.StateCompleted || rec.Fingerprint != old.Fingerprint {
				t.Fatalf("record %+v, %v; want completed with the stored fingerprint %q", rec, err, old.Fingerprint)
			}
			if _, replayed, err := f.do(t, cur, respond(201, "again")); err != nil || !replayed || f.runs != 1 {
				t.Fatalf("then: %v %v runs %d; want a replay", replayed, err, f.runs)
			}
		})
	}
}
