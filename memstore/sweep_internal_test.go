package memstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testclock"
)

// TestExpiredRecordsAreDropped: a long-running process (make run, a test
// server) that takes new keys for longer than the record retention holds
// only about the records that are still live, not every record it ever
// stored: memory stays bounded by the live records, whatever has expired.
func TestExpiredRecordsAreDropped(t *testing.T) {
	const (
		perGeneration = 500
		generations   = 10
		retention     = time.Hour
	)
	ctx := context.Background()
	clk := testclock.New()
	s := New()
	body := make([]byte, 1<<10)
	for g := 0; g < generations; g++ {
		for i := 0; i < perGeneration; i++ {
			now := clk.Now()
			rec := &idemkit.Record{ID: fmt.Sprintf("g%d-%d", g, i), Scope: idemkit.Scope{Tenant: "t"}, State: idemkit.StateInFlight, Owner: "o",
				LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(retention), CreatedAt: now}
			if res, err := s.Claim(ctx, rec, now); err != nil || !res.Won {
				t.Fatalf("claim %s: %+v %v", rec.ID, res, err)
			}
			done := rec.Clone()
			done.State, done.CompletedAt = idemkit.StateCompleted, now
			done.Snapshot = &idemkit.Snapshot{Status: 201, Body: body}
			if err := s.Complete(ctx, done, now); err != nil {
				t.Fatal(err)
			}
		}
		// Every record of this generation expires, and is kept no
		// longer, before the next one.
		clk.Advance(retention + idemkit.MaxWriteDelay + time.Second)
	}
	s.mu.Lock()
	held := len(s.recs)
	s.mu.Unlock()
	if limit := 2*perGeneration + minSweep; held > limit {
		t.Fatalf("the store holds %d records after %d generations of %d, each expired before the next: want at most %d", held, generations, perGeneration, limit)
	}
	// Dropping never touches a live record.
	now := clk.Now().Add(-retention - idemkit.MaxWriteDelay) // the last generation, still live
	for i := 0; i < perGeneration; i++ {
		if _, err := s.Get(ctx, fmt.Sprintf("g%d-%d", generations-1, i), now); err != nil {
			t.Fatalf("live record %d: %v", i, err)
		}
	}
}
