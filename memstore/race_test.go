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
	"github.com/idemkit/idemkit/internal/testing/testkit/scribble"
	"github.com/idemkit/idemkit/memstore"
)

// TestMixedRace: many guards on one store run, renew, complete and fail
// requests on a few keys at once, while readers get and list the records
// and scribble on every record they get back. At no moment do two runs
// hold a key, a key never runs again once completed, and each completed
// key replays its completer's snapshot. Run it with -race: a record
// shared between the store and a caller is a data race.
func TestMixedRace(t *testing.T) {
	const (
		keys       = 4
		workers    = 16
		iterations = 200
	)
	ctx := context.Background()
	s := memstore.New()
	var (
		holder    [keys]atomic.Pointer[string] // the run holding the key
		completer [keys]atomic.Pointer[string] // the run that completed it
		runs      atomic.Int64
		stop      = make(chan struct{})
		readers   sync.WaitGroup
	)
	req := func(k int) idemkit.Request {
		return idemkit.Request{Scope: idemkit.Scope{Tenant: "tenant-a", Operation: "POST /orders", Key: fmt.Sprintf("key-%d", k)},
			Fingerprint: "v2:sha256:x"}
	}
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
					if rec, err := s.Get(ctx, req(k).Scope.ID(false)); err == nil {
						scribble.Record(rec)
					} else if !errors.Is(err, idemkit.ErrNotFound) {
						t.Error(err)
					}
				}
				recs, _, err := s.ListStale(ctx, "", "", 0, time.Now())
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
			// A short heartbeat: the runs renew their leases while others
			// race them.
			g, err := idemkit.New(idemkit.Config{Store: s, Policy: idemkit.Policy{Lease: time.Hour, Heartbeat: 100 * time.Microsecond, MaxRenewals: 1000}})
			if err != nil {
				t.Error(err)
				return
			}
			rnd := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; i < iterations; i++ {
				k := rnd.IntN(keys)
				token := fmt.Sprintf("run-%d", runs.Add(1))
				complete := rnd.IntN(10) == 0
				snap, replayed, err := g.Do(ctx, req(k), func(context.Context) (*idemkit.Snapshot, error) {
					if !holder[k].CompareAndSwap(nil, &token) {
						t.Errorf("key %d runs %s while %s holds it", k, token, *holder[k].Load())
						return nil, errors.New("double run")
					}
					if c := completer[k].Load(); c != nil {
						t.Errorf("key %d runs %s after %s completed it", k, token, *c)
					}
					time.Sleep(time.Duration(rnd.IntN(300)) * time.Microsecond)
					if complete {
						completer[k].Store(&token)
						holder[k].Store(nil)
						return &idemkit.Snapshot{Status: 201, Header: map[string][]string{"Location": {"/orders/" + token}}, Body: []byte(token)}, nil
					}
					holder[k].Store(nil) // before the release: a claim can win only after it
					return nil, errors.New("declined")
				})
				switch {
				case replayed:
					if c := completer[k].Load(); c == nil || string(snap.Body) != *c {
						t.Errorf("key %d replays %q, completed by %v", k, snap.Body, c)
					}
					scribble.Snapshot(snap) // the store kept its own copy
				case err == nil:
					scribble.Snapshot(snap)
				case errors.Is(err, idemkit.ErrInFlight):
				case err.Error() == "declined":
				default:
					t.Errorf("key %d: %v", k, err)
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
		got, err := s.Get(ctx, req(k).Scope.ID(false))
		if err != nil || got.State != idemkit.StateCompleted || string(got.Snapshot.Body) != *c ||
			got.Snapshot.Header.Get("Location") != "/orders/"+*c {
			t.Errorf("key %d, completed by %s: %+v %v", k, *c, got, err)
		}
	}
}
