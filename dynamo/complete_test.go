package dynamo_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testclock"
)

// TestLeaseRenewalEngine: a request without a deadline renews its lease in
// the table while the handler runs.
func TestLeaseRenewalEngine(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{IndexInFlight: true})
	// The lease outlasts its margin (2 s) by far: a run whose first renewals
	// are slow to land (a JVM server warming up) is not told its lease is lost.
	g, err := idemkit.New(idemkit.Config{Store: s, Policy: idemkit.Policy{Lease: 10 * time.Second, Heartbeat: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "renew-1"}, Fingerprint: "v1:sha256:r"}
	var first, renewed time.Time
	_, _, err = g.Do(context.Background(), req, func(ctx context.Context) (*idemkit.Snapshot, error) {
		stop := time.Now().Add(10 * time.Second)
		for time.Now().Before(stop) {
			rec, err := s.Get(ctx, req.Scope.ID(false), time.Now())
			if err != nil {
				return nil, err
			}
			if first.IsZero() {
				first = rec.LeaseUntil
			}
			if rec.LeaseUntil.After(first) {
				renewed = rec.LeaseUntil
				break
			}
			time.Sleep(10 * time.Millisecond) // poll the table for a renewal
		}
		return &idemkit.Snapshot{Status: 201}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if renewed.IsZero() {
		t.Fatalf("the lease (until %v) was never renewed in the table", first)
	}
}

// TestLateCompletionEngine: on DynamoDB too, the owner's completion after
// a retry marked its record indeterminate heals it, and retries replay.
func TestLateCompletionEngine(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	clk := testclock.New()
	g, err := idemkit.New(idemkit.Config{Store: s, Clock: clk, Policy: idemkit.Policy{Lease: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "late-1"}, Fingerprint: "v1:sha256:l"}
	started, finish := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
			close(started)
			<-finish
			return &idemkit.Snapshot{Status: 201, Body: []byte("first")}, nil
		})
		done <- err
	}()
	<-started
	clk.Advance(2 * time.Minute)
	if _, _, err := g.Do(context.Background(), req, okHandler(new(atomic.Int32), "second")); !errors.Is(err, idemkit.ErrIndeterminate) {
		t.Fatalf("retry after the lease: %v, want ErrIndeterminate", err)
	}
	close(finish)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	snap, replayed, err := g.Do(context.Background(), req, okHandler(new(atomic.Int32), "third"))
	if err != nil || !replayed || string(snap.Body) != "first" {
		t.Fatalf("retry after the late completion: %+v replayed %v err %v", snap, replayed, err)
	}
}

// TestOutcomeUnknownEngine: a handler's ErrOutcomeUnknown leaves an
// indeterminate record in the table at once, listed for operators.
func TestOutcomeUnknownEngine(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	g, err := idemkit.New(idemkit.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "unknown-1"}, Fingerprint: "v1:sha256:u"}
	_, _, err = g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
		return nil, idemkit.ErrOutcomeUnknown
	})
	if !errors.Is(err, idemkit.ErrOutcomeUnknown) {
		t.Fatal(err)
	}
	recs, _, err := s.ListIndeterminate(context.Background(), "acme", "", 10, time.Now())
	if err != nil || len(recs) != 1 || recs[0].ID != req.Scope.ID(false) {
		t.Fatalf("ListIndeterminate: %v %v", recs, err)
	}
	if _, _, err := g.Do(context.Background(), req, okHandler(new(atomic.Int32), "again")); !errors.Is(err, idemkit.ErrIndeterminate) {
		t.Fatalf("retry: %v, want ErrIndeterminate", err)
	}
}
