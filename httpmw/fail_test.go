package httpmw_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpmw"
)

// TestMiddlewareFail: a handler ending with Fail. An unknown outcome keeps
// the key (the request never runs again); any other failure frees it (a
// retry runs). What the handler wrote is never sent or stored.
func TestMiddlewareFail(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		status    int
		typ       string
		retry     int // status of the retry
		retryType string
		runsAfter int32
	}{
		{"outcome unknown keeps the key", fmt.Errorf("charge: %w", idemkit.ErrOutcomeUnknown), 503, "outcome-unknown", 409, "indeterminate-operator-required", 1},
		{"other failure frees the key", errors.New("charge: card service down"), 500, "handler-failed", 201, "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			var failed atomic.Bool
			h, _ := setup(t, httpmw.Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if runs.Add(1) == 1 {
					w.WriteHeader(201)
					fmt.Fprint(w, `{"partial":true}`)
					failed.Store(httpmw.Fail(r.Context(), tc.err))
					return
				}
				w.WriteHeader(201)
				fmt.Fprint(w, `{"id":"ord_2"}`)
			}))
			w := serve(h, request(t, nil))
			if !failed.Load() {
				t.Fatal("Fail reported false inside a guarded handler")
			}
			checkProblem(t, w, tc.status, tc.typ)
			w = serve(h, request(t, nil))
			if tc.retryType != "" {
				checkProblem(t, w, tc.retry, tc.retryType)
			} else if w.Code != tc.retry || isReplay(w) {
				t.Fatalf("retry: %d replayed=%v, want %d run again", w.Code, isReplay(w), tc.retry)
			}
			if got := runs.Load(); got != tc.runsAfter {
				t.Fatalf("handler ran %d times, want %d", got, tc.runsAfter)
			}
		})
	}
}

func TestFailOutsideGuard(t *testing.T) {
	if httpmw.Fail(context.Background(), errors.New("x")) {
		t.Fatal("Fail outside a guarded request reported true")
	}
}

// TestFailNil: Fail with a nil error reports false and does nothing: it
// neither fails the request nor clears an earlier Fail, so a handler that
// said its outcome is unknown cannot have its key freed by a later call.
func TestFailNil(t *testing.T) {
	var first, second atomic.Bool
	h, _ := setup(t, httpmw.Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first.Store(httpmw.Fail(r.Context(), fmt.Errorf("charge: %w", idemkit.ErrOutcomeUnknown)))
		second.Store(httpmw.Fail(r.Context(), nil))
		w.WriteHeader(201)
	}))
	w := serve(h, request(t, nil))
	if !first.Load() || second.Load() {
		t.Errorf("Fail reported %v, then %v for nil; want true, then false", first.Load(), second.Load())
	}
	checkProblem(t, w, 503, "outcome-unknown")

	var failed atomic.Bool
	h, _ = setup(t, httpmw.Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		failed.Store(httpmw.Fail(r.Context(), nil))
		w.WriteHeader(201)
	}))
	if w := serve(h, request(t, nil)); w.Code != 201 || failed.Load() {
		t.Errorf("Fail(nil) alone: %d, reported %v; want the handler's 201 and false", w.Code, failed.Load())
	}
}
