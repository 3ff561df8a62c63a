package warmcache_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/warmcache"
)

// milliStore keeps ReplayUntil rounded down to the millisecond, as the
// DynamoDB store does (epoch milliseconds), which the Store contract allows.
type milliStore struct{ idemkit.Store }

func (m milliStore) Create(ctx context.Context, rec *idemkit.Record) (*idemkit.Record, error) {
	return m.Store.Create(ctx, milli(rec))
}

func (m milliStore) Replace(ctx context.Context, rec, prev *idemkit.Record) (*idemkit.Record, error) {
	return m.Store.Replace(ctx, milli(rec), prev)
}

func milli(rec *idemkit.Record) *idemkit.Record {
	c := rec.Clone()
	c.ReplayUntil = time.UnixMilli(c.ReplayUntil.UnixMilli()).UTC()
	return c
}

// TestReplayUntilAtStorePrecision: within the last millisecond of a replay
// window that does not end on a whole millisecond, the store (keeping the
// deadline rounded down) answers "replay window passed"; the cache must
// answer the same, not replay.
func TestReplayUntilAtStorePrecision(t *testing.T) {
	const window = time.Minute
	for _, tc := range []struct {
		name   string
		after  time.Duration // from the start of the first request
		replay bool
	}{
		{"before the rounded deadline", window - 600*time.Microsecond, true},
		{"between the rounded and the exact deadline", window - 300*time.Microsecond, false},
		{"at the exact deadline", window, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testclock.New()
			// The first request starts 0.5 ms into a millisecond, so its
			// ReplayUntil does too.
			clk.Advance(500 * time.Microsecond)
			start := clk.Now()
			pol := idemkit.Policy{ReplayWindow: window, RecordRetention: time.Hour}
			under := milliStore{memstore.New()}
			direct, err := idemkit.New(idemkit.Config{Store: under, Clock: clk, Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			cached, err := idemkit.New(idemkit.Config{Store: warmcache.New(under, warmcache.Config{Clock: clk}), Clock: clk, Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, _, err := cached.Do(ctx, req("k", "v1:a"), respond("x")); err != nil {
				t.Fatal(err)
			}
			clk.Advance(start.Add(tc.after).Sub(clk.Now()))
			for _, g := range []struct {
				name string
				g    *idemkit.Guard
			}{{"store", direct}, {"cache", cached}} {
				_, replayed, err := g.g.Do(ctx, req("k", "v1:a"), mustNotRun(t))
				if tc.replay {
					if err != nil || !replayed {
						t.Errorf("%s: replayed %v, %v; want a replay", g.name, replayed, err)
					}
					continue
				}
				if !errors.Is(err, idemkit.ErrReplayWindowPassed) {
					t.Errorf("%s: replayed %v, %v; want the replay window passed", g.name, replayed, err)
				}
			}
		})
	}
}
