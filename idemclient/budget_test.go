package idemclient_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/idemclient"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/memstore"
)

// downStore is a store whose claims all fail unapplied, as when DynamoDB
// throttles: the guard answers 503 store-unavailable with Retry-After. It
// records the time of each claim on clock.
type downStore struct {
	*faultstore.Store
	clock *testclock.Clock

	mu     sync.Mutex
	claims []time.Time
}

func newDownStore(clock *testclock.Clock) *downStore {
	s := &downStore{Store: faultstore.New(memstore.New()), clock: clock}
	s.OnOp(faultstore.OpClaim, func(context.Context, faultstore.Call) faultstore.Fault {
		s.mu.Lock()
		s.claims = append(s.claims, s.clock.Now())
		s.mu.Unlock()
		return faultstore.Fault{Err: fmt.Errorf("%w: throttled", idemkit.ErrStoreUnavailable)}
	})
	return s
}

// unavailable starts an API whose store is down, answering Retry-After
// retryAfter.
func unavailable(t *testing.T, retryAfter time.Duration) (*api, *downStore, string) {
	t.Helper()
	clock := testclock.New()
	store := newDownStore(clock)
	a := &api{store: store, clock: clock, guard: idemkit.Config{ClaimAttempts: 1},
		mw: httpmw.Config{Settings: httpconfig.Settings{StoreRetryAfter: retryAfter}}}
	return a, store, a.start(t).URL
}

// TestBudgetBoundary: the client retries a 503 store-unavailable, waiting
// its Retry-After, while the next attempt starts within Budget of the
// first (one starting exactly at the budget's end included), then gives
// up with a GiveUpError that keeps the key and says until when a retry
// with it is safe.
func TestBudgetBoundary(t *testing.T) {
	for _, tc := range []struct {
		budget   time.Duration
		attempts int
	}{
		{6 * time.Second, 4}, // at 0, 2, 4 and 6 s
		{6*time.Second - time.Millisecond, 3},
		{time.Second, 1},
	} {
		t.Run(tc.budget.String(), func(t *testing.T) {
			_, store, url := unavailable(t, 2*time.Second)
			c, s := newClient(t, store.clock, idemclient.Config{Budget: tc.budget, Retention: time.Hour})
			start := store.clock.Now()
			_, _, err := post(context.Background(), c, url+"/orders", `{}`)
			var ge *idemclient.GiveUpError
			if !errors.As(err, &ge) || !errors.Is(err, idemclient.ErrBudgetSpent) {
				t.Fatalf("err = %v, want a GiveUpError for the budget", err)
			}
			if len(ge.Key) != 36 || ge.Attempts != tc.attempts || ge.Status != 503 || ge.Problem == nil || ge.Problem.Type != httpproblem.TypeStoreUnavailable {
				t.Errorf("GiveUpError %+v, want a UUIDv7 key, %d attempts, last 503 store-unavailable", ge, tc.attempts)
			}
			if !ge.RetryBefore.Equal(start.Add(time.Hour - idemclient.DefaultMargin)) {
				t.Errorf("RetryBefore %s, want the key's time (the start) plus Retention less Margin", ge.RetryBefore)
			}
			if !strings.Contains(err.Error(), "retry with the same key before") {
				t.Errorf("error does not say to keep the key: %v", err)
			}
			store.mu.Lock()
			claims := store.claims
			store.mu.Unlock()
			if len(claims) != tc.attempts {
				t.Fatalf("server saw %d attempts, want %d", len(claims), tc.attempts)
			}
			for i, at := range claims {
				if at.Sub(start) != time.Duration(i)*2*time.Second || at.After(start.Add(tc.budget)) {
					t.Errorf("attempt %d at +%s, want +%ds within the budget", i+1, at.Sub(start), 2*i)
				}
			}
			for _, d := range s.recorded() {
				if d != 2*time.Second {
					t.Errorf("waited %s, want Retry-After 2s", d)
				}
			}
		})
	}
}

// TestRetryAfterPastBudget: a Retry-After the budget left cannot wait is
// not waited: the client gives up at once and says what the server asked.
func TestRetryAfterPastBudget(t *testing.T) {
	_, store, url := unavailable(t, 30*time.Second)
	c, s := newClient(t, store.clock, idemclient.Config{Budget: 10 * time.Second})
	_, _, err := post(context.Background(), c, url+"/orders", `{}`)
	var ge *idemclient.GiveUpError
	if !errors.As(err, &ge) || ge.Attempts != 1 || !errors.Is(err, idemclient.ErrBudgetSpent) {
		t.Fatalf("err = %v, want a GiveUpError after 1 attempt", err)
	}
	if !strings.Contains(err.Error(), "the server asked to wait 30s") {
		t.Errorf("error does not name the Retry-After: %v", err)
	}
	if w := s.recorded(); len(w) != 0 {
		t.Errorf("waited %v", w)
	}
}

