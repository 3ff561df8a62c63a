package httpmw_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpmw"
)

// TestReplayHeaderNames pins what docs/DESIGN.md ("Snapshots") says a
// replay keeps of a handler's headers: every allow-listed header with its
// values in order, the status and the body byte for byte, under the
// canonical spelling of its name (Content-Type for a handler's
// content-type), which is what a store keeps; a handler's own spelling
// is not kept.
func TestReplayHeaderNames(t *testing.T) {
	h, _ := setup(t, httpmw.Config{
		Tenant:   func(context.Context, *http.Request) (string, error) { return "acme", nil },
		Settings: httpconfig.Settings{ReplayHeaders: []string{"X-Order-Id"}},
	}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["content-type"] = []string{"application/json; charset=utf-8"}
		w.Header()["x-order-ID"] = []string{"ord_1", "ord_1b"}
		w.Header()["LOCATION"] = []string{"/orders/ord_1"}
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":"ord_1"}`))
	}))
	send := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", "spell-1")
		return serve(h, r)
	}
	first, replay := send(), send()
	if !isReplay(replay) || isReplay(first) {
		t.Fatalf("first replayed %v, second %v", isReplay(first), isReplay(replay))
	}
	if replay.Code != first.Code || replay.Body.String() != first.Body.String() {
		t.Errorf("replay %d %q, first %d %q", replay.Code, replay.Body, first.Code, first.Body)
	}
	for _, n := range []struct{ handler, replayed string }{
		{"content-type", "Content-Type"}, {"x-order-ID", "X-Order-Id"}, {"LOCATION", "Location"},
	} {
		want := first.Header()[n.handler]
		if got := replay.Header()[n.replayed]; len(want) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("replay's %s = %q, the handler's %s = %q", n.replayed, got, n.handler, want)
		}
		if _, ok := replay.Header()[n.handler]; ok {
			t.Errorf("replay keeps the handler's spelling %s: update docs/DESIGN.md", n.handler)
		}
	}
}
