package idemkit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testclock"
	"github.com/idemkit/idemkit/memstore"
)

// TestLateCompletionAfterPending: a retry that meets a run
// whose lease ran out marks it and is told to come back (ErrOutcomePending,
// not ErrIndeterminate); the run's late completion lands over the mark,
// and the retry replays it.
func TestLateCompletionAfterPending(t *testing.T) {
	s := memstore.New()
	clock := testclock.New()
	// A lease shorter than the run, and a deadline so that no renewal
	// runs: the lease ends while the handler still works.
	g, err := idemkit.New(idemkit.Config{Store: s, Clock: clock, Policy: idemkit.Policy{Lease: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /charges", Key: "late-1"}, Fingerprint: "v1:sha256:same"}
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
	_, _, err = g.Do(ctx, req, func(context.Context) (*idemkit.Snapshot, error) {
		t.Error("the retry ran the handler")
		return nil, errors.New("ran")
	})
	var pe *idemkit.PendingError
	if !errors.As(err, &pe) || errors.Is(err, idemkit.ErrIndeterminate) {
		t.Fatalf("retry after the lease: %v, want a *PendingError", err)
	}
	got, err := s.Get(ctx, req.Scope.ID(false), clock.Now())
	if err != nil || got.State != idemkit.StateIndeterminate || got.Cause != idemkit.CauseLeaseExpired {
		t.Fatalf("record after the retry: %+v, %v; want indeterminate, cause %q", got, err, idemkit.CauseLeaseExpired)
	}
	close(finish)
	if r := <-first; r.err != nil || string(r.snap.Body) != "charged" {
		t.Fatalf("first run: %+v", r)
	}
	snap, replayed, err := g.Do(ctx, req, func(context.Context) (*idemkit.Snapshot, error) {
		t.Error("the retry ran the handler")
		return nil, errors.New("ran")
	})
	if err != nil || !replayed || string(snap.Body) != "charged" {
		t.Fatalf("retry after the late completion: %+v %v %v, want the replay", snap, replayed, err)
	}
}
