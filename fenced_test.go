package idemkit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/memstore"
)

// writeCounter counts the writes made after a handler ran, by owner.
type writeCounter struct {
	idemkit.Store
	mu                             sync.Mutex
	completes, releases, unknowns  map[string]int
	claims, claimErr, releaseCalls int
	claimFails                     error // returned by every Claim when set
}

func newWriteCounter(s idemkit.Store) *writeCounter {
	return &writeCounter{Store: s, completes: map[string]int{}, releases: map[string]int{}, unknowns: map[string]int{}}
}

func (s *writeCounter) Claim(ctx context.Context, r *idemkit.Record, now time.Time, o idemkit.ClaimOptions) (idemkit.ClaimResult, error) {
	s.mu.Lock()
	s.claims++
	err := s.claimFails
	s.mu.Unlock()
	if err != nil {
		return idemkit.ClaimResult{}, err
	}
	return s.Store.Claim(ctx, r, now, o)
}

func (s *writeCounter) Complete(ctx context.Context, r *idemkit.Record, now time.Time) error {
	s.mu.Lock()
	s.completes[r.Owner]++
	s.mu.Unlock()
	return s.Store.Complete(ctx, r, now)
}

func (s *writeCounter) Release(ctx context.Context, id, owner string, now time.Time) error {
	s.mu.Lock()
	s.releases[owner]++
	s.releaseCalls++
	s.mu.Unlock()
	return s.Store.Release(ctx, id, owner, now)
}

func (s *writeCounter) MarkUnknown(ctx context.Context, id, owner string, now time.Time) (*idemkit.Record, error) {
	s.mu.Lock()
	s.unknowns[owner]++
	s.mu.Unlock()
	return s.Store.MarkUnknown(ctx, id, owner, now)
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
		check  func(t *testing.T, w *writeCounter, err error)
	}{
		{"response", func() (*idemkit.Snapshot, error) { return &idemkit.Snapshot{Status: 201, Body: []byte("first")}, nil },
			func(t *testing.T, w *writeCounter, err error) {
				if err != nil {
					t.Fatalf("Do: %v, want the handler's response", err)
				}
				if n := w.completes["first"]; n != 1 {
					t.Fatalf("%d completions by the taken-over owner, want 1", n)
				}
			}},
		{"error", func() (*idemkit.Snapshot, error) { return nil, errDeclined },
			func(t *testing.T, w *writeCounter, err error) {
				// Joined with the release's refusal, as Do documents.
				if !errors.Is(err, errDeclined) || errors.Is(err, idemkit.ErrStoreUnavailable) {
					t.Fatalf("Do: %v, want the handler's error", err)
				}
				if n := w.releases["first"]; n != 1 {
					t.Fatalf("%d releases by the taken-over owner, want 1", n)
				}
			}},
		{"outcome unknown", func() (*idemkit.Snapshot, error) { return nil, fmt.Errorf("charge: %w", idemkit.ErrOutcomeUnknown) },
			func(t *testing.T, w *writeCounter, err error) {
				if !errors.Is(err, idemkit.ErrOutcomeUnknown) || errors.Is(err, idemkit.ErrNotOwner) || errors.Is(err, idemkit.ErrStoreUnavailable) {
					t.Fatalf("Do: %v, want ErrOutcomeUnknown alone", err)
				}
				if n := w.unknowns["first"]; n != 1 {
					t.Fatalf("%d MarkUnknown calls by the taken-over owner, want 1", n)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWriteCounter(memstore.New())
			tokens := []string{"first", "second"}
			f := newFixture(t, func(c *idemkit.Config) {
				c.Store = w
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
			tc.check(t, w, err)
			got, gerr := w.Store.Get(context.Background(), req("k").Scope.ID(false), f.clock.Now())
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
	w := newWriteCounter(memstore.New())
	f := newFixture(t, func(c *idemkit.Config) { c.Store = w; c.ClaimBackoff = time.Millisecond })
	now := f.clock.Now()
	r := req("k")
	other := &idemkit.Record{ID: r.Scope.ID(false), Scope: r.Scope, State: idemkit.StateInFlight, Fingerprint: r.Fingerprint,
		Owner: "other", LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	if res, err := w.Store.Claim(context.Background(), other, now, idemkit.ClaimOptions{}); err != nil || !res.Won {
		t.Fatalf("claim of the other request: %+v %v", res, err)
	}
	w.claimFails = errReset
	_, _, err := f.do(t, r, respond(201, "x"))
	if !errors.Is(err, idemkit.ErrStoreUnavailable) || errors.Is(err, idemkit.ErrClaimUnknown) || f.runs != 0 {
		t.Fatalf("Do: %v runs %d, want ErrStoreUnavailable without ErrClaimUnknown", err, f.runs)
	}
	if w.releaseCalls != 1 {
		t.Fatalf("%d releases, want 1 (refused: the key is another's)", w.releaseCalls)
	}
	if got, err := w.Store.Get(context.Background(), other.ID, now); err != nil || got.Owner != "other" {
		t.Fatalf("the other request's record: %+v %v", got, err)
	}
}

// TestInvalidRecordIsClaimedOnce: a claim the store refuses as invalid
// (ErrRecordInvalid: nothing was written, and a retry gets the same
// answer) is neither tried again nor released, and Do says so without
// ErrStoreUnavailable.
func TestInvalidRecordIsClaimedOnce(t *testing.T) {
	w := newWriteCounter(memstore.New())
	w.claimFails = fmt.Errorf("test store: item over the size cap: %w", idemkit.ErrRecordInvalid)
	f := newFixture(t, func(c *idemkit.Config) { c.Store = w; c.ClaimBackoff = time.Millisecond })
	_, _, err := f.do(t, req("k"), respond(201, "x"))
	if !errors.Is(err, idemkit.ErrRecordInvalid) || errors.Is(err, idemkit.ErrStoreUnavailable) || f.runs != 0 {
		t.Fatalf("Do: %v runs %d, want ErrRecordInvalid", err, f.runs)
	}
	if w.claims != 1 || w.releaseCalls != 0 {
		t.Fatalf("%d claims and %d releases, want 1 and 0", w.claims, w.releaseCalls)
	}
}
