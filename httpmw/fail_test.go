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
