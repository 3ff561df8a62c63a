package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/eventlog"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/observe"
)

// TestEngineRace: 200 requests racing one scope through the engine execute
// it once; the others get a conflict or the replay, nothing else.
func TestEngineRace(t *testing.T) {
	dynalite.Require(t, dynalite.AtomicConditionalWrites)
	s, _, _ := newStore(t, dynamo.Options{})
	g := guard(t, s)
	const racers, rounds = 200, 20
	for round := 0; round < rounds; round++ {
		req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /charges", Key: fmt.Sprintf("race-%d", round)}, Fingerprint: "v1:sha256:same"}
		var (
			execs, conflicts, replays atomic.Int32
			wg                        sync.WaitGroup
			start                     = make(chan struct{})
		)
		for i := 0; i < racers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				snap, replayed, err := g.Do(context.Background(), req, okHandler(&execs, "charged"))
				switch {
				case errors.Is(err, idemkit.ErrInFlight):
					conflicts.Add(1)
				case err != nil:
					t.Errorf("round %d: %v", round, err)
				case replayed:
					if string(snap.Body) != "charged" {
						t.Errorf("replayed %q", snap.Body)
					}
					replays.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		if n := execs.Load(); n != 1 {
			t.Fatalf("round %d: the handler ran %d times, want once (%d conflicts, %d replays)", round, n, conflicts.Load(), replays.Load())
		}
		if got := conflicts.Load() + replays.Load(); got != racers-1 {
			t.Fatalf("round %d: %d conflicts and replays, want %d", round, got, racers-1)
		}
	}
}

// TestEngineFencing: a request whose lease was taken over runs to its end,
// but cannot overwrite the new owner's result.
func TestEngineFencing(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	clk := testclock.New()
	obs := &eventlog.Log{}
	g, err := idemkit.New(idemkit.Config{Store: s, Clock: clk, Observer: obs,
		Policy: idemkit.Policy{Lease: 10 * time.Second, OnStaleLease: idemkit.Takeover}})
	if err != nil {
		t.Fatal(err)
	}
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /shipments", Key: "fence-1"}, Fingerprint: "v1:sha256:f"}
	var second atomic.Int32
	first, _, err := g.Do(context.Background(), req, func(ctx context.Context) (*idemkit.Snapshot, error) {
		// The first execution stalls past its lease; another takes over.
		clk.Advance(11 * time.Second)
		snap, replayed, err := g.Do(context.Background(), req, okHandler(&second, "second"))
		if err != nil || replayed || string(snap.Body) != "second" {
			t.Errorf("takeover Do = %v, %v, %v", snap, replayed, err)
		}
		return &idemkit.Snapshot{Status: 201, Body: []byte("first")}, nil
	})
	if err != nil || string(first.Body) != "first" {
		t.Fatalf("first Do = %v, %v; the caller must still get its response", first, err)
	}
	if second.Load() != 1 {
		t.Fatal("the takeover did not execute")
	}
	got, err := s.Get(context.Background(), req.Scope.ID(false))
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Snapshot.Body) != "second" {
		t.Fatalf("stored body %q, want the new owner's", got.Snapshot.Body)
	}
	want := []observe.EventKind{observe.EventTakeover, observe.EventExecuted, observe.EventCompletionFailed}
	if events := obs.Kinds(); fmt.Sprint(events) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", events, want)
	}
}

// TestUsage: the engine sees two round trips for a fresh request (claim,
// complete); a replay is one (the claim, whose failure carries the item)
// on a server with ALL_OLD on condition failure, as on DynamoDB, and two
// (claim, get) on one without, the read costing read units.
func TestUsage(t *testing.T) {
	allOld := dynalite.Has(t, dynalite.AllOldOnConditionFailure)
	replayCalls := 2
	if allOld {
		replayCalls = 1
	}
	s, _, _ := newStore(t, dynamo.Options{})
	g, obs := observed(t, s)
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "usage-1"}, Fingerprint: "v1:sha256:u"}
	var execs atomic.Int32
	for i, want := range []struct {
		kind        observe.EventKind
		calls       int
		read, write bool
	}{
		{observe.EventExecuted, 2, false, true},
		{observe.EventReplayed, replayCalls, !allOld, true},
	} {
		if _, _, err := g.Do(context.Background(), req, okHandler(&execs, "ok")); err != nil {
			t.Fatal(err)
		}
		ev := obs.Last()
		u := ev.Usage
		if ev.Kind != want.kind || u.Calls != want.calls || (u.ReadUnits > 0) != want.read || (u.WriteUnits > 0) != want.write {
			t.Fatalf("request %d: %s with usage %+v, want %s in %d calls (read units %v, write units %v)", i, ev.Kind, u, want.kind, want.calls, want.read, want.write)
		}
	}
}