// TestMaxAttempts: MaxAttempts bounds the attempts within the budget.
func TestMaxAttempts(t *testing.T) {
	_, store, url := unavailable(t, time.Second)
	c, _ := newClient(t, store.clock, idemclient.Config{MaxAttempts: 2})
	_, _, err := post(context.Background(), c, url+"/orders", `{}`)
	var ge *idemclient.GiveUpError
	if !errors.As(err, &ge) || ge.Attempts != 2 || !errors.Is(err, idemclient.ErrBudgetSpent) {
		t.Fatalf("err = %v, want a GiveUpError after 2 attempts", err)
	}
}

// TestContextEndsRetries: a caller's context cancelled while the client
// waits ends the request with a GiveUpError carrying the context's error.
func TestContextEndsRetries(t *testing.T) {
	_, store, url := unavailable(t, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, s := newClient(t, store.clock, idemclient.Config{})
	s.hook = func(time.Duration) { cancel() }
	_, _, err := post(ctx, c, url+"/orders", `{}`)
	var ge *idemclient.GiveUpError
	if !errors.As(err, &ge) || ge.Attempts != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want a GiveUpError for the cancelled context after 1 attempt", err)
	}
}

// TestNewRefusesBudgetPastRetention: New refuses a Budget that reaches
// past the server's retention less the margin, and other unusable
// settings, with an error naming them.
func TestNewRefusesBudgetPastRetention(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  idemclient.Config
		want string // "" when accepted
		is   error
	}{
		{"zero", idemclient.Config{}, "", nil},
		{"budget at the limit", idemclient.Config{Retention: time.Hour, Margin: time.Minute, Budget: 59 * time.Minute}, "", nil},
		{"budget past the limit", idemclient.Config{Retention: time.Hour, Margin: time.Minute, Budget: 59*time.Minute + time.Nanosecond},
			"Budget 59m0.000000001s is longer than Retention 1h0m0s less Margin 1m0s", idemclient.ErrBudgetTooLong},
		{"default budget past a short retention", idemclient.Config{Retention: 5*time.Minute + 30*time.Second},
			"Budget 1m0s is longer than Retention 5m30s less Margin 5m0s", idemclient.ErrBudgetTooLong},
		{"margin not shorter than retention", idemclient.Config{Retention: time.Minute}, "Margin 5m0s is not shorter than Retention 1m0s", nil},
		{"negative budget", idemclient.Config{Budget: -time.Second}, "Budget -1s is negative", nil},
		{"bad header", idemclient.Config{Header: "Idempotency Key"}, `Header "Idempotency Key" is not an HTTP field name`, nil},
		{"max below base delay", idemclient.Config{BaseDelay: time.Second, MaxDelay: time.Millisecond}, "MaxDelay 1ms is shorter than BaseDelay 1s", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := idemclient.New(tc.cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.want == "":
			case err == nil || !strings.Contains(err.Error(), tc.want):
				t.Fatalf("New: %v, want an error saying %q", err, tc.want)
			case tc.is != nil && !errors.Is(err, tc.is):
				t.Fatalf("New: %v is not %v", err, tc.is)
			}
		})
	}
}

// TestKeyPastRetentionNotSent: a UUIDv7 key whose time is Retention less
// Margin old is not sent: the server may have forgotten its request and
// would run it again. One a millisecond younger is sent. A key that ages
// past it between attempts stops the retries.
func TestKeyPastRetentionNotSent(t *testing.T) {
	const retention = time.Hour
	limit := retention - idemclient.DefaultMargin
	for _, tc := range []struct {
		name     string
		age      time.Duration
		attempts int // the server sees; the store is down
		sent     bool
	}{
		{"at the limit", limit, 0, false},
		{"a millisecond before", limit - time.Millisecond, 1, true},
		{"ages past it while retrying", limit - 3*time.Second, 2, true}, // at -3 s and -1 s
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, store, url := unavailable(t, 2*time.Second)
			c, _ := newClient(t, store.clock, idemclient.Config{Retention: retention})
			key := idemclient.NewKeyAt(store.clock.Now().Add(-tc.age))
			_, _, err := post(idemclient.WithKey(context.Background(), key), c, url+"/orders", `{}`)
			var ge *idemclient.GiveUpError
			if !errors.As(err, &ge) || !errors.Is(err, idemclient.ErrRetentionPassed) {
				t.Fatalf("err = %v, want a GiveUpError for the retention", err)
			}
			store.mu.Lock()
			n := len(store.claims)
			store.mu.Unlock()
			if n != tc.attempts || ge.Attempts != tc.attempts {
				t.Errorf("server saw %d attempts, the error says %d, want %d", n, ge.Attempts, tc.attempts)
			}
			if !tc.sent && !strings.Contains(err.Error(), "not sent") {
				t.Errorf("error does not say the request was not sent: %v", err)
			}
		})
	}
}
