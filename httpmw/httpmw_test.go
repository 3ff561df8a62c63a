package httpmw_test

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/eventlog"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
)

//go:embed testdata/create-order.http
var createOrder []byte

// request returns the captured create-order request, modified by mod.
func request(t testing.TB, mod func(*http.Request)) *http.Request {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(createOrder)))
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(r)
	}
	return r
}

type tenantKey struct{}

// auth stands for the authentication middleware that runs first: it maps
// a bearer token to a tenant in the context.
func auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		tenant := map[string]string{
			"eyJraWQiOiJrMSIsImFsZyI6IlJTMjU2In0.eyJzdWIiOiJ0ZW5hbnQtYSJ9.c2ln": "tenant-a",
			"token-b": "tenant-b",
		}[tok]
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant)))
	})
}

func tenantOf(_ context.Context, r *http.Request) (string, error) {
	s, _ := r.Context().Value(tenantKey{}).(string)
	return s, nil
}

// orders counts its runs and answers status with a body naming the run.
type orders struct {
	runs   atomic.Int32
	status int
	panic  bool
}

func (o *orders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := o.runs.Add(1)
	if o.panic {
		panic("order service crashed")
	}
	body, _ := io.ReadAll(r.Body)
	tenant, _ := tenantOf(r.Context(), r)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Location", fmt.Sprintf("/orders/ord_%d", n))
	h.Set("X-Order-Id", fmt.Sprintf("ord_%d", n))
	h.Add("Set-Cookie", "seen=1")
	h.Set("Date", "Tue, 10 Mar 2020 05:16:23 GMT")
	h.Set("X-Request-Id", fmt.Sprint("req-", n))
	h.Set("RateLimit-Remaining", "9")
	status := o.status
	if status == 0 {
		status = http.StatusCreated
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"id":"ord_%d","tenant":%q,"request":%s}`, n, tenant, body)
}

func setup(t testing.TB, cfg httpmw.Config, h http.Handler) (http.Handler, *memstore.Store) {
	t.Helper()
	store := memstore.New()
	g := testguard.New(t, idemkit.Config{Store: store})
	if cfg.Tenant == nil {
		cfg.Tenant = tenantOf
	}
	return auth(httpmw.New(g, cfg)(h)), store
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func isReplay(w *httptest.ResponseRecorder) bool {
	return w.Header().Get("Idempotent-Replayed") == "true"
}

func checkProblem(t *testing.T, w *httptest.ResponseRecorder, status int, typ string) map[string]any {
	t.Helper()
	if w.Code != status || w.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%d %s %s, want a %d problem", w.Code, w.Header().Get("Content-Type"), w.Body, status)
	}
	if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options %q, want nosniff", got)
	}
	var p map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if p["type"] != "https://idemkit.dev/problems/"+typ || p["status"] != float64(status) || p["title"] == "" || p["detail"] == "" {
		t.Errorf("problem %v, want type %s", p, typ)
	}
	return p
}

func TestMiddleware(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cfg         httpmw.Config
		o           *orders
		first       func(*http.Request)
		second      func(*http.Request)
		wantRuns    int32
		wantReplay  bool
		wantStatus  int
		wantProblem string
	}{
		{name: "retry replays", o: &orders{}, wantRuns: 1, wantReplay: true, wantStatus: 201},
		{name: "quoted and unquoted keys replay the same record", o: &orders{},
			second:   func(r *http.Request) { r.Header.Set("Idempotency-Key", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`) },
			wantRuns: 1, wantReplay: true, wantStatus: 201},
		{name: "402 decline replayed", o: &orders{status: 402}, wantRuns: 1, wantReplay: true, wantStatus: 402},
		{name: "503 not replayed", o: &orders{status: 503}, wantRuns: 2, wantStatus: 503},
		{name: "429 not replayed", o: &orders{status: 429}, wantRuns: 2, wantStatus: 429},
		{name: "GET passes through", o: &orders{}, first: func(r *http.Request) { r.Method = "GET" }, second: func(r *http.Request) { r.Method = "GET" },
			wantRuns: 2, wantStatus: 201},
		{name: "DELETE passes through", o: &orders{}, first: func(r *http.Request) { r.Method = "DELETE" }, second: func(r *http.Request) { r.Method = "DELETE" },
			wantRuns: 2, wantStatus: 201},
		{name: "other tenant runs again", o: &orders{}, second: func(r *http.Request) { r.Header.Set("Authorization", "Bearer token-b") },
			wantRuns: 2, wantStatus: 201},
		{name: "other path runs again", o: &orders{}, second: func(r *http.Request) { r.URL.Path = "/orders/2/capture" },
			wantRuns: 2, wantStatus: 201},
		{name: "different body", o: &orders{}, second: func(r *http.Request) { setBody(r, `{"amount":1}`) },
			wantRuns: 1, wantStatus: 422, wantProblem: "fingerprint-mismatch"},
		{name: "invalid JSON", o: &orders{}, second: func(r *http.Request) { setBody(r, `{"amount":`) },
			wantRuns: 1, wantStatus: 400, wantProblem: "body-invalid"},
		{name: "body too large", o: &orders{}, cfg: httpmw.Config{MaxBodyBytes: 60},
			second:   func(r *http.Request) { setBody(r, `{"amount":1000,"currency":"eur","customer":"cus_42","note":"x"}`) },
			wantRuns: 1, wantStatus: 413, wantProblem: "body-too-large"},
		{name: "two key values", o: &orders{}, second: func(r *http.Request) { r.Header.Add("Idempotency-Key", "other") },
			wantRuns: 1, wantStatus: 400, wantProblem: "key-invalid"},
		{name: "missing key", o: &orders{}, second: func(r *http.Request) { r.Header.Del("Idempotency-Key") },
			wantRuns: 1, wantStatus: 400, wantProblem: "key-missing"},
		{name: "missing key on optional route", o: &orders{}, cfg: httpmw.Config{Settings: httpconfig.Settings{Routes: map[string]httpconfig.Route{"POST /orders": {KeyOptional: true}}}},
			second: func(r *http.Request) { r.Header.Del("Idempotency-Key") }, wantRuns: 2, wantStatus: 201},
		{name: "unauthenticated caller fails closed", o: &orders{}, second: func(r *http.Request) { r.Header.Del("Authorization") },
			wantRuns: 1, wantStatus: 500, wantProblem: "tenant-missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := setup(t, tc.cfg, tc.o)
			first := serve(h, request(t, tc.first))
			if isReplay(first) || first.Header().Get("Set-Cookie") == "" || first.Header().Get("X-Request-Id") != "req-1" {
				t.Fatalf("fresh response changed: %v", first.Header())
			}
			second := serve(h, request(t, tc.second))
			if n := tc.o.runs.Load(); n != tc.wantRuns {
				t.Errorf("ran %d times, want %d", n, tc.wantRuns)
			}
			if tc.wantProblem != "" {
				checkProblem(t, second, tc.wantStatus, tc.wantProblem)
				return
			}
			if second.Code != tc.wantStatus || isReplay(second) != tc.wantReplay {
				t.Fatalf("second %d replayed=%v, want %d replayed=%v", second.Code, isReplay(second), tc.wantStatus, tc.wantReplay)
			}
			if tc.wantReplay && second.Body.String() != first.Body.String() {
				t.Errorf("replayed body %s, want %s", second.Body, first.Body)
			}
		})
	}
}

