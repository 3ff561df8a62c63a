package apigw_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/eventlog"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/memstore"
)

// captureDefaultLog sends slog.Default to the returned buffer until the
// test ends.
func captureDefaultLog(t *testing.T) *testkit.SyncBuffer {
	var logs testkit.SyncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &logs
}

// env is a guard over a memstore, with a clock and a recorded event log.
type env struct {
	store *memstore.Store
	g     *idemkit.Guard
	clock *testclock.Clock
	eventlog.Log
}

func newEnv(t testing.TB, mod func(*idemkit.Config)) *env {
	t.Helper()
	e := &env{store: memstore.New(), clock: testclock.New()}
	cfg := idemkit.Config{
		Store:    e.store,
		Clock:    e.clock,
		Observer: &e.Log,
	}
	if mod != nil {
		mod(&cfg)
	}
	g := testguard.New(t, cfg)
	e.g = g
	return e
}

// record returns the live record of scope, or nil.
func (e *env) record(t testing.TB, s idemkit.Scope) *idemkit.Record {
	t.Helper()
	r, err := e.store.Get(context.Background(), s.ID(false))
	if errors.Is(err, idemkit.ErrNotFound) || err == nil && (r.State == idemkit.StateReleased || !r.Live(e.clock.Now())) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// problem is an RFC 9457 body with the extension members idemkit uses.
type problem struct {
	Type           string `json:"type"`
	Title          string `json:"title"`
	Status         int    `json:"status"`
	Detail         string `json:"detail"`
	Reason         string `json:"reason"`
	RetryAfter     int    `json:"retryAfter"`
	OriginalStatus int    `json:"originalStatus"`
	Location       string `json:"location"`
	CompletedAt    string `json:"completedAt"`
}

const problemBase = "https://idemkit.dev/problems/"

// checkProblem checks a problem response and returns its body.
func checkProblem(t testing.TB, status int, header map[string]string, body string, wantStatus int, wantType string) problem {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d, want %d (body %s)", status, wantStatus, body)
	}
	if ct := header["Content-Type"]; ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	if h := header["X-Content-Type-Options"]; h != "nosniff" {
		t.Errorf("X-Content-Type-Options %q, want nosniff", h)
	}
	if _, ok := header["Idempotent-Replayed"]; ok {
		t.Errorf("a problem carries Idempotent-Replayed")
	}
	var p problem
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("problem body %q: %v", body, err)
	}
	if p.Type != problemBase+wantType || p.Status != wantStatus || p.Title == "" || p.Detail == "" {
		t.Errorf("problem %+v, want type %s status %d with title and detail", p, problemBase+wantType, wantStatus)
	}
	if ra, ok := header["Retry-After"]; ok {
		n, err := strconv.Atoi(ra)
		if err != nil || n < 1 || n != p.RetryAfter {
			t.Errorf("Retry-After %q (retryAfter %d): want whole seconds >= 1 matching the body", ra, p.RetryAfter)
		}
	}
	return p
}
