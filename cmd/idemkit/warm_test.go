package main

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/warmcache"
)

// TestResolveSeenThroughWarmCache: an instance with a warm cache in front
// of the table, whose execution's outcome was lost (the record is
// indeterminate), races an operator's resolve with its late completion.
// Whichever lands first is what every later request replays through the
// warm instance: the cache never holds the loser's answer, and never
// answers with anything the table does not hold.
func TestResolveSeenThroughWarmCache(t *testing.T) {
	f := newFixture(t)
	ownerAnswer := &idemkit.Snapshot{Status: 201, Header: http.Header{"Location": {"/orders/from-owner"}}, Body: []byte(`{"id":"owner"}`)}
	for _, tc := range []struct {
		name     string
		as       []string
		resolved bool   // the operator's resolve lands first
		want     string // Location replayed; "" for a fresh run
	}{
		{"resolve-completed-then-late-completion", []string{"--as", "completed", "--status", "201", "--header", "Location: /orders/by-operator"}, true, "/orders/by-operator"},
		{"resolve-failed-then-late-completion", []string{"--as", "failed"}, true, ""},
		{"late-completion-then-resolve-completed", []string{"--as", "completed", "--status", "201", "--header", "Location: /orders/by-operator"}, false, "/orders/from-owner"},
		{"late-completion-then-resolve-failed", []string{"--as", "failed"}, false, "/orders/from-owner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scopeOf("warm-" + tc.name)
			rec := f.seedIndeterminate(s, time.Now().Add(-time.Hour))
			warm := warmcache.New(f.store, warmcache.Config{})
			g := testguard.New(t, idemkit.Config{Store: warm, Policy: idemkit.Policy{Lease: time.Minute}})
			late := func() error { return lateComplete(t.Context(), warm, rec, ownerAnswer) }
			resolve := func() int {
				code, stdout, stderr := f.run(append(append([]string{"resolve", "--reason", "checked the ledger"}, tc.as...), scopeArgs(s)...)...)
				if code != exitOK && code != exitConflict {
					t.Fatalf("resolve: exit %d\n%s\n%s", code, stdout, stderr)
				}
				return code
			}
			if tc.resolved {
				if code := resolve(); code != exitOK {
					t.Fatalf("resolve first: exit %d, want 0", code)
				}
				if err := late(); !errors.Is(err, idemkit.ErrNotOwner) {
					t.Fatalf("late completion after the resolution: %v, want ErrNotOwner", err)
				}
			} else {
				if err := late(); err != nil {
					t.Fatalf("late completion first: %v", err)
				}
				if code := resolve(); code != exitConflict {
					t.Fatalf("resolve after the late completion: exit %d, want 4", code)
				}
			}
			var runs atomic.Int32
			for i := 0; i < 3; i++ {
				snap, replayed, err := g.Do(t.Context(), request(s), handler(&runs))
				if err != nil {
					t.Fatalf("request %d through the warm instance: %v", i, err)
				}
				switch {
				case tc.want == "" && i == 0:
					if replayed || runs.Load() != 1 {
						t.Fatalf("request %d: replayed %v runs %d, want the fresh run the failed resolution allows", i, replayed, runs.Load())
					}
				case tc.want == "":
					if !replayed || snap.Header.Get("Location") != "/orders/from-handler" || runs.Load() != 1 {
						t.Fatalf("request %d: %+v replayed %v runs %d, want the new run's answer", i, snap, replayed, runs.Load())
					}
				default:
					if !replayed || snap.Header.Get("Location") != tc.want || runs.Load() != 0 {
						t.Fatalf("request %d: %+v replayed %v runs %d, want the replay of %s", i, snap, replayed, runs.Load(), tc.want)
					}
				}
			}
			if st := warm.Stats(); st.Hits == 0 {
				t.Errorf("the warm cache answered none of the requests: %+v", st)
			}
			stored := f.get(s)
			if got, want := stored.Snapshot.Header.Get("Location"), tc.want; want != "" && got != want {
				t.Fatalf("the table holds %s, want %s", got, want)
			}
		})
	}
}