func setBody(r *http.Request, s string) {
	r.Body = io.NopCloser(strings.NewReader(s))
	r.ContentLength = int64(len(s))
}

// TestMiddlewareReplayHeaders: replays carry only allow-listed headers.
func TestMiddlewareReplayHeaders(t *testing.T) {
	h, _ := setup(t, httpmw.Config{Settings: httpconfig.Settings{ReplayHeaders: []string{"X-Order-Id"}}}, &orders{})
	serve(h, request(t, nil))
	w := serve(h, request(t, nil))
	w.Header().Del("Content-Length")
	want := "map[Content-Type:[application/json] Idempotent-Replayed:[true] Location:[/orders/ord_1] X-Order-Id:[ord_1]]"
	if got := fmt.Sprint(w.Header()); got != want {
		t.Errorf("replayed headers\n got %s\nwant %s", got, want)
	}
}

// TestMiddlewarePanic: a panic is re-raised and the retry runs.
func TestMiddlewarePanic(t *testing.T) {
	o := &orders{panic: true}
	h, _ := setup(t, httpmw.Config{}, o)
	if testkit.PanicOf(func() { serve(h, request(t, nil)) }) == "" {
		t.Fatal("panic swallowed")
	}
	o.panic = false
	if w := serve(h, request(t, nil)); w.Code != 201 || isReplay(w) || o.runs.Load() != 2 {
		t.Errorf("retry: %d replayed=%v runs=%d", w.Code, isReplay(w), o.runs.Load())
	}
}

