package idemclient_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/idemclient"
	"github.com/idemkit/idemkit/internal/testing/testclock"
)

// answering starts a server that answers every request with status, a
// Retry-After of retryAfter(now) unless it is "", and a problem body of
// type typ unless it is ""; it counts the requests.
func answering(t *testing.T, clock *testclock.Clock, status int, typ string, retryAfter func(now time.Time) string) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if ra := retryAfter(clock.Now()); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		if typ == "" {
			w.WriteHeader(status)
			return
		}
		w.Header().Set("Content-Type", httpproblem.ContentType)
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":%q,"status":%d}`, typ, status)
	}))
	srv.Config.ErrorLog = slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

// TestInFlightPollFloor: a 409 in-flight whose Retry-After says the lease
// has already ended (0, a date in the past) never makes the client poll
// without pause: it waits its backoff, shortened by Retry-After to no
// less than PollFloor, so a budget holds a bounded number of polls.
// A 409 outcome-pending (the first request outlived its lease and may
// still complete) is polled alike.
func TestInFlightPollFloor(t *testing.T) {
	for _, tc := range []struct {
		name       string
		typ        string
		retryAfter func(now time.Time) string
	}{
		{"zero", httpproblem.TypeInFlight, func(time.Time) string { return "0" }},
		{"date in the past", httpproblem.TypeInFlight, func(now time.Time) string { return now.Add(-time.Hour).UTC().Format(http.TimeFormat) }},
		{"date now", httpproblem.TypeInFlight, func(now time.Time) string { return now.UTC().Format(http.TimeFormat) }},
		{"outcome pending, zero", httpproblem.TypeOutcomePending, func(time.Time) string { return "0" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := testclock.New()
			url, n := answering(t, clock, http.StatusConflict, tc.typ, tc.retryAfter)
			// MaxAttempts stops a client without a floor, which would
			// otherwise poll at one instant for ever.
			c, s := newClient(t, clock, idemclient.Config{Budget: 10 * time.Second, MaxAttempts: 1000})
			_, _, err := post(context.Background(), c, url, `{}`)
			if !errors.Is(err, idemclient.ErrBudgetSpent) {
				t.Fatalf("err = %v, want the budget spent", err)
			}
			// With the jitter at one half, the backoff is 75 ms, 150 ms,
			// 300 ms, 600 ms, then the floor of a second: 13 attempts in
			// 10 s, the last at 9.125 s.
			waits := s.recorded()
			for i, d := range waits {
				if want := min(75*time.Millisecond<<i, idemclient.PollFloor); d != want {
					t.Errorf("wait %d = %s, want %s (all: %v)", i, d, want, waits)
					break
				}
			}
			if got := n.Load(); got != 13 {
				t.Errorf("%d attempts in 10 s, want 13", got)
			}
		})
	}
}

// TestLargeRetryAfterPastBudget: a 429 or 503 whose Retry-After reaches past
// the budget ends the request at once, however large the number, without
// a retry: a value too large for 32 bits is a long wait, not no wait.
func TestLargeRetryAfterPastBudget(t *testing.T) {
	for _, ra := range []string{"120", "4294967295", "4294967296", "99999999999", "18446744073709551616", "999999999999999999999999"} {
		for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
			t.Run(fmt.Sprint(status, " ", ra), func(t *testing.T) {
				clock := testclock.New()
				url, n := answering(t, clock, status, "", func(time.Time) string { return ra })
				c, s := newClient(t, clock, idemclient.Config{Budget: time.Minute})
				_, _, err := post(context.Background(), c, url, `{}`)
				var ge *idemclient.GiveUpError
				if !errors.As(err, &ge) || !errors.Is(err, idemclient.ErrBudgetSpent) {
					t.Fatalf("err = %v, want a GiveUpError for the budget", err)
				}
				if n.Load() != 1 || ge.Attempts != 1 || len(s.recorded()) != 0 {
					t.Errorf("%d attempts, %d waits, want one attempt and no wait", n.Load(), len(s.recorded()))
				}
			})
		}
	}
}
