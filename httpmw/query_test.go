package httpmw_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
)

// distinctNames returns a raw query of n distinct parameter names without
// values, the shortest query of n pairs that each cost a map entry.
func distinctNames(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(strconv.FormatInt(int64(i), 36))
	}
	return b.String()
}

// TestMiddlewareQueryBound: a guarded request whose query has more than
// httpconfig.MaxQueryParams parameters, counted as net/url counts them, is
// refused with a 414 problem, reported as ErrQueryTooLarge, without
// running the handler (whose r.URL.Query() would see no parameter); one
// at the limit runs. With IgnoreQuery the query is not read, so not
// bounded either.
func TestMiddlewareQueryBound(t *testing.T) {
	atLimit := distinctNames(httpconfig.MaxQueryParams)
	for _, tc := range []struct {
		name, query string
		ignore      bool
		status      int
	}{
		{"at the limit", atLimit, false, 201},
		{"one more", atLimit + "&x", false, 414},
		{"one more, empty", atLimit + "&", false, 414},
		{"only separators", strings.Repeat("&", httpconfig.MaxQueryParams), false, 414},
		{"1 MB of names", distinctNames(182000), false, 414},
		{"over, query ignored", atLimit + "&x", true, 201},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var refused []error
			g, err := idemkit.New(idemkit.Config{Store: memstore.New(), Observer: observe.ObserverFunc(func(_ context.Context, e observe.Event) {
				if e.Kind == observe.EventRefused {
					refused = append(refused, e.Err)
				}
			})})
			if err != nil {
				t.Fatal(err)
			}
			cfg := httpmw.Config{Tenant: tenantOf}
			if tc.ignore {
				cfg.Fingerprint.IgnoreQuery = true
			}
			o := &orders{}
			h := auth(httpmw.New(g, cfg)(o))
			w := serve(h, request(t, func(r *http.Request) { r.URL.RawQuery = tc.query }))
			if tc.status == 201 {
				if w.Code != 201 || o.runs.Load() != 1 {
					t.Fatalf("%d %s, ran %d times; want 201", w.Code, w.Body, o.runs.Load())
				}
				return
			}
			checkProblem(t, w, 414, "query-too-large")
			if o.runs.Load() != 0 {
				t.Errorf("handler ran")
			}
			if len(refused) != 1 || !errors.Is(refused[0], httpconfig.ErrQueryTooLarge) {
				t.Errorf("refusals reported: %v, want ErrQueryTooLarge", refused)
			}
		})
	}
}

// TestMiddlewareQueryMemory: the query costs a guarded request a small
// multiple of its size: at most twice the query more than the same
// request without one, at the limit of short distinct names (it cost 45
// times the query as a map); a 1 MB query over the limit is refused
// before anything is parsed (it cost 42 MB, and was accepted).
func TestMiddlewareQueryMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation budget: not in -short")
	}
	h, _ := setup(t, httpmw.Config{}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(201) }))
	// perRequest returns the bytes one guarded request with this query
	// allocates, after a warm-up; each request has its own key.
	perRequest := func(query string) uint64 {
		const n = 10
		rs := make([]*http.Request, n+1)
		ws := make([]*httptest.ResponseRecorder, n+1)
		for i := range rs {
			rs[i] = request(t, func(r *http.Request) {
				r.URL.RawQuery = query
				r.Header.Set("Idempotency-Key", fmt.Sprintf("order-%d-%d", len(query), i))
			})
			ws[i] = httptest.NewRecorder()
		}
		h.ServeHTTP(ws[n], rs[n])
		_, allocated := testkit.Allocated(func() {
			for i := range n {
				h.ServeHTTP(ws[i], rs[i])
			}
		})
		for _, w := range ws {
			if w.Code != ws[n].Code {
				t.Fatalf("status %d, then %d", ws[n].Code, w.Code)
			}
		}
		return allocated / n
	}
	base := perRequest("")
	for _, tc := range []struct {
		name, query string
		budget      func(n int) uint64
	}{
		{"10,000 names, at the limit", distinctNames(httpconfig.MaxQueryParams), func(n int) uint64 { return base + 2*uint64(n) }},
		{"182,000 names, refused", distinctNames(182000), func(n int) uint64 { return base + uint64(n)/16 }},
	} {
		got := perRequest(tc.query)
		t.Logf("%s: %d-byte query: %d bytes allocated, %d without a query", tc.name, len(tc.query), got, base)
		if budget := tc.budget(len(tc.query)); got > budget {
			t.Errorf("%s: %d bytes allocated for a %d-byte query, budget %d", tc.name, got, len(tc.query), budget)
		}
	}
}
