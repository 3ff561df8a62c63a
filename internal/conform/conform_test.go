package conform_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/conform"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
)

const concurrency = 4

// api is a guarded POST /items whose handler, for a request carrying
// "slow", waits until every other copy of it got its 409 (counted at the
// outermost layer), so the race overlaps on any machine without a sleep.
type api struct {
	executions atomic.Int64
	conflicts  atomic.Int64
	release    chan struct{}
	once       sync.Once
}

func newAPI(t *testing.T, keyOptional, serialize bool, throttle int) (*api, http.Handler) {
	t.Helper()
	a := &api{release: make(chan struct{})}
	g := testguard.Mem(t)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /items", func(w http.ResponseWriter, r *http.Request) {
		n := a.executions.Add(1)
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		if body["slow"] == true && !serialize {
			select {
			case <-a.release:
			case <-time.After(time.Minute):
				t.Error("the duplicates never all got their 409")
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"id": n})
	})
	mux.HandleFunc("GET /items", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`[]`))
	})
	guard := httpmw.New(g, httpmw.Config{
		Tenant:   func(_ context.Context, r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil },
		Settings: httpconfig.Settings{KeyOptional: keyOptional},
	})(mux)
	var serial sync.Mutex
	slots := make(chan struct{}, max(throttle, 1))
	return a, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if serialize && r.Method == http.MethodPost {
			serial.Lock()
			defer serial.Unlock()
		}
		if throttle > 0 && r.Method == http.MethodPost {
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			default:
				// Past the concurrency: throttled, as API Gateway does.
				w.WriteHeader(http.StatusTooManyRequests)
				if a.conflicts.Add(1) == concurrency-1 {
					a.once.Do(func() { close(a.release) })
				}
				return
			}
		}
		rec := &statusWriter{ResponseWriter: w}
		guard.ServeHTTP(rec, r)
		if rec.status == http.StatusConflict && a.conflicts.Add(1) == concurrency-1 {
			a.once.Do(func() { close(a.release) })
		}
	})
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func verdicts(res *conform.Result) map[string]conform.Check {
	m := map[string]conform.Check{}
	for _, c := range res.Checks {
		m[c.Name] = c
	}
	return m
}