// TestMiddlewarePanicAfterOutcomeUnknown: a handler that said its outcome
// is unknown (Fail with ErrOutcomeUnknown) and then panicked keeps its
// key, the panic reaching net/http all the same: a retry never runs it
// again. A panic after Fail with another error frees the key, as any
// panic does.
func TestMiddlewarePanicAfterOutcomeUnknown(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		kept bool
	}{
		{"outcome unknown", fmt.Errorf("charge sent, answer lost: %w", idemkit.ErrOutcomeUnknown), true},
		{"other error", errors.New("downstream refused"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			h, _ := setup(t, httpmw.Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				httpmw.Fail(r.Context(), tc.err)
				panic("crashed after the charge")
			}))
			// serveOrPanic returns the response, or nil when the
			// handler's panic reached the caller.
			serveOrPanic := func() (w *httptest.ResponseRecorder) {
				defer func() {
					if p := recover(); p != nil {
						if p != "crashed after the charge" {
							t.Fatalf("panic %v, want the handler's", p)
						}
						w = nil
					}
				}()
				return serve(h, request(t, nil))
			}
			if w := serveOrPanic(); w != nil {
				t.Fatalf("first request: %d, want the handler's panic", w.Code)
			}
			w := serveOrPanic()
			switch {
			case tc.kept && w == nil:
				t.Fatalf("retry ran the handler again (%d runs)", runs.Load())
			case tc.kept:
				checkProblem(t, w, 409, "indeterminate-operator-required")
			case w != nil:
				t.Fatalf("retry: %d, want the handler run again", w.Code)
			}
			want := int32(2)
			if tc.kept {
				want = 1
			}
			if n := runs.Load(); n != want {
				t.Fatalf("the handler ran %d times, want %d", n, want)
			}
		})
	}
}

// TestMiddlewareConcurrentDuplicate: a duplicate of a running request gets
// 409 with Retry-After at once.
func TestMiddlewareConcurrentDuplicate(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	o := &orders{}
	h, _ := setup(t, httpmw.Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		o.ServeHTTP(w, r)
	}))
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- serve(h, request(t, nil)) }()
	<-entered
	dup := serve(h, request(t, nil))
	p := checkProblem(t, dup, 409, "in-flight")
	if dup.Header().Get("Retry-After") == "" || p["retryAfter"].(float64) < 1 {
		t.Errorf("no Retry-After: %v", dup.Header())
	}
	close(release)
	if first := <-done; first.Code != 201 {
		t.Errorf("first: %d", first.Code)
	}
}

// TestMiddlewareRouteTemplate: wrapping a handler registered on a
// ServeMux scopes by its pattern, and the concrete path is part of the
// fingerprint: a key reused for another resource is a mismatch.
func TestMiddlewareRouteTemplate(t *testing.T) {
	o := &orders{}
	store := memstore.New()
	var ops []string
	g, _ := idemkit.New(idemkit.Config{Store: store, Observer: observe.ObserverFunc(func(_ context.Context, e observe.Event) {
		ops = append(ops, e.Operation)
	})})
	mw := httpmw.New(g, httpmw.Config{Tenant: tenantOf, Settings: httpconfig.Settings{RouteTemplate: true}})
	mux := http.NewServeMux()
	mux.Handle("POST /orders/{id}/capture", mw(o))
	h := auth(mux)
	serve(h, request(t, func(r *http.Request) { r.URL.Path = "/orders/1/capture" }))
	w := serve(h, request(t, func(r *http.Request) { r.URL.Path = "/orders/2/capture" }))
	checkProblem(t, w, 422, "fingerprint-mismatch")
	if w := serve(h, request(t, func(r *http.Request) { r.URL.Path = "/orders/1/capture" })); !isReplay(w) {
		t.Errorf("retry of order 1's capture not replayed: %d", w.Code)
	}
	if ops[0] != "POST /orders/{id}/capture" || ops[1] != ops[0] {
		t.Errorf("operations %q", ops)
	}
}

