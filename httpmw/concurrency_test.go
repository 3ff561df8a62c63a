package httpmw_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/memstore"
)

// renewStore is a memstore, through a faultstore.Store, that reports
// every lease renewal it applies.
type renewStore struct {
	*faultstore.Store
	extended chan time.Time // the lease end each applied renewal set, for a test that listens
	extends  atomic.Int32
}

func newRenewStore() *renewStore {
	s := &renewStore{Store: faultstore.New(memstore.New()), extended: make(chan time.Time)}
	s.OnOp(faultstore.OpExtend, func(ctx context.Context, c faultstore.Call) faultstore.Fault {
		return faultstore.Fault{Then: func(err error) {
			if err != nil {
				return
			}
			s.extends.Add(1)
			select {
			case s.extended <- c.Record.LeaseUntil:
			case <-ctx.Done(): // the renewal was stopped: nobody listens
			}
		}}
	})
	return s
}

// wait returns the lease end the next renewal set, failing the test when
// none comes within a generous bound.
func (s *renewStore) wait(t *testing.T) time.Time {
	t.Helper()
	select {
	case now := <-s.extended:
		return now
	case <-time.After(10 * time.Second):
		t.Fatal("no lease renewal")
		return time.Time{}
	}
}

// probe is a guarded handler behind a real HTTP server, with the guard's
// clock under the test's control.
type probe struct {
	h      http.Handler // the guarded handler, counted
	srv    *httptest.Server
	client *http.Client
	clk    *testclock.Clock
	runs   atomic.Int32
	log    testkit.SyncBuffer // the server's ErrorLog
}

// newProbe serves h, counted, through the middleware with store and pol.
func newProbe(t *testing.T, store idemkit.Store, pol idemkit.Policy, h http.HandlerFunc) *probe {
	t.Helper()
	p := &probe{clk: testclock.New()}
	g := testguard.New(t, idemkit.Config{Store: store, Policy: pol, Clock: p.clk})
	mw := httpmw.New(g, httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return "tenant-a", nil }})
	p.h = mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.runs.Add(1)
		h(w, r)
	}))
	p.restart(t)
	// No connection is reused: a request on a reused connection that
	// breaks would be sent again by the transport (it carries an
	// Idempotency-Key), and the test counts runs.
	p.client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	return p
}

// restart serves the guarded handler from a new server, as a new process
// of the same service would (with the same store).
func (p *probe) restart(t *testing.T) {
	p.srv = httptest.NewUnstartedServer(p.h)
	p.srv.Config.ErrorLog = log.New(&p.log, "", 0)
	p.srv.Start()
	t.Cleanup(p.srv.Close)
}

type answer struct {
	status int
	header http.Header
	body   string
}

// post sends the guarded request with key; err is the transport's.
func (p *probe) post(ctx context.Context, key string) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.srv.URL+"/orders", strings.NewReader(`{"amount":1000}`))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := p.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}, err
}

// posted is what post returned.
type posted struct {
	a   answer
	err error
}

// postAsync posts key in the background; the channel gets what post
// returned.
func (p *probe) postAsync(ctx context.Context, key string) <-chan posted {
	c := make(chan posted, 1)
	go func() {
		a, err := p.post(ctx, key)
		c <- posted{a, err}
	}()
	return c
}

func (p *probe) mustPost(t *testing.T, key string) answer {
	t.Helper()
	a, err := p.post(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// inFlight checks that a is a 409 in-flight problem whose Retry-After, in
// the header and the body, is seconds: the lease left rounded up to whole
// seconds, at least 1, so that a client coming back then finds the lease
// ended or renewed.
// postWhileInFlight posts key until the answer is not 409 in-flight (each
// 409 checked to say retry in seconds), or for at most 10 s, and returns
// the last answer.
func (p *probe) postWhileInFlight(t *testing.T, key string, seconds int) answer {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		a := p.mustPost(t, key)
		if a.status != http.StatusConflict || time.Now().After(deadline) {
			return a
		}
		inFlight(t, a, seconds)
		time.Sleep(time.Millisecond)
	}
}

func inFlight(t *testing.T, a answer, seconds int) {
	t.Helper()
	if a.status != http.StatusConflict || a.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%d %s %s, want a 409 in-flight problem", a.status, a.header.Get("Content-Type"), a.body)
	}
	var pd struct {
		Type       string `json:"type"`
		RetryAfter int    `json:"retryAfter"`
	}
	if err := json.Unmarshal([]byte(a.body), &pd); err != nil {
		t.Fatal(err)
	}
	ra, err := strconv.Atoi(a.header.Get("Retry-After"))
	if pd.Type != "https://idemkit.dev/problems/in-flight" || err != nil || ra != seconds || pd.RetryAfter != ra {
		t.Fatalf("problem %s with Retry-After %q, want in-flight with %d seconds", a.body, a.header.Get("Retry-After"), seconds)
	}
	if a.header.Get("Idempotent-Replayed") != "" {
		t.Fatal("a 409 marked as a replay")
	}
}

