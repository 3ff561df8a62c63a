package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/faultstore"
	"github.com/idemkit/idemkit/internal/testclock"
)

// TestContextEndsMidHandler: the request's context is cancelled, or its
// deadline (the Lambda's) passes, while the handler runs. The writes made
// after the handler do not use that context: an answer is stored and
// replayed, an error frees the key, ErrOutcomeUnknown keeps it. The
// handler's runs are counted by the handler.
func TestContextEndsMidHandler(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	g, err := idemkit.New(idemkit.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	// An ending makes the request's context of attempt n (from 0).
	type ending func(t *testing.T, n int) (ctx context.Context, end func())
	cancelled := func(t *testing.T, _ int) (context.Context, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		return ctx, cancel
	}
	deadline := func(t *testing.T, n int) (context.Context, func()) {
		// The handler waits for the deadline itself: end does nothing.
		// The deadline must leave time for the claim: a loaded server
		// may take longer than the first attempt's 100 ms.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond<<(2*n))
		t.Cleanup(cancel)
		return ctx, func() {}
	}
	for _, end := range []struct {
		name string
		make ending
	}{{"cancelled", cancelled}, {"deadline", deadline}} {
		for _, tc := range []struct {
			name   string
			answer func(ctx context.Context) (*idemkit.Snapshot, error)
			// then is what the retry gets: "replay", "run" or "indeterminate".
			then string
		}{
			{"answers", func(context.Context) (*idemkit.Snapshot, error) {
				return &idemkit.Snapshot{Status: 201, Body: []byte("charged")}, nil
			}, "replay"},
			{"returns the context's error", func(ctx context.Context) (*idemkit.Snapshot, error) {
				return nil, ctx.Err()
			}, "run"},
			{"reports the outcome unknown", func(ctx context.Context) (*idemkit.Snapshot, error) {
				return nil, fmt.Errorf("charge: %w: %w", idemkit.ErrOutcomeUnknown, ctx.Err())
			}, "indeterminate"},
		} {
			t.Run(end.name+"/"+tc.name, func(t *testing.T) {
				var (
					req  idemkit.Request
					runs atomic.Int32
					snap *idemkit.Snapshot
					err  error
				)
				// Until the handler runs before the context ends: a
				// deadline that passed during the claim tests nothing.
				for n := 0; n < 4 && runs.Load() == 0; n++ {
					req = idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /charges", Key: fmt.Sprintf("mid-%s-%s-%d", end.name, tc.name, n)},
						Fingerprint: "v2:sha256:m"}
					ctx, stop := end.make(t, n)
					snap, _, err = g.Do(ctx, req, func(hctx context.Context) (*idemkit.Snapshot, error) {
						runs.Add(1)
						stop()
						<-hctx.Done()
						return tc.answer(hctx)
					})
				}
				if runs.Load() != 1 {
					t.Fatalf("the handler ran %d times before its context ended, want once (last Do: %v)", runs.Load(), err)
				}
				if tc.then == "replay" && (err != nil || string(snap.Body) != "charged") {
					t.Fatalf("first Do: %v, %v; the caller must get its response", snap, err)
				}
				if tc.then != "replay" && err == nil {
					t.Fatalf("first Do: %v, want the handler's error", snap)
				}
				snap, replayed, err := g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
					runs.Add(1)
					return &idemkit.Snapshot{Status: 201, Body: []byte("retry")}, nil
				})
				switch tc.then {
				case "replay":
					if err != nil || !replayed || string(snap.Body) != "charged" {
						t.Fatalf("retry: %v replayed %v err %v, want the replay of the first answer", snap, replayed, err)
					}
					if n := runs.Load(); n != 1 {
						t.Fatalf("the handler ran %d times, want once", n)
					}
				case "run":
					if err != nil || replayed || string(snap.Body) != "retry" {
						t.Fatalf("retry: %v replayed %v err %v, want a run (the key was freed)", snap, replayed, err)
					}
				case "indeterminate":
					if !errors.Is(err, idemkit.ErrIndeterminate) {
						t.Fatalf("retry: %v, want ErrIndeterminate (the key is kept)", err)
					}
					if n := runs.Load(); n != 1 {
						t.Fatalf("the handler ran %d times, want once", n)
					}
				}
			})
		}
	}
}

// TestClockSkewDuringRenewals: two instances share the table; the second's
// clock is ahead of the first's by more than a lease. The first runs a
// handler without a deadline, renewing its lease; to the second the lease
// has ended, so under FailClosed it marks the record indeterminate instead
// of running the handler. The first's renewals are then refused and stop,
// and its completion (a known outcome) replaces the indeterminate record:
// later requests through either instance replay it. The handler runs once.
func TestClockSkewDuringRenewals(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	// The first instance's renewals are counted: refused, and renewed (a
	// value per successful one, when there is room).
	ec := faultstore.New(s)
	var refused atomic.Int32
	renewed := make(chan struct{}, 1)
	ec.On(faultstore.Extend, faultstore.Always(faultstore.Fault{Then: func(err error) {
		switch {
		case errors.Is(err, idemkit.ErrNotOwner):
			refused.Add(1)
		case err == nil:
			select {
			case renewed <- struct{}{}:
			default:
			}
		}
	}}))
	pol := idemkit.Policy{Lease: 2 * time.Second, Heartbeat: 20 * time.Millisecond}
	a, err := idemkit.New(idemkit.Config{Store: ec, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	b, err := idemkit.New(idemkit.Config{Store: s, Policy: pol, Clock: testclock.Skewed(pol.Lease + time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /shipments", Key: "skew-1"}, Fingerprint: "v2:sha256:k"}
	var runs atomic.Int32
	started, finish := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		snap, _, err := a.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
			runs.Add(1)
			close(started)
			<-finish
			return &idemkit.Snapshot{Status: 201, Body: []byte("shipped")}, nil
		})
		if err == nil && string(snap.Body) != "shipped" {
			err = fmt.Errorf("first caller got %q", snap.Body)
		}
		done <- err
	}()
	<-started
	select {
	case <-renewed:
	case <-time.After(10 * time.Second):
		t.Fatal("no renewal")
	}
	_, _, err = b.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
		runs.Add(1)
		return &idemkit.Snapshot{Status: 201, Body: []byte("again")}, nil
	})
	if !errors.Is(err, idemkit.ErrIndeterminate) {
		t.Fatalf("request seeing the lease ended: %v, want ErrIndeterminate", err)
	}
	// The next renewal is refused; none follows it.
	deadline := time.Now().Add(10 * time.Second)
	for refused.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("renewals of a record marked indeterminate were not refused")
		}
		time.Sleep(5 * time.Millisecond) // poll for the refused renewal
	}
	calls := ec.Count(faultstore.Extend)
	close(finish)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := ec.Count(faultstore.Extend); n != calls {
		t.Errorf("%d renewals after one was refused", n-calls)
	}
	for name, g := range map[string]*idemkit.Guard{"first": a, "second": b} {
		snap, replayed, err := g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
			runs.Add(1)
			return &idemkit.Snapshot{Status: 201, Body: []byte("again")}, nil
		})
		if err != nil || !replayed || string(snap.Body) != "shipped" {
			t.Errorf("retry through the %s instance: %v replayed %v err %v, want the late completion replayed", name, snap, replayed, err)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}
