package idemclient_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/clock"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/idemclient"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
)

// serverClock is an clock.Clock reading a test clock; its timers are
// real (no test here waits for a lease renewal).
type serverClock struct{ *testclock.Clock }

func (c serverClock) AfterFunc(d time.Duration, f func()) clock.Timer { return time.AfterFunc(d, f) }

// api is an idemkit-guarded net/http API over memstore: POST /orders and
// POST /payments answer 201 with a new id, counting the runs of the
// handler, unless handler is set.
type api struct {
	store   idemkit.Store
	policy  idemkit.Policy
	clock   *testclock.Clock
	guard   idemkit.Config // Store, Clock and Policy are filled in
	mw      httpmw.Config  // Tenant defaults to "t1"
	handler http.HandlerFunc

	runs   atomic.Int64
	mu     sync.Mutex
	keys   []string // of every request the guard saw, in order
	bodies []string
}

func (a *api) start(t *testing.T) *httptest.Server {
	t.Helper()
	if a.store == nil {
		a.store = memstore.New()
	}
	if a.clock == nil {
		a.clock = testclock.New()
	}
	cfg := a.guard
	cfg.Store, cfg.Clock, cfg.Policy = a.store, serverClock{a.clock}, a.policy
	if cfg.Observer == nil {
		cfg.Observer = observe.ObserverFunc(func(context.Context, observe.Event) {}) // no log lines of store failures
	}
	g := testguard.New(t, cfg)
	mwc := a.mw
	if mwc.Tenant == nil {
		mwc.Tenant = func(context.Context, *http.Request) (string, error) { return "t1", nil }
	}
	h := a.handler
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			n := a.runs.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Location", fmt.Sprintf("/orders/ord_%d", n))
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"id":"ord_%d"}`, n)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/", httpmw.New(g, mwc)(h))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		a.mu.Lock()
		a.keys = append(a.keys, r.Header.Get("Idempotency-Key"))
		a.bodies = append(a.bodies, string(b))
		a.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	srv.Config.ErrorLog = slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)
	t.Cleanup(srv.Close)
	return srv
}

// seen returns the keys and bodies of the requests the API got.
func (a *api) seen() (keys, bodies []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.keys...), append([]string(nil), a.bodies...)
}

// sleeper is Config.Sleep on a test clock: it records each wait and moves
// the clock by it, at once. hook, when set, runs after.
type sleeper struct {
	clock *testclock.Clock
	hook  func(d time.Duration)

	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	s.clock.Advance(d)
	if s.hook != nil {
		s.hook(d)
	}
	return ctx.Err()
}

func (s *sleeper) recorded() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// newClient returns an http.Client whose Transport is an idemclient
// Transport configured by cfg, on clock (with a sleeper moving it and a
// jitter of one half, unless cfg sets them).
func newClient(t *testing.T, clock *testclock.Clock, cfg idemclient.Config) (*http.Client, *sleeper) {
	t.Helper()
	s := &sleeper{clock: clock}
	if cfg.Now == nil {
		cfg.Now = clock.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = s.Sleep
	}
	if cfg.Rand == nil {
		cfg.Rand = func() float64 { return 0.5 }
	}
	tr, err := idemclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: tr}, s
}

// post sends a JSON POST through c, and reads the whole response.
func post(ctx context.Context, c *http.Client, url, body string) (*http.Response, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// dropFirst is a proxy to backend that, for the first n requests, lets
// the backend handle the request whole and then drops its response: the
// client's connection is closed without an answer (cut: after the headers
// and half the body instead).
type dropFirst struct {
	backend string
	n       int
	cut     bool

	mu      sync.Mutex
	dropped int
}

func (p *dropFirst) start(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out, err := http.NewRequestWithContext(r.Context(), r.Method, p.backend+r.URL.RequestURI(), r.Body)
		if err != nil {
			panic(err)
		}
		out.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		p.mu.Lock()
		drop := p.dropped < p.n
		if drop {
			p.dropped++
		}
		p.mu.Unlock()
		if drop {
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			if p.cut {
				fmt.Fprintf(buf, "HTTP/1.1 %d %s\r\nContent-Length: %d\r\n\r\n", resp.StatusCode, http.StatusText(resp.StatusCode), len(body))
				buf.Write(body[:len(body)/2])
				buf.Flush()
			}
			conn.Close()
			return
		}
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(body)
	}))
	srv.Config.ErrorLog = slog.NewLogLogger(slog.DiscardHandler, slog.LevelError)
	t.Cleanup(srv.Close)
	return srv
}
