package dynamo_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/testclock"
)

// TestLateCompletionEngine: on DynamoDB too, the owner's completion after
// a retry marked its record indeterminate heals it, and retries replay.
func TestLateCompletionEngine(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	clk := testclock.New()
	g := guardWith(t, idemkit.Config{Store: s, Clock: clk, Policy: idemkit.Policy{Lease: time.Minute}})
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
