package memstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/testclock"
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
			rec.Version = "claim"
			if met, err := s.Create(ctx, rec); err != nil || met != nil {
				t.Fatalf("create %s: %+v %v", rec.ID, met, err)
			}
			done := rec.Clone()
			done.State, done.CompletedAt, done.Version = idemkit.StateCompleted, now, "done"
			done.Snapshot = &idemkit.Snapshot{Status: 201, Body: body}
			if met, err := s.Replace(ctx, done, rec); err != nil || met != nil {
				t.Fatalf("replace %s: %+v %v", rec.ID, met, err)
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
	// Dropping never touches a record kept: the last generation's.
	for i := 0; i < perGeneration; i++ {
		if _, err := s.Get(ctx, fmt.Sprintf("g%d-%d", generations-1, i)); err != nil {
			t.Fatalf("live record %d: %v", i, err)
		}
	}
}