// renewalRunning reports whether a lease renewal goroutine exists.
func renewalRunning() bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Contains(buf[:n], []byte("idemkit.(*renewal).run"))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// noRenewalLeft fails the test when a renewal goroutine is still there
// once the goroutines that were ending have ended.
func noRenewalLeft(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); renewalRunning(); {
		if time.Now().After(deadline) {
			t.Fatal("a lease renewal goroutine outlived its request")
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// TestMiddlewareConcurrentIdenticalRequests: of N identical requests sent
// at once over HTTP, one runs the handler; every other gets 409 in-flight
// at once with a Retry-After of the lease left (30 s without a deadline,
// the guard's clock standing still), and its retry after completion is the first response,
// replayed.
func TestMiddlewareConcurrentIdenticalRequests(t *testing.T) {
	const n = 16
	entered, release := make(chan struct{}), make(chan struct{})
	p := newProbe(t, memstore.New(), idemkit.Policy{}, func(w http.ResponseWriter, r *http.Request) {
		close(entered) // a second run would panic here
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"ord_1"}`)
	})
	answers := make(chan answer, n)
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			a, err := p.post(context.Background(), "order-1")
			if err != nil {
				errs <- err
				return
			}
			answers <- a
		}()
	}
	// The handler holds the key until every other request was answered.
	<-entered
	for i := 0; i < n-1; i++ {
		select {
		case a := <-answers:
			inFlight(t, a, 30)
		case err := <-errs:
			t.Fatal(err)
		}
	}
	close(release)
	var first answer
	select {
	case first = <-answers:
	case err := <-errs:
		t.Fatal(err)
	}
	if first.status != http.StatusCreated || first.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %v", first.status, first.header)
	}
	var wg sync.WaitGroup
	for i := 0; i < n-1; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := p.post(context.Background(), "order-1")
			if err != nil {
				t.Error(err)
				return
			}
			if a.status != http.StatusCreated || a.header.Get("Idempotent-Replayed") != "true" || a.body != first.body {
				t.Errorf("retry: %d %v %s, want the first response replayed", a.status, a.header, a.body)
			}
		}()
	}
	wg.Wait()
	if got := p.runs.Load(); got != 1 {
		t.Fatalf("handler ran %d times, want 1", got)
	}
}

// TestMiddlewareSlowHandlerKeepsItsKey: a request without a deadline whose
// handler outlasts its first lease many times keeps the key through its
// renewals, whether its client stays or hangs up: a retry meanwhile gets
// 409 in-flight (never a run, never indeterminate), the outcome is stored
// and replayed, and no renewal outlives the request.
func TestMiddlewareSlowHandlerKeepsItsKey(t *testing.T) {
	const (
		lease  = 300 * time.Millisecond // renewed every 100 ms
		rounds = 6                      // 600 ms of the guard's clock: twice the first lease
	)
	for _, hangUp := range []bool{false, true} {
		t.Run(fmt.Sprintf("client hangs up %v", hangUp), func(t *testing.T) {
			store := newRenewStore()
			release := make(chan struct{})
			p := newProbe(t, store, idemkit.Policy{Lease: lease}, func(w http.ResponseWriter, r *http.Request) {
				<-release // deaf to the request's context, like a slow downstream call
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, `{"id":"ord_1"}`)
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			firstc := p.postAsync(ctx, "order-1")
			start := p.clk.Now()
			for i := 0; i < rounds; i++ {
				store.wait(t)
				if i == 0 && hangUp {
					cancel()
					if r := <-firstc; r.err == nil {
						t.Fatalf("the hung-up request got %d", r.a.status)
					}
				}
				if !renewalRunning() {
					t.Fatal("no renewal goroutine while the lease is renewed")
				}
				// The guard's clock moves one renewal interval per renewal.
				p.clk.Advance(lease / 3)
				inFlight(t, p.mustPost(t, "order-1"), 1)
			}
			if d := p.clk.Now().Sub(start); d <= lease {
				t.Fatalf("the test covered %s, not past the first lease of %s", d, lease)
			}
			close(release)
			var first answer
			if !hangUp {
				r := <-firstc
				if r.err != nil {
					t.Fatal(r.err)
				}
				first = r.a
				if first.status != http.StatusCreated || first.header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("first: %d %v %s", first.status, first.header, first.body)
				}
			}
			// The client that hung up has no answer to wait for: its retry
			// is 409 until the handler's outcome is stored, then replayed.
			retry := p.postWhileInFlight(t, "order-1", 1)
			if retry.status != http.StatusCreated || retry.header.Get("Idempotent-Replayed") != "true" || retry.body != `{"id":"ord_1"}` {
				t.Fatalf("retry after completion: %d %v %s, want the stored 201 replayed", retry.status, retry.header, retry.body)
			}
			if got := p.runs.Load(); got != 1 {
				t.Fatalf("handler ran %d times, want 1", got)
			}
			noRenewalLeft(t)
			renewed := store.extends.Load()
			if renewed < rounds {
				t.Fatalf("%d renewals, want at least %d", renewed, rounds)
			}
			// A renewal after the outcome was stored would have been
			// refused (ErrNotOwner) and not counted; none may even run.
			if got := store.extends.Load(); got != renewed {
				t.Fatalf("%d renewals after the request ended", got-renewed)
			}
		})
	}
}

// TestMiddlewarePanicOverHTTP: a guarded handler that panics frees its key
// and hands net/http its own panic value: http.ErrAbortHandler aborts the
// response silently, any other value is logged by the server with the
// value; either way the client gets no response (net/http closes the
// connection) and its retry runs the handler. No renewal outlives the
// request, even one that was renewing its lease when it panicked.
func TestMiddlewarePanicOverHTTP(t *testing.T) {
	for _, tc := range []struct {
		name    string
		value   any
		renewed bool // panic while the lease is being renewed
		logged  string
	}{
		{name: "ErrAbortHandler", value: http.ErrAbortHandler},
		{name: "ErrAbortHandler while renewing", value: http.ErrAbortHandler, renewed: true},
		{name: "string", value: "order service crashed", logged: "order service crashed"},
		{name: "error while renewing", value: errors.New("ledger unreachable"), renewed: true, logged: "ledger unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := newRenewStore()
			var p *probe
			p = newProbe(t, store, idemkit.Policy{Lease: 300 * time.Millisecond}, func(w http.ResponseWriter, r *http.Request) {
				if p.runs.Load() == 1 {
					w.WriteHeader(http.StatusCreated)
					io.WriteString(w, `{"partial":true}`)
					if tc.renewed {
						<-store.extended
					}
					panic(tc.value)
				}
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, `{"id":"ord_2"}`)
			})
			if a, err := p.post(context.Background(), "order-1"); err == nil {
				t.Fatalf("the panicking request got %d %s, want the connection closed", a.status, a.body)
			}
			logged := p.log.String()
			switch {
			case tc.logged == "" && logged != "":
				t.Errorf("server logged %q for http.ErrAbortHandler, want nothing", logged)
			case tc.logged != "" && (!strings.Contains(logged, "panic serving") || !strings.Contains(logged, tc.logged)):
				t.Errorf("server logged %q, want the panic %q", logged, tc.logged)
			}
			noRenewalLeft(t)
			a := p.mustPost(t, "order-1")
			if a.status != http.StatusCreated || a.header.Get("Idempotent-Replayed") != "" || a.body != `{"id":"ord_2"}` {
				t.Fatalf("retry: %d %v %s, want a second run", a.status, a.header, a.body)
			}
			if got := p.runs.Load(); got != 2 {
				t.Fatalf("handler ran %d times, want 2", got)
			}
		})
	}
}

// TestMiddlewareShutdownMidHandler: a server shut down while a guarded
// handler runs. A graceful Shutdown waits for the handler: its client gets
// the fresh response and the retry, on the next server, is replayed. A
// Shutdown cut short by closing the connections cancels the request: a
// handler that goes on stores its outcome (replayed); one that stops with
// Fail frees the key (the retry runs). Never a second run of a stored
// outcome, never a key left held.
func TestMiddlewareShutdownMidHandler(t *testing.T) {
	for _, tc := range []struct {
		name     string
		force    bool // Shutdown's deadline passes: the connections are closed
		obeyCtx  bool // the handler stops with Fail when its request is cancelled
		wantRuns int32
	}{
		{name: "graceful", wantRuns: 1},
		{name: "forced, handler goes on", force: true, wantRuns: 1},
		{name: "forced, handler stops", force: true, obeyCtx: true, wantRuns: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			var p *probe
			p = newProbe(t, memstore.New(), idemkit.Policy{}, func(w http.ResponseWriter, r *http.Request) {
				run := p.runs.Load()
				if run == 1 {
					close(entered)
					if tc.obeyCtx {
						// Only the cancellation ends it: release, closed
						// once the client has seen its connection close,
						// could otherwise win a select against a
						// cancellation not yet observed.
						<-r.Context().Done()
						httpmw.Fail(r.Context(), r.Context().Err())
						return
					}
					select {
					case <-release:
					case <-r.Context().Done():
						<-release
					}
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				fmt.Fprintf(w, `{"id":"ord_%d"}`, run)
			})
			firstc := p.postAsync(context.Background(), "order-1")
			<-entered
			old := p.srv.Config
			shutdownStarted := make(chan struct{})
			old.RegisterOnShutdown(func() { close(shutdownStarted) })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			shutdown := make(chan error, 1)
			go func() { shutdown <- old.Shutdown(ctx) }()
			<-shutdownStarted
			if tc.force {
				cancel()
				if err := <-shutdown; !errors.Is(err, context.Canceled) {
					t.Fatalf("Shutdown: %v, want it cut short", err)
				}
				old.Close() // the connections close; the request is cancelled
				if r := <-firstc; r.err == nil {
					t.Fatalf("the request on a closed connection got %d", r.a.status)
				}
			}
			close(release)
			if !tc.force {
				r := <-firstc
				if r.err != nil || r.a.status != http.StatusCreated || r.a.body != `{"id":"ord_1"}` {
					t.Fatalf("first during a graceful shutdown: %+v %v", r.a, r.err)
				}
				if err := <-shutdown; err != nil {
					t.Fatalf("Shutdown: %v", err)
				}
			}
			p.restart(t)
			// The retry may come while the cancelled handler still runs.
			retry := p.postWhileInFlight(t, "order-1", 30)
			wantReplay := tc.wantRuns == 1
			if retry.status != http.StatusCreated || (retry.header.Get("Idempotent-Replayed") == "true") != wantReplay ||
				retry.body != fmt.Sprintf(`{"id":"ord_%d"}`, tc.wantRuns) {
				t.Fatalf("retry: %d %v %s, want ord_%d (replayed %v)", retry.status, retry.header, retry.body, tc.wantRuns, wantReplay)
			}
			if got := p.runs.Load(); got != tc.wantRuns {
				t.Fatalf("handler ran %d times, want %d", got, tc.wantRuns)
			}
		})
	}
}

// TestMiddlewareRenewalsRunOut: a handler that outlasts all its renewals
// (MaxRenewals) loses its lease while it still runs: the renewal goroutine
// ends, a retry then finds the outcome unknown (409
// indeterminate-operator-required, never a second run), and the handler's
// late completion still wins: its client gets the response and later
// retries the replay.
func TestMiddlewareRenewalsRunOut(t *testing.T) {
	const lease = 300 * time.Millisecond
	store := newRenewStore()
	release := make(chan struct{})
	p := newProbe(t, store, idemkit.Policy{Lease: lease, MaxRenewals: 2}, func(w http.ResponseWriter, r *http.Request) {
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"ord_1"}`)
	})
	firstc := p.postAsync(context.Background(), "order-1")
	var last time.Time // the lease end the last renewal set
	for i := 0; i < 2; i++ {
		last = store.wait(t)
		p.clk.Advance(lease / 3)
	}
	noRenewalLeft(t) // the handler still runs
	p.clk.Advance(last.Sub(p.clk.Now()))
	a := p.mustPost(t, "order-1")
	if a.status != http.StatusConflict || !strings.Contains(a.body, "indeterminate-operator-required") {
		t.Fatalf("retry after the last lease: %d %s, want 409 indeterminate-operator-required", a.status, a.body)
	}
	close(release)
	r := <-firstc
	if r.err != nil || r.a.status != http.StatusCreated || r.a.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %+v %v, want its own 201", r.a, r.err)
	}
	a = p.mustPost(t, "order-1")
	if a.status != http.StatusCreated || a.header.Get("Idempotent-Replayed") != "true" || a.body != r.a.body {
		t.Fatalf("retry after the late completion: %d %v %s, want the replay", a.status, a.header, a.body)
	}
	if got := p.runs.Load(); got != 1 {
		t.Fatalf("handler ran %d times, want 1", got)
	}
	if got := store.extends.Load(); got != 2 {
		t.Fatalf("%d renewals, want MaxRenewals (2)", got)
	}
}
