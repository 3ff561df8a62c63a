package faultstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/faultstore"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/storetest"
)

// A Store without hooks keeps every guarantee of the store it wraps.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) idemkit.OperatorStore { return faultstore.New(memstore.New()) })
}

var errReset = &idemkit.StoreError{Op: "test", Err: errors.New("connection reset")}

func record(now time.Time) *idemkit.Record {
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k"}
	return &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v1:a", Owner: "o1",
		CreatedAt: now, LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(time.Hour)}
}

// TestClaimFaults: what each fault makes of a claim, seen in its answer
// and in what the wrapped store holds afterwards.
func TestClaimFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hook   faultstore.Hook
		err    error
		won    bool
		stored bool
	}{
		{name: "no hook", won: true, stored: true},
		{name: "fails", hook: faultstore.Fail(errReset), err: errReset},
		{name: "fails applied", hook: faultstore.Always(faultstore.Fault{Err: errReset, Applied: true}), err: errReset, stored: true},
		{name: "skipped", hook: faultstore.Always(faultstore.Fault{Skip: true})},
		{name: "first call fails", hook: faultstore.First(1, faultstore.Fault{Err: errReset}), err: errReset},
		{name: "passes after the first", hook: faultstore.First(0, faultstore.Fault{Err: errReset}), won: true, stored: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := faultstore.New(memstore.New())
			fs.On(faultstore.Claim, tc.hook)
			now := time.Now()
			rec := record(now)
			res, err := fs.Claim(context.Background(), rec, now)
			if err != tc.err || res.Won != tc.won || res.Existing != nil {
				t.Fatalf("Claim = %+v, %v; want Won %v, %v", res, err, tc.won, tc.err)
			}
			_, gerr := fs.Inner().Get(context.Background(), rec.ID, now)
			if stored := gerr == nil; stored != tc.stored {
				t.Fatalf("stored %v (%v), want %v", stored, gerr, tc.stored)
			}
		})
	}
}

// TestCallsRecorded: every call is recorded with its number and a copy of
// its arguments, and the hook sees the same; Inner's calls are not.
func TestCallsRecorded(t *testing.T) {
	fs := faultstore.New(memstore.New())
	var seen []int
	fs.On(faultstore.Claim, func(_ context.Context, c faultstore.Call) faultstore.Fault {
		seen = append(seen, c.N)
		return faultstore.Fault{}
	})
	now := time.Now()
	rec := record(now)
	fs.Claim(context.Background(), rec, now)
	rec.Owner = "changed after the call"
	fs.Claim(context.Background(), record(now), now)
	fs.Release(context.Background(), rec.ID, "o1", now)
	fs.Inner().Get(context.Background(), rec.ID, now)
	calls := fs.Calls(faultstore.Claim)
	if len(calls) != 2 || calls[0].N != 1 || calls[1].N != 2 || calls[0].Owner != "o1" || calls[0].Record.Owner != "o1" {
		t.Fatalf("claims recorded %+v", calls)
	}
	if len(seen) != 2 || seen[0] != 1 || seen[1] != 2 {
		t.Fatalf("the hook saw calls %v, want [1 2]", seen)
	}
	if n, m := fs.Count(faultstore.Release), fs.Count(faultstore.Get); n != 1 || m != 0 {
		t.Fatalf("Count: %d releases, %d reads; want 1 and 0", n, m)
	}
	if r := fs.Calls(faultstore.Release); r[0].ID != rec.ID || r[0].Owner != "o1" || !r[0].Now.Equal(now) {
		t.Fatalf("release recorded %+v", r[0])
	}
}

// TestOnNilPasses: a hook set to nil lets the next call pass.
func TestOnNilPasses(t *testing.T) {
	fs := faultstore.New(memstore.New())
	fs.On(faultstore.Get, faultstore.Fail(errReset))
	if _, err := fs.Get(context.Background(), "id", time.Now()); err != errReset {
		t.Fatalf("Get = %v, want the fault", err)
	}
	fs.On(faultstore.Get, nil)
	if _, err := fs.Get(context.Background(), "id", time.Now()); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("Get = %v, want the store's ErrNotFound", err)
	}
}

