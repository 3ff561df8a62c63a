package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/faultstore"
	"github.com/idemkit/idemkit/internal/testclock"
)

// The histories below run the engine (a Guard, Resolve) on the store: each
// is a contract the engine keeps only with the store's help.

var errReset = &idemkit.StoreError{Op: "claim", Err: errors.New("connection reset")}

// historyRequest returns a request of a scope of its own.
func historyRequest() idemkit.Request {
	n := seq.Add(1)
	return idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /charges", Key: fmt.Sprintf("history-%d", n)},
		Fingerprint: "v1:sha256:same"}
}

func respond(body string) idemkit.Handler {
	return func(context.Context) (*idemkit.Snapshot, error) {
		return &idemkit.Snapshot{Status: 201, Body: []byte(body)}, nil
	}
}

func mustNotRun(t *testing.T) idemkit.Handler {
	return func(context.Context) (*idemkit.Snapshot, error) {
		t.Error("the handler ran")
		return nil, errors.New("ran")
	}
}

// testRefusedClaimNeverHoldsTheKey: request A runs; its duplicate B is
// refused (409), but B's first claim attempt was held in the network (B's
// retry of it met A). A's handler fails and frees the key; B's held copy
// lands then. It must take nothing: A's retry runs at once, not 409 for
// the whole lease and then, under FailClosed, indeterminate on a key on
// which nothing ran.
func testRefusedClaimNeverHoldsTheKey(t *testing.T, s idemkit.OperatorStore) {
	clock := testclock.New()
	fs := faultstore.New(s)
	g, err := idemkit.New(idemkit.Config{Store: fs, Clock: clock, ClaimBackoff: time.Millisecond, Policy: idemkit.Policy{Lease: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := historyRequest()
	var bErr error
	_, _, err = g.Do(ctx, req, func(context.Context) (*idemkit.Snapshot, error) {
		clock.Advance(100 * time.Millisecond)
		fs.On(faultstore.Claim, faultstore.First(2, faultstore.Fault{Err: errReset}))
		_, _, bErr = g.Do(ctx, req, mustNotRun(t))
		fs.On(faultstore.Claim, nil)
		clock.Advance(400 * time.Millisecond)
		return nil, errors.New("downstream failed")
	})
	if err == nil || !errors.Is(bErr, idemkit.ErrInFlight) {
		t.Fatalf("A: %v; B: %v, want B refused in flight", err, bErr)
	}
	held := fs.Calls(faultstore.Claim)[1]
	if res, err := s.Claim(ctx, held.Record, held.Now); err != nil || res.Won {
		t.Fatalf("B's held claim after A's release: %+v, %v; want refused", res, err)
	}
	snap, replayed, err := g.Do(ctx, req, respond("retry ran"))
	if err != nil || replayed || string(snap.Body) != "retry ran" {
		t.Fatalf("A's retry: %+v %v %v; want it run at once", snap, replayed, err)
	}
}

// testDecisionOnTheRunChecked: an operator's decision applies only to the
// run the operator checked. Run O1's outcome is unknown; operator X reads
// it and decides completed; before X's write lands, operator Y resolves
// O1 failed, the retry O2 claims the key and its outcome is unknown too.
// X's decision must not land on O2's record.
func testDecisionOnTheRunChecked(t *testing.T, s idemkit.OperatorStore) {
	clock := testclock.New()
	fs := faultstore.New(s)
	g, err := idemkit.New(idemkit.Config{Store: s, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := historyRequest()
	id := req.Scope.ID(false)
	unknown := func(context.Context) (*idemkit.Snapshot, error) {
		return nil, fmt.Errorf("processor timed out: %w", idemkit.ErrOutcomeUnknown)
	}
	if _, _, err := g.Do(ctx, req, unknown); !errors.Is(err, idemkit.ErrOutcomeUnknown) {
		t.Fatalf("O1: %v, want ErrOutcomeUnknown", err)
	}
	o1 := mustGet(t, s, id, clock.Now())
	clock.Advance(idemkit.MaxWriteDelay + 2*time.Minute)
	var o2 *idemkit.Record
	fs.On(faultstore.Resolve, func(ctx context.Context, c faultstore.Call) faultstore.Fault {
		if c.N != 1 {
			return faultstore.Fault{}
		}
		// Before X's write lands: Y frees the key, O2 runs and ends
		// unknown.
		if _, _, err := idemkit.Resolve(ctx, s, id, idemkit.Resolution{As: idemkit.StateFailed, Operator: "y"}, clock.Now()); err != nil {
			t.Errorf("Y: %v", err)
		}
		if _, _, err := g.Do(ctx, req, unknown); !errors.Is(err, idemkit.ErrOutcomeUnknown) {
			t.Errorf("O2: %v, want ErrOutcomeUnknown", err)
		}
		o2, _ = s.Get(ctx, id, clock.Now())
		return faultstore.Fault{}
	})
	_, _, err = idemkit.Resolve(ctx, fs, id, idemkit.Resolution{As: idemkit.StateCompleted, Operator: "x", Snapshot: sampleSnapshot()}, clock.Now())
	if err == nil {
		t.Fatal("X's decision on O1 was applied after the key ran again")
	}
	if o2 == nil || o2.Owner == o1.Owner {
		t.Fatalf("O2 did not run: %+v", o2)
	}
	if got := mustGet(t, s, id, clock.Now()); got.Owner != o2.Owner || got.State != idemkit.StateIndeterminate || got.Resolution != nil {
		t.Fatalf("O2's record after X's decision: %+v; want O2's, indeterminate, unresolved (X: %v)", got, err)
	}
}

// testLateCompletionAfterPending: a retry that meets a run whose lease ran
// out marks it and is told to come back (ErrOutcomePending, not
// ErrIndeterminate); the run's late completion lands over the mark, and
// the retry replays it.
func testLateCompletionAfterPending(t *testing.T, s idemkit.OperatorStore) {
	clock := testclock.New()
	// A lease shorter than the run, and a deadline so that no renewal
	// runs: the lease ends while the handler still works.
	g, err := idemkit.New(idemkit.Config{Store: s, Clock: clock, Policy: idemkit.Policy{Lease: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	req := historyRequest()
	running, finish := make(chan struct{}), make(chan struct{})
	type result struct {
		snap *idemkit.Snapshot
		err  error
	}
	first := make(chan result, 1)
	go func() {
		snap, _, err := g.Do(ctx, req, func(context.Context) (*idemkit.Snapshot, error) {
			close(running)
			<-finish
			return &idemkit.Snapshot{Status: 201, Body: []byte("charged")}, nil
		})
		first <- result{snap, err}
	}()
	<-running
	clock.Advance(2 * time.Second)
	_, _, err = g.Do(ctx, req, mustNotRun(t))
	var pe *idemkit.PendingError
	if !errors.As(err, &pe) || errors.Is(err, idemkit.ErrIndeterminate) {
		t.Fatalf("retry after the lease: %v, want a *PendingError", err)
	}
	got := mustGet(t, s, req.Scope.ID(false), clock.Now())
	if got.State != idemkit.StateIndeterminate || got.Cause != idemkit.CauseLeaseExpired {
		t.Fatalf("record after the retry: %+v; want indeterminate, cause %q", got, idemkit.CauseLeaseExpired)
	}
	close(finish)
	if r := <-first; r.err != nil || string(r.snap.Body) != "charged" {
		t.Fatalf("first run: %+v", r)
	}
	snap, replayed, err := g.Do(ctx, req, mustNotRun(t))
	if err != nil || !replayed || string(snap.Body) != "charged" {
		t.Fatalf("retry after the late completion: %+v %v %v, want the replay", snap, replayed, err)
	}
}
