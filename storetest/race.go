package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
)

// race runs write(i) for i in [0, n) from n goroutines released together,
// and returns the indexes of the writes that stored their record and, of
// the others, how many met each Version. An error, or a write that
// neither stored nor met a record, fails the test.
func race(t *testing.T, n int, write func(i int) (*idemkit.Record, error)) (stored []int, seen map[string]int) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  = make(chan error, n)
		start = make(chan struct{})
	)
	seen = map[string]int{}
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			met, err := write(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				errs <- err
			case met == nil:
				stored = append(stored, i)
			default:
				seen[met.Version]++
			}
		}(i)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return stored, seen
}

// checkRace checks that exactly one of n racers stored its record, that
// the store holds it, and that every other racer met it.
func checkRace(t *testing.T, s idemkit.Store, what string, n int, racers []*idemkit.Record, stored []int, seen map[string]int) {
	t.Helper()
	if len(stored) != 1 {
		t.Fatalf("%d of %d %s stored their record, want exactly 1", len(stored), n, what)
	}
	won := racers[stored[0]]
	sameRecord(t, mustGet(t, s, won.ID), won)
	if len(seen) > 1 || seen[won.Version] != n-1 {
		t.Fatalf("the other %s met versions %v, want only the stored %q", what, seen, won.Version)
	}
}

// testRaceCreate: n concurrent Creates of one ID, each its own record:
// exactly one is stored, and every other meets it. A store that checked
// and wrote in two steps would let several claims win, and each would run
// the handler.
func testRaceCreate(t *testing.T, s idemkit.OperatorStore, n int) {
	now := base()
	r := newRecord(now, "")
	racers := make([]*idemkit.Record, n)
	for i := range racers {
		racers[i] = again(r, fmt.Sprintf("owner-%d", i), now)
	}
	stored, seen := race(t, n, func(i int) (*idemkit.Record, error) { return s.Create(context.Background(), racers[i]) })
	checkRace(t, s, "concurrent Creates", n, racers, stored, seen)
}

// testRaceReplace: n concurrent Replaces of one Version (takeovers of one
// stale lease, claims in place of one failed record), each its own
// record: exactly one is stored, and every other meets it.
func testRaceReplace(t *testing.T, s idemkit.OperatorStore, n int) {
	now := base()
	stale := newRecord(now.Add(-time.Minute), "crashed")
	stale.LeaseUntil = now.Add(-time.Second)
	failed := resolved(marked(newRecord(now.Add(-time.Hour), "a"), idemkit.CauseOutcomeUnknown, now.Add(-time.Hour)), idemkit.StateFailed, nil, now)
	for _, old := range []*idemkit.Record{stale, failed} {
		mustCreate(t, s, old)
		prev := mustGet(t, s, old.ID)
		racers := make([]*idemkit.Record, n)
		for i := range racers {
			racers[i] = again(old, fmt.Sprintf("racer-%d", i), now)
		}
		stored, seen := race(t, n, func(i int) (*idemkit.Record, error) { return s.Replace(context.Background(), racers[i], prev) })
		checkRace(t, s, "concurrent Replaces of a "+string(old.State)+" record", n, racers, stored, seen)
	}
}

// testDistinct: concurrent Creates of n distinct IDs all store their
// record.
func testDistinct(t *testing.T, s idemkit.OperatorStore, n int) {
	now := base()
	const workers = 16
	var (
		wg     sync.WaitGroup
		stored atomic.Int64
		errc   = make(chan error, workers)
		jobs   = make(chan int)
	)
	prefix := fmt.Sprintf("bulk-%d-", seq.Add(1))
	rec := func(i int) *idemkit.Record {
		sc := idemkit.Scope{Tenant: "bulk", Operation: "POST /orders", Key: prefix + fmt.Sprint(i)}
		return &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o", Version: fmt.Sprint(i),
			LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				met, err := s.Create(context.Background(), rec(i))
				switch {
				case err != nil:
				case met != nil:
					err = fmt.Errorf("Create of %s met %+v", rec(i).ID, met)
				default:
					stored.Add(1)
					continue
				}
				select {
				case errc <- err:
				default:
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if got := stored.Load(); got != int64(n) {
		t.Fatalf("%d of %d distinct IDs stored, want all", got, n)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		if got := mustGet(t, s, rec(i).ID); got.Version != fmt.Sprint(i) {
			t.Fatalf("record %d holds version %q", i, got.Version)
		}
	}
	if _, err := s.Get(context.Background(), rec(n).ID); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("Get of an ID never stored: %v, want ErrNotFound", err)
	}
}
