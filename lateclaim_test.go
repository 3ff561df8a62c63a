package idemkit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
)

// TestLateClaimCopy: the first copy of a request's claim lands late, after
// its run freed the key: after the handler's error released it, and after
// an operator resolved its unknown outcome failed. The copy must be
// refused: applied, it would hold the key for a run nobody makes (409
// until its lease ends; then, under FailClosed, an operator's incident).
// The next request runs, once.
func TestLateClaimCopy(t *testing.T) {
	failing := func(context.Context) (*idemkit.Snapshot, error) { return nil, errors.New("downstream failed") }
	unknown := func(context.Context) (*idemkit.Snapshot, error) {
		return nil, fmt.Errorf("provider timed out: %w", idemkit.ErrOutcomeUnknown)
	}
	resolveFailed := func(t *testing.T, f *fixture) {
		t.Helper()
		f.clock.Advance(time.Second)
		f.resolveFailed(t, req("k").Scope.ID(false), f.clock.Now())
	}
	for _, tc := range []struct {
		name string
		// history runs after the first request, whose claim's first copy
		// is held, ran first.
		first   idemkit.Handler
		history func(t *testing.T, f *fixture)
		state   string // the record's state once the copy landed: a state or "absent"
	}{
		{name: "after-release", first: failing, state: "absent"},
		{name: "after-failed", first: unknown, history: resolveFailed, state: string(idemkit.StateFailed)},
	} {
		for _, pol := range []idemkit.StalePolicy{idemkit.FailClosed, idemkit.Takeover} {
			t.Run(tc.name+"/"+pol.String(), func(t *testing.T) {
				f, fs := faultFixture(t, func(c *idemkit.Config) {
					c.Policy = idemkit.Policy{Lease: 2 * time.Second, OnStaleLease: pol}
				})
				// The first claim is held, not applied, and fails as a
				// timed-out call does, so the guard sends it again; it
				// lands later, as the copy that waited in the network,
				// with the time it was sent with.
				fs.OnOp(faultstore.OpClaim, faultstore.First(1, faultstore.Fault{Err: errReset}))
				if _, _, err := f.do(t, req("k"), tc.first); err == nil {
					t.Fatal("the first run: no error")
				}
				if tc.history != nil {
					tc.history(t, f)
				}
				f.clock.Advance(time.Second)
				held := fs.CallsOp(faultstore.OpClaim)[0]
				if held.Prev != nil {
					t.Fatalf("the first claim replaced %+v: want it created", held.Prev)
				}
				if met, err := f.store.Create(context.Background(), held.Record); err != nil || met == nil {
					t.Fatalf("the late copy of the first claim: met %+v, %v; want refused", met, err)
				}
				state := "absent"
				if rec, err := getLive(context.Background(), f.store, req("k").Scope.ID(false), f.clock.Now()); err == nil {
					state = string(rec.State)
				} else if !errors.Is(err, idemkit.ErrNotFound) {
					t.Fatal(err)
				}
				if state != tc.state {
					t.Fatalf("after the late copy: %s, want %s", state, tc.state)
				}
				before := f.runs
				if snap, replayed, err := f.do(t, req("k"), respond(201, "ok")); err != nil || replayed || string(snap.Body) != "ok" {
					t.Fatalf("the next request: %+v %v %v; want it run", snap, replayed, err)
				}
				if _, replayed, err := f.do(t, req("k"), respond(201, "again")); err != nil || !replayed || f.runs != before+1 {
					t.Fatalf("then: %v %v, %d runs; want a replay of the one run", replayed, err, f.runs-before)
				}
			})
		}
	}
}

// TestClaimByAClockBehind: a key freed by a clock ahead of this
// instance's (a release, a failed resolution) is claimed at once by this
// instance's next request: no time fence stands in its way, since no late
// copy of a claim can take a freed key (a Claim never replaces a stored
// record, and a claim in its place replaces only the version it read).
func TestClaimByAClockBehind(t *testing.T) {
	ahead := 10 * time.Second
	failing := func(context.Context) (*idemkit.Snapshot, error) { return nil, errors.New("downstream failed") }
	unknown := func(context.Context) (*idemkit.Snapshot, error) {
		return nil, fmt.Errorf("provider timed out: %w", idemkit.ErrOutcomeUnknown)
	}
	for _, tc := range []struct {
		name  string
		first idemkit.Handler
		// resolve, when set, resolves the first run failed by the clock ahead.
		resolve bool
	}{
		{name: "release", first: failing},
		{name: "failed-resolution", first: unknown, resolve: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			aheadClock := f.clock.Ahead(ahead)
			a, err := idemkit.New(idemkit.Config{Store: f.store, Clock: aheadClock})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := a.Do(context.Background(), req("k"), tc.first); err == nil {
				t.Fatal("the first run: no error")
			}
			if tc.resolve {
				f.resolveFailed(t, req("k").Scope.ID(false), aheadClock.Now())
			}
			if snap, replayed, err := f.do(t, req("k"), respond(201, "ok")); err != nil || replayed || string(snap.Body) != "ok" || f.runs != 1 {
				t.Fatalf("a claim by a clock %s behind: %+v %v %v, %d runs; want one run", ahead, snap, replayed, err, f.runs)
			}
		})
	}
}