// TestContextEndsMidHandler: the request's context is cancelled, or its
// deadline (the Lambda's) passes, while the handler runs. The writes made
// after the handler do not use that context: an answer is stored and
// replayed, an error frees the key, ErrOutcomeUnknown keeps it. The
// handler's runs are counted by the handler.
func TestContextEndsMidHandler(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	g := guard(t, s)
	// An ending makes the request's context of attempt n (from 0).
	type ending func(t *testing.T, n int) (ctx context.Context, end func())
	cancelled := func(t *testing.T, _ int) (context.Context, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		return ctx, cancel
	}
	deadline := func(t *testing.T, n int) (context.Context, func()) {
		// The handler waits for the deadline itself: end does nothing.
		// The deadline must leave time for the claim: a loaded server
		// may take longer than the first attempt's 100 ms.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond<<(2*n))
		t.Cleanup(cancel)
		return ctx, func() {}
	}
	for _, end := range []struct {
		name string
		make ending
	}{{"cancelled", cancelled}, {"deadline", deadline}} {
		for _, tc := range []struct {
			name   string
			answer func(ctx context.Context) (*idemkit.Snapshot, error)
			// then is what the retry gets: "replay", "run" or "indeterminate".
			then string
		}{
			{"answers", func(context.Context) (*idemkit.Snapshot, error) {
				return &idemkit.Snapshot{Status: 201, Body: []byte("charged")}, nil
			}, "replay"},
			{"returns the context's error", func(ctx context.Context) (*idemkit.Snapshot, error) {
				return nil, ctx.Err()
			}, "run"},
			{"reports the outcome unknown", func(ctx context.Context) (*idemkit.Snapshot, error) {
				return nil, fmt.Errorf("charge: %w: %w", idemkit.ErrOutcomeUnknown, ctx.Err())
			}, "indeterminate"},
		} {
			t.Run(end.name+"/"+tc.name, func(t *testing.T) {
				var (
					req  idemkit.Request
					runs atomic.Int32
					snap *idemkit.Snapshot
					err  error
				)
				// Until the handler runs before the context ends: a
				// deadline that passed during the claim tests nothing.
				for n := 0; n < 4 && runs.Load() == 0; n++ {
					req = idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /charges", Key: fmt.Sprintf("mid-%s-%s-%d", end.name, tc.name, n)},
						Fingerprint: "v2:sha256:m"}
					ctx, stop := end.make(t, n)
					snap, _, err = g.Do(ctx, req, func(hctx context.Context) (*idemkit.Snapshot, error) {
						runs.Add(1)
						stop()
						<-hctx.Done()
						return tc.answer(hctx)
					})
				}
				if runs.Load() != 1 {
					t.Fatalf("the handler ran %d times before its context ended, want once (last Do: %v)", runs.Load(), err)
				}
				if tc.then == "replay" && (err != nil || string(snap.Body) != "charged") {
					t.Fatalf("first Do: %v, %v; the caller must get its response", snap, err)
				}
				if tc.then != "replay" && err == nil {
					t.Fatalf("first Do: %v, want the handler's error", snap)
				}
				snap, replayed, err := g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
					runs.Add(1)
					return &idemkit.Snapshot{Status: 201, Body: []byte("retry")}, nil
				})
				switch tc.then {
				case "replay":
					if err != nil || !replayed || string(snap.Body) != "charged" {
						t.Fatalf("retry: %v replayed %v err %v, want the replay of the first answer", snap, replayed, err)
					}
					if n := runs.Load(); n != 1 {
						t.Fatalf("the handler ran %d times, want once", n)
					}
				case "run":
					if err != nil || replayed || string(snap.Body) != "retry" {
						t.Fatalf("retry: %v replayed %v err %v, want a run (the key was freed)", snap, replayed, err)
					}
				case "indeterminate":
					if !errors.Is(err, idemkit.ErrIndeterminate) {
						t.Fatalf("retry: %v, want ErrIndeterminate (the key is kept)", err)
					}
					if n := runs.Load(); n != 1 {
						t.Fatalf("the handler ran %d times, want once", n)
					}
				}
			})
		}
	}
}
