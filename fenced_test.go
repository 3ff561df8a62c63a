package idemkit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/observe"
)

// by counts the calls in cs made by owner.
func by(cs []faultstore.Call, owner string) int {
	n := 0
	for _, c := range cs {
		if c.Owner == owner {
			n++
		}
	}
	return n
}

// TestTakenOverWhileRunning: a handler whose stale lease was taken over
// while it ran (Takeover) ends with one write, refused by the fence, and
// leaves the new owner's result as it is. The refusal (ErrNotOwner) is
// final: it is not tried again, and a kept claim (ErrOutcomeUnknown) that
// is no longer ours is no store failure.
func TestTakenOverWhileRunning(t *testing.T) {
	errDeclined := errors.New("card declined by the processor")
	for _, tc := range []struct {
		name   string
		result func() (*idemkit.Snapshot, error)
		check  func(t *testing.T, fs *faultstore.Store, err error)
	}{
		{"response", func() (*idemkit.Snapshot, error) { return &idemkit.Snapshot{Status: 201, Body: []byte("first")}, nil },
			func(t *testing.T, fs *faultstore.Store, err error) {
				if err != nil {
					t.Fatalf("Do: %v, want the handler's response", err)
				}
				if n := by(fs.CallsOp(faultstore.OpComplete), "first"); n != 1 {
					t.Fatalf("%d completions by the taken-over owner, want 1", n)
				}
			}},
		{"error", func() (*idemkit.Snapshot, error) { return nil, errDeclined },
			func(t *testing.T, fs *faultstore.Store, err error) {
				// Joined with the release's refusal, as Do documents.
				if !errors.Is(err, errDeclined) || errors.Is(err, idemkit.ErrStoreUnavailable) {
					t.Fatalf("Do: %v, want the handler's error", err)
				}
				if n := by(fs.CallsOp(faultstore.OpRelease), "first"); n != 1 {
					t.Fatalf("%d releases by the taken-over owner, want 1", n)
				}
			}},
		{"outcome unknown", func() (*idemkit.Snapshot, error) { return nil, fmt.Errorf("charge: %w", idemkit.ErrOutcomeUnknown) },
			func(t *testing.T, fs *faultstore.Store, err error) {
				if !errors.Is(err, idemkit.ErrOutcomeUnknown) || errors.Is(err, idemkit.ErrNotOwner) || errors.Is(err, idemkit.ErrStoreUnavailable) {
					t.Fatalf("Do: %v, want ErrOutcomeUnknown alone", err)
				}
				if n := by(fs.CallsOp(faultstore.OpMarkUnknown), "first"); n != 1 {
					t.Fatalf("%d marks of the unknown outcome by the taken-over owner, want 1", n)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tokens := []string{"first", "second"}
			f, fs := faultFixture(t, func(c *idemkit.Config) {
				c.Policy = idemkit.Policy{Lease: time.Second, OnStaleLease: idemkit.Takeover}
				c.WriteAttempts = 3
				c.NewToken = func() string { tok := tokens[0]; tokens = tokens[1:]; return tok }
			})
			// A deadline: the lease is not renewed, and ends after 1 s.
			ctx := f.clock.Deadline(t, context.Background(), time.Minute)
			_, _, err := f.guard.Do(ctx, req("k"), func(context.Context) (*idemkit.Snapshot, error) {
				f.clock.Advance(2 * time.Second)
				snap, replayed, err := f.guard.Do(ctx, req("k"), respond(201, "second"))
				if err != nil || replayed || string(snap.Body) != "second" {
					t.Fatalf("takeover: %+v replayed %v err %v", snap, replayed, err)
				}
				return tc.result()
			})
			tc.check(t, fs, err)
			got, gerr := getLive(context.Background(), f.store, req("k").Scope.ID(false), f.clock.Now())
			if gerr != nil || got.Owner != "second" || got.State != idemkit.StateCompleted || string(got.Snapshot.Body) != "second" {
				t.Fatalf("the new owner's result: %+v %v", got, gerr)
			}
		})
	}
}

// TestFailedClaimOverAnothersRecord: when every claim attempt fails and
// the key turns out to be held by another request (the release is
// refused: nothing stored is ours), the error says the store failed, not
// that a claim of ours may be left (ErrClaimUnknown).
func TestFailedClaimOverAnothersRecord(t *testing.T) {
	f, fs := faultFixture(t, nil)
	now := f.clock.Now()
	r := req("k")
	other := &idemkit.Record{ID: r.Scope.ID(false), Scope: r.Scope, State: idemkit.StateInFlight, Fingerprint: r.Fingerprint,
		Owner: "other", Version: "other", LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	if met, err := f.store.Create(context.Background(), other); err != nil || met != nil {
		t.Fatalf("claim of the other request: %+v %v", met, err)
	}
	fs.OnOp(faultstore.OpClaim, faultstore.Fail(errReset))
	_, _, err := f.do(t, r, respond(201, "x"))
	if !errors.Is(err, idemkit.ErrStoreUnavailable) || errors.Is(err, idemkit.ErrClaimUnknown) || f.runs != 0 {
		t.Fatalf("Do: %v runs %d, want ErrStoreUnavailable without ErrClaimUnknown", err, f.runs)
	}
	if n := fs.CountOp(faultstore.OpRelease); n != 0 {
		t.Fatalf("%d releases, want none: the key is another's, read before any write", n)
	}
	if got, err := getLive(context.Background(), f.store, other.ID, now); err != nil || got.Owner != "other" {
		t.Fatalf("the other request's record: %+v %v", got, err)
	}
}

// TestFailedReclaim: a claim in place of a record whose every attempt
// fails is freed like any claim. Over a released key the release leaves
// the request's own tombstone, which no copy of the claim can replace:
// nothing of it can hold the key (ErrStoreUnavailable alone). Over a
// failed record, which a release must not touch, a copy of the claim
// still on its way could replace it: the key may be held until the
// claim's lease ends (ErrClaimUnknown).
func TestFailedReclaim(t *testing.T) {
	unknown := func(context.Context) (*idemkit.Snapshot, error) {
		return nil, fmt.Errorf("processor timed out: %w", idemkit.ErrOutcomeUnknown)
	}
	failing := func(context.Context) (*idemkit.Snapshot, error) { return nil, errors.New("downstream failed") }
	for _, tc := range []struct {
		name      string
		first     idemkit.Handler
		resolve   bool
		mayBeHeld bool
	}{
		{"over a tombstone", failing, false, false},
		{"over a failed record", unknown, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, fs := faultFixture(t, nil)
			r := req("k")
			f.do(t, r, tc.first)
			if tc.resolve {
				f.clock.Advance(idemkit.MaxWriteDelay + 2*time.Minute)
				if _, _, err := idemkit.Resolve(context.Background(), f.store, r.Scope.ID(false), idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops"}, f.clock.Now()); err != nil {
					t.Fatal(err)
				}
			}
			runs := f.runs
			// The claim's Create meets the record; every claim in its
			// place fails.
			reclaims := 0
			fs.OnOp(faultstore.OpClaim, func(_ context.Context, c faultstore.Call) faultstore.Fault {
				if c.Method == faultstore.Create {
					return faultstore.Fault{}
				}
				reclaims++
				return faultstore.Fault{Err: errReset}
			})
			_, _, err := f.do(t, r, respond(201, "x"))
			if !errors.Is(err, idemkit.ErrStoreUnavailable) || errors.Is(err, idemkit.ErrClaimUnknown) != tc.mayBeHeld || f.runs != runs {
				t.Fatalf("Do: %v, runs %d -> %d; want ErrStoreUnavailable, ErrClaimUnknown %v, no run", err, runs, f.runs, tc.mayBeHeld)
			}
			if reclaims != 3 {
				t.Fatalf("%d reclaims, want ClaimAttempts (3)", reclaims)
			}
		})
	}
}

// TestInvalidRecordIsClaimedOnce: a claim the store refuses as invalid
// (ErrRecordInvalid: nothing was written, and a retry gets the same
// answer) is neither tried again nor released, and Do says so without
// ErrStoreUnavailable.
func TestInvalidRecordIsClaimedOnce(t *testing.T) {
	f, fs := faultFixture(t, nil)
	fs.OnOp(faultstore.OpClaim, faultstore.Fail(fmt.Errorf("test store: item over the size cap: %w", idemkit.ErrRecordInvalid)))
	_, _, err := f.do(t, req("k"), respond(201, "x"))
	if !errors.Is(err, idemkit.ErrRecordInvalid) || errors.Is(err, idemkit.ErrStoreUnavailable) || f.runs != 0 {
		t.Fatalf("Do: %v runs %d, want ErrRecordInvalid", err, f.runs)
	}
	if claims, releases := fs.CountOp(faultstore.OpClaim), fs.CountOp(faultstore.OpRelease); claims != 1 || releases != 0 {
		t.Fatalf("%d claims and %d releases, want 1 and 0", claims, releases)
	}
}

// TestExpiredClaimIsNoTakeover: a request after the record of a crashed
// one has expired (its retention passed) finds the key absent: it runs as
// a fresh execution, not a takeover, whatever the store returns as the
// record it replaced.
func TestExpiredClaimIsNoTakeover(t *testing.T) {
	f := newFixture(t, nil)
	crash(t, f, req("k"), time.Second)
	f.clock.Advance(7*24*time.Hour + time.Second)
	f.mustRun(t, req("k"), respond(201, "x"), 1, "after the crashed record expired")
	if ks := f.obs.Kinds(); len(ks) != 1 || ks[0] != observe.EventExecuted {
		t.Fatalf("events %v, want [executed]", ks)
	}
}

// TestRenewalOutlivesCancelledRequest: a handler that goes on after its
// request's context is cancelled (a client hung up) keeps its lease
// renewed: were the renewals to stop with the request, the lease would
// end while the handler runs, and a retry could take the key over and
// run it a second time.
func TestRenewalOutlivesCancelledRequest(t *testing.T) {
	f, fs := faultFixture(t, func(c *idemkit.Config) { c.Policy.Heartbeat = time.Millisecond })
	extended := make(chan struct{}, 1)
	fs.OnOp(faultstore.OpExtend, notify(extended))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, _, err := f.guard.Do(ctx, req("k"), func(context.Context) (*idemkit.Snapshot, error) {
		<-extended
		cancel()
		// Renewals go on: wait for two more (one may have begun before the
		// cancellation).
		for i := 0; i < 2; i++ {
			select {
			case <-extended:
			case <-time.After(10 * time.Second):
				t.Fatal("no renewal after the request's context was cancelled, the handler still running")
			}
		}
		return &idemkit.Snapshot{Status: 201}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