// TestConform: an honest path passes every check; a proxy dropping the
// request's key, or the answer's Idempotent-Replayed and Retry-After,
// fails the checks that see it, naming the direction lost; a handler
// faster than its duplicates makes the race inconclusive, not failed.
func TestConform(t *testing.T) {
	type want map[string]conform.Verdict
	for _, tc := range []struct {
		name                    string
		keyOptional, serialize  bool
		requireKey              bool
		dropRequest, dropAnswer []string
		ok                      bool
		want                    want
		detail                  map[string]string
		maxExecutions           int64
		throttle                int
	}{
		{name: "direct, key required", requireKey: true, ok: true, maxExecutions: 2,
			want: want{"fresh": conform.Pass, "replay": conform.Pass, "quoted-key": conform.Pass, "changed-body": conform.Pass,
				"concurrent-duplicate": conform.Pass, "long-key": conform.Pass, "malformed-key": conform.Pass, "two-keys": conform.Pass,
				"missing-key": conform.Pass, "get-ignores-key": conform.Pass}},
		{name: "honest proxy", keyOptional: true, ok: true, maxExecutions: 2, dropRequest: []string{}, dropAnswer: []string{},
			want: want{"replay": conform.Pass, "concurrent-duplicate": conform.Pass, "missing-key": conform.Skipped, "get-ignores-key": conform.Pass}},
		{name: "proxy drops the request's key, key optional", keyOptional: true, dropRequest: []string{"Idempotency-Key"}, maxExecutions: 2,
			want:   want{"fresh": conform.Pass, "replay": conform.Fail, "concurrent-duplicate": conform.Skipped, "long-key": conform.Skipped},
			detail: map[string]string{"replay": "request header does not reach the guard"}},
		{name: "proxy drops the request's key, key required", dropRequest: []string{"Idempotency-Key"}, maxExecutions: 0,
			want:   want{"fresh": conform.Fail, "changed-body": conform.Skipped},
			detail: map[string]string{"fresh": "request header does not reach the guard"}},
		{name: "proxy drops the answer's headers", dropAnswer: []string{"Idempotent-Replayed", "Retry-After"}, maxExecutions: 2,
			want:   want{"replay": conform.Fail, "concurrent-duplicate": conform.Fail, "changed-body": conform.Pass},
			detail: map[string]string{"replay": "drops the answer's Idempotent-Replayed header", "concurrent-duplicate": "drops the answer's Retry-After header"}},
		{name: "copies past the concurrency throttled", throttle: 1, ok: true, maxExecutions: 2,
			want:   want{"concurrent-duplicate": conform.Inconclusive, "replay": conform.Pass},
			detail: map[string]string{"concurrent-duplicate": "throttled (429"}},
		{name: "handler faster than its duplicates", serialize: true, ok: true, maxExecutions: 2,
			want:   want{"concurrent-duplicate": conform.Inconclusive},
			detail: map[string]string{"concurrent-duplicate": "answered before any duplicate arrived"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, h := newAPI(t, tc.keyOptional, tc.serialize, tc.throttle)
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			base := srv.URL
			if tc.dropRequest != nil || tc.dropAnswer != nil {
				base = testkit.Proxy(t, srv.URL, tc.dropRequest, tc.dropAnswer)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := conform.Run(ctx, conform.Config{URL: base + "/items", Header: http.Header{"X-Tenant": {"alice"}},
				Body: []byte(`{"name":"pen"}`), RaceBody: []byte(`{"name":"pen","slow":true}`), Concurrency: concurrency,
				RequireKey: tc.requireKey, KeyPrefix: "t-"})
			if err != nil {
				t.Fatal(err)
			}
			got := verdicts(res)
			for name, v := range tc.want {
				if got[name].Verdict != v {
					t.Errorf("%s: %s (%s), want %s", name, got[name].Verdict, got[name].Detail, v)
				}
			}
			for name, s := range tc.detail {
				if !strings.Contains(got[name].Detail, s) {
					t.Errorf("%s: detail %q does not say %q", name, got[name].Detail, s)
				}
			}
			if res.OK != tc.ok {
				t.Errorf("OK %v, want %v: %+v", res.OK, tc.ok, res.Checks)
			}
			if len(res.Keys) != 2 || !strings.HasPrefix(res.Keys[0], "t-") || !strings.HasPrefix(res.Keys[1], "t-") {
				t.Errorf("keys %v: want two, with the prefix", res.Keys)
			}
			if tc.dropAnswer != nil && !contains(res.Hops, "Via: 1.1 test-proxy") {
				t.Errorf("hops %v do not name the proxy", res.Hops)
			}
			// The sample and the race executed once each, and nothing else ran
			// under a key (a dropped key makes each request run: those checks
			// are skipped).
			if n := a.executions.Load(); n > tc.maxExecutions {
				t.Errorf("the handler ran %d times, want at most %d", n, tc.maxExecutions)
			}
		})
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// TestConformRefusesConfigurations: what cannot be checked is an error
// before any request is sent.
func TestConformRefusesConfigurations(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sent.Add(1) }))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name string
		cfg  conform.Config
	}{
		{"no URL", conform.Config{Body: []byte(`{}`)}},
		{"no body", conform.Config{URL: srv.URL}},
		{"GET", conform.Config{URL: srv.URL, Method: "GET", Body: []byte(`{}`)}},
		{"one copy", conform.Config{URL: srv.URL, Body: []byte(`{}`), Concurrency: 1}},
		{"prefix too long", conform.Config{URL: srv.URL, Body: []byte(`{}`), KeyPrefix: strings.Repeat("k", 250)}},
		{"prefix with a space", conform.Config{URL: srv.URL, Body: []byte(`{}`), KeyPrefix: "a b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := conform.Run(context.Background(), tc.cfg); err == nil {
				t.Fatal("no error")
			}
		})
	}
	if sent.Load() != 0 {
		t.Errorf("%d requests sent for refused configurations", sent.Load())
	}
}
