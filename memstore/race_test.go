package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testclock"
	"github.com/idemkit/idemkit/memstore"
)

// TestMixedRace: many workers claim, renew, complete and release a few
// keys at once, while others read and list them, and scribble on every
// record they get back. At no moment do two workers own a key, a key is
// never claimed again once completed, a write with a token that does not
// own the key changes nothing (ErrNotOwner), and each completed key keeps
// its completer's snapshot. Run it with -race: a record shared between the
// store and a caller is a data race.
func TestMixedRace(t *testing.T) {
	const (
		keys       = 4
		workers    = 16
		iterations = 300
	)
	ctx := context.Background()
	s := memstore.New()
	now := testclock.New().Now()
	var (
		holder    [keys]atomic.Pointer[string] // the worker owning the key
		completer [keys]atomic.Pointer[string] // the worker that completed it
		tokens    atomic.Int64
		stop      = make(chan struct{})
		readers   sync.WaitGroup
	)
	id := func(k int) string { return fmt.Sprintf("tenant-a/POST /orders/key-%d", k) }
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for k := 0; k < keys; k++ {
					if rec, err := s.Get(ctx, id(k), now); err == nil {
						scribble(rec)
					} else if !errors.Is(err, idemkit.ErrNotFound) {
						t.Error(err)
					}
				}
				recs, _, err := s.ListStale(ctx, "", "", 0, now)
				if err != nil || len(recs) != 0 {
					t.Errorf("stale listing %d records, %v: no lease ends in this test", len(recs), err)
				}
			}
		}()
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; i < iterations; i++ {
				k := rnd.IntN(keys)
				token := fmt.Sprintf("owner-%d", tokens.Add(1))
				rec := &idemkit.Record{ID: id(k), Scope: idemkit.Scope{Tenant: "tenant-a"}, State: idemkit.StateInFlight, Owner: token, Fingerprint: "v2:sha256:x",
					LeaseUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
				res, err := s.Claim(ctx, rec, now)
				for err == nil && !res.Won && res.Existing != nil && res.Existing.State == idemkit.StateReleased {
					// A released key is free: claimed in place of its
					// tombstone, as the engine does, until the claim wins
					// or another's record holds the key.
					res, err = s.Reclaim(ctx, rec, res.Existing, now)
				}
				if err != nil {
					t.Error(err)
					return
				}
				if !res.Won {
					blocked(t, s, rec, res.Existing, now)
					continue
				}
				if !holder[k].CompareAndSwap(nil, &token) {
					t.Errorf("key %d claimed by %s while %s owns it", k, token, *holder[k].Load())
					return
				}
				if c := completer[k].Load(); c != nil {
					t.Errorf("key %d claimed by %s after %s completed it", k, token, *c)
				}
				if err := s.Extend(ctx, rec.ID, token, now.Add(90*time.Minute), now); err != nil {
					t.Errorf("owner's renewal: %v", err)
				}
				if got, err := s.Get(ctx, rec.ID, now); err != nil || got.Owner != token || !got.LeaseUntil.Equal(now.Add(90*time.Minute)) {
					t.Errorf("owner reads %+v, %v", got, err)
				}
				if rnd.IntN(10) == 0 {
					done := rec.Clone()
					done.State, done.CompletedAt = idemkit.StateCompleted, now
					done.Snapshot = &idemkit.Snapshot{Status: 201, Header: map[string][]string{"Location": {"/orders/" + token}}, Body: []byte(token)}
					completer[k].Store(&token)
					holder[k].Store(nil)
					if err := s.Complete(ctx, done, now); err != nil {
						t.Errorf("owner's completion: %v", err)
					}
					scribbleSnapshot(done.Snapshot) // the store kept its own copy
					continue
				}
				holder[k].Store(nil) // before the release: a claim can win only after it
				if err := s.Release(ctx, rec.ID, token, now); err != nil {
					t.Errorf("owner's release: %v", err)
				}
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	for k := 0; k < keys; k++ {
		c := completer[k].Load()
		if c == nil {
			continue
		}
		got, err := s.Get(ctx, id(k), now)
		if err != nil || got.State != idemkit.StateCompleted || got.Owner != *c || string(got.Snapshot.Body) != *c ||
			got.Snapshot.Header.Get("Location") != "/orders/"+*c {
			t.Errorf("key %d, completed by %s: %+v %v", k, *c, got, err)
		}
	}
}

// blocked checks a lost claim: the record that blocked it is another's,
// in flight or completed, and every fenced write with the losing token
// changes nothing.
func blocked(t *testing.T, s *memstore.Store, rec, ex *idemkit.Record, now time.Time) {
	t.Helper()
	ctx := context.Background()
	if ex == nil || ex.Owner == rec.Owner || (ex.State != idemkit.StateInFlight && ex.State != idemkit.StateCompleted) {
		t.Errorf("claim lost to %+v", ex)
		return
	}
	scribble(ex)
	if err := s.Extend(ctx, rec.ID, rec.Owner, now.Add(time.Hour), now); !errors.Is(err, idemkit.ErrNotOwner) {
		t.Errorf("renewal by a loser: %v, want ErrNotOwner", err)
	}
	done := rec.Clone()
	done.State, done.CompletedAt = idemkit.StateCompleted, now
	done.Snapshot = &idemkit.Snapshot{Status: 500, Body: []byte("loser")}
	if err := s.Complete(ctx, done, now); !errors.Is(err, idemkit.ErrNotOwner) {
		t.Errorf("completion by a loser: %v, want ErrNotOwner", err)
	}
	if err := s.MarkUnknown(ctx, rec.ID, rec.Owner, now); !errors.Is(err, idemkit.ErrNotOwner) {
		t.Errorf("mark unknown by a loser: %v, want ErrNotOwner", err)
	}
	// The key may have been freed meanwhile (nil); never another's deleted.
	if err := s.Release(ctx, rec.ID, rec.Owner, now); err != nil && !errors.Is(err, idemkit.ErrNotOwner) {
		t.Errorf("release by a loser: %v", err)
	}
}

func scribble(r *idemkit.Record) {
	r.Owner, r.State = "scribbled", idemkit.StateFailed
	scribbleSnapshot(r.Snapshot)
}

func scribbleSnapshot(s *idemkit.Snapshot) {
	if s == nil {
		return
	}
	s.Status = 999
	for i := range s.Body {
		s.Body[i] = 'x'
	}
	for k := range s.Header {
		s.Header[k] = []string{"scribbled"}
	}
}