// TestMiddlewareQuery: the query string is part of the fingerprint by
// default, and can be left out per route.
func TestMiddlewareQuery(t *testing.T) {
	for _, tc := range []struct {
		name   string
		routes map[string]httpconfig.Route
		replay bool
	}{
		{name: "default"},
		{name: "ignored for the route", replay: true,
			routes: map[string]httpconfig.Route{"POST /orders": {Fingerprint: &fingerprint.Options{IgnoreQuery: true}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &orders{}
			g, _ := idemkit.New(idemkit.Config{Store: memstore.New()})
			h := auth(httpmw.New(g, httpmw.Config{Tenant: tenantOf, Settings: httpconfig.Settings{Routes: tc.routes}})(o))
			serve(h, request(t, nil))
			w := serve(h, request(t, func(r *http.Request) { r.URL.RawQuery = "dryRun=true" }))
			if tc.replay {
				if !isReplay(w) {
					t.Errorf("%d, want a replay", w.Code)
				}
				return
			}
			checkProblem(t, w, 422, "fingerprint-mismatch")
		})
	}
}

// TestMiddlewareProblemDetailBounded: a body-invalid problem for a huge
// body echoes at most a bounded fragment of it.
func TestMiddlewareProblemDetailBounded(t *testing.T) {
	name := strings.Repeat("k", 1<<20)
	body := `{"` + name + `":1,"` + name + `":2}`
	o := &orders{}
	h, _ := setup(t, httpmw.Config{}, o)
	w := serve(h, request(t, func(r *http.Request) {
		r.Body = io.NopCloser(strings.NewReader(body))
		r.ContentLength = int64(len(body))
	}))
	p := checkProblem(t, w, 400, "body-invalid")
	if d, _ := p["detail"].(string); len(d) > 400 || w.Body.Len() > 1024 {
		t.Errorf("detail %d bytes, body %d bytes: want a bounded echo", len(d), w.Body.Len())
	}
	if o.runs.Load() != 0 {
		t.Error("handler ran")
	}
}

// TestMiddlewareDecidesBeforeReading: a request that is not guarded
// reaches the handler with its whole body, unread, whatever MaxBodyBytes;
// a guarded one over it gets a 413 and the handler does not run.
func TestMiddlewareDecidesBeforeReading(t *testing.T) {
	const limit = 64
	big := strings.Repeat("x", 4*limit)
	for _, tc := range []struct {
		name   string
		cfg    httpmw.Config
		key    string
		method string
		status int
		runs   int32
	}{
		{"keyless POST on a key-optional route", httpmw.Config{Settings: httpconfig.Settings{Routes: map[string]httpconfig.Route{"POST /orders": {KeyOptional: true}}}}, "", http.MethodPost, 201, 1},
		{"keyless POST with KeyOptional", httpmw.Config{Settings: httpconfig.Settings{KeyOptional: true}}, "", http.MethodPost, 201, 1},
		{"PUT is not guarded", httpmw.Config{}, "order-1", http.MethodPut, 201, 1},
		{"keyed POST on a key-optional route", httpmw.Config{Settings: httpconfig.Settings{KeyOptional: true}}, "order-1", http.MethodPost, 413, 0},
		{"keyed POST", httpmw.Config{}, "order-1", http.MethodPost, 413, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []byte
			o := &orders{}
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, _ = io.ReadAll(r.Body)
				o.ServeHTTP(w, r)
			})
			cfg := tc.cfg
			cfg.MaxBodyBytes = limit
			h, _ := setup(t, cfg, next)
			w := serve(h, request(t, func(r *http.Request) {
				r.Method = tc.method
				r.Header.Del("Idempotency-Key")
				if tc.key != "" {
					r.Header.Set("Idempotency-Key", tc.key)
				}
				r.Body = io.NopCloser(strings.NewReader(big))
				r.ContentLength = int64(len(big))
			}))
			if w.Code != tc.status || o.runs.Load() != tc.runs {
				t.Fatalf("status %d after %d runs, want %d after %d: %s", w.Code, o.runs.Load(), tc.status, tc.runs, w.Body)
			}
			if tc.status == 413 {
				checkProblem(t, w, 413, "body-too-large")
			} else if string(got) != big {
				t.Errorf("handler read %d bytes, want the whole %d-byte body", len(got), len(big))
			}
		})
	}
}

// errReader fails every read.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// TestMiddlewareBodyRefusalsObserved: a 413 and an unreadable body are
// reported to the observer as refusals, with the scope known so far.
func TestMiddlewareBodyRefusalsObserved(t *testing.T) {
	errReset := errors.New("connection reset")
	for _, tc := range []struct {
		name   string
		body   io.Reader
		length int64
		status int
		want   error
	}{
		{"declared too large", strings.NewReader(strings.Repeat("x", 100)), 100, 413, httpmw.ErrBodyTooLarge},
		{"read too large", strings.NewReader(strings.Repeat("x", 100)), -1, 413, httpmw.ErrBodyTooLarge},
		{"unreadable", errReader{errReset}, -1, 400, errReset},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &eventlog.Log{}
			g := testguard.New(t, idemkit.Config{Store: memstore.New(), Observer: obs})
			o := &orders{}
			h := auth(httpmw.New(g, httpmw.Config{Tenant: tenantOf, MaxBodyBytes: 10})(o))
			w := serve(h, request(t, func(r *http.Request) {
				r.Body = io.NopCloser(tc.body)
				r.ContentLength = tc.length
			}))
			typ := "body-too-large"
			if tc.status == 400 {
				typ = "body-invalid"
			}
			checkProblem(t, w, tc.status, typ)
			if evs := obs.Events(); len(evs) != 1 || evs[0].Kind != observe.EventRefused || !errors.Is(evs[0].Err, tc.want) ||
				evs[0].Tenant != "tenant-a" || evs[0].Key == "" || evs[0].Operation == "" {
				t.Errorf("events %+v, want one refusal %v with tenant, operation and key", evs, tc.want)
			}
			if o.runs.Load() != 0 {
				t.Error("handler ran")
			}
		})
	}
}