// TestDelay: a delayed call waits, then passes; one whose ctx ends first
// returns at once with ctx's error, as a store failure, and changes
// nothing.
func TestDelay(t *testing.T) {
	fs := faultstore.New(memstore.New())
	fs.On(faultstore.Claim, faultstore.Always(faultstore.Fault{Delay: 20 * time.Millisecond}))
	now := time.Now()
	start := time.Now()
	if res, err := fs.Claim(context.Background(), record(now), now); err != nil || !res.Won {
		t.Fatalf("delayed Claim = %+v, %v; want won", res, err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("the delayed claim returned after %s", d)
	}

	fs = faultstore.New(memstore.New())
	fs.On(faultstore.Claim, faultstore.Always(faultstore.Fault{Delay: time.Hour}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := fs.Claim(ctx, record(now), now)
	if !errors.Is(err, idemkit.ErrStoreUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Claim on a done ctx = %v, want ErrStoreUnavailable and context.Canceled", err)
	}
	if _, err := fs.Inner().Get(context.Background(), record(now).ID, now); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("a claim that never reached the store is stored: %v", err)
	}
}

// TestThen: Then is called once the call is done, with its error: the
// wrapped store's, or the fault's.
func TestThen(t *testing.T) {
	fs := faultstore.New(memstore.New())
	var got []error
	fs.On(faultstore.Extend, func(_ context.Context, c faultstore.Call) faultstore.Fault {
		f := faultstore.Fault{Then: func(err error) { got = append(got, err) }}
		if c.N == 2 {
			f.Err = errReset
		}
		return f
	})
	now := time.Now()
	for range 2 {
		fs.Extend(context.Background(), "id", "o1", now.Add(time.Minute), now)
	}
	if len(got) != 2 || !errors.Is(got[0], idemkit.ErrNotOwner) || got[1] != errReset {
		t.Fatalf("Then saw %v, want [ErrNotOwner, the fault]", got)
	}
}

// TestHookRunsFirst: what a hook writes to the wrapped store lands before
// the call it was called for.
func TestHookRunsFirst(t *testing.T) {
	fs := faultstore.New(memstore.New())
	now := time.Now()
	rec := record(now)
	other := record(now)
	other.Owner = "o2"
	fs.On(faultstore.Claim, func(ctx context.Context, c faultstore.Call) faultstore.Fault {
		if _, err := fs.Inner().Claim(ctx, other, now); err != nil {
			t.Error(err)
		}
		return faultstore.Fault{}
	})
	res, err := fs.Claim(context.Background(), rec, now)
	if err != nil || res.Won || res.Existing == nil || res.Existing.Owner != "o2" {
		t.Fatalf("Claim = %+v, %v; want lost to the hook's claim", res, err)
	}
}

// notStale is an OperatorStore that is no idemkit.StaleLister.
type notStale struct{ idemkit.OperatorStore }

// TestListStaleUnsupported: over a store that lists no stale leases, the
// Store says so as the contract asks.
func TestListStaleUnsupported(t *testing.T) {
	fs := faultstore.New(notStale{memstore.New()})
	if fs.ListsStale() {
		t.Fatal("ListsStale over a store that is no StaleLister")
	}
	if recs, next, err := fs.ListStale(context.Background(), "", "", 0, time.Now()); !errors.Is(err, errors.ErrUnsupported) || recs != nil || next != "" {
		t.Fatalf("ListStale = %v, %q, %v; want errors.ErrUnsupported", recs, next, err)
	}
	if !faultstore.New(memstore.New()).ListsStale() {
		t.Fatal("ListsStale over a memstore is false")
	}
}

// TestEveryMethodHooked: a hook set on each of Methods fails that method's
// calls, and only them.
func TestEveryMethodHooked(t *testing.T) {
	now := time.Now()
	ctx := context.Background()
	calls := map[faultstore.Method]func(*faultstore.Store) error{
		faultstore.Claim: func(s *faultstore.Store) error {
			_, err := s.Claim(ctx, record(now), now)
			return err
		},
		faultstore.Reclaim: func(s *faultstore.Store) error {
			_, err := s.Reclaim(ctx, record(now), record(now), now)
			return err
		},
		faultstore.Complete: func(s *faultstore.Store) error {
			rec := record(now)
			rec.State, rec.CompletedAt, rec.Snapshot = idemkit.StateCompleted, now, &idemkit.Snapshot{Status: 201}
			return s.Complete(ctx, rec, now)
		},
		faultstore.Release:           func(s *faultstore.Store) error { return s.Release(ctx, "id", "o1", now) },
		faultstore.Extend:            func(s *faultstore.Store) error { return s.Extend(ctx, "id", "o1", now, now) },
		faultstore.MarkUnknown:       func(s *faultstore.Store) error { return s.MarkUnknown(ctx, "id", "o1", now) },
		faultstore.MarkIndeterminate: func(s *faultstore.Store) error { return s.MarkIndeterminate(ctx, "id", "o1", now) },
		faultstore.Get: func(s *faultstore.Store) error {
			_, err := s.Get(ctx, "id", now)
			return err
		},
		faultstore.Resolve: func(s *faultstore.Store) error {
			_, err := s.Resolve(ctx, "id", "o", idemkit.Resolution{As: idemkit.StateFailed}, now)
			return err
		},
		faultstore.ListIndeterminate: func(s *faultstore.Store) error {
			_, _, err := s.ListIndeterminate(ctx, "", "", 0, now)
			return err
		},
		faultstore.ListStale: func(s *faultstore.Store) error {
			_, _, err := s.ListStale(ctx, "", "", 0, now)
			return err
		},
	}
	if len(calls) != len(faultstore.Methods()) {
		t.Fatalf("%d methods tested, Methods has %d", len(calls), len(faultstore.Methods()))
	}
	for _, m := range faultstore.Methods() {
		t.Run(string(m), func(t *testing.T) {
			fs := faultstore.New(memstore.New())
			fs.On(m, faultstore.Fail(errReset))
			for other, call := range calls {
				err := call(fs)
				if hooked := err == errReset; hooked != (other == m) {
					t.Errorf("%s with a hook on %s: %v", other, m, err)
				}
				if n := fs.Count(other); n != 1 {
					t.Errorf("%s counted %d calls, want 1", other, n)
				}
			}
		})
	}
}
