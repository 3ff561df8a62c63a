package httpmw_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/eventlog"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
)

// sendTwice sends the same guarded POST to h over a real server twice and
// returns both responses with their bodies read (so trailers are in).
func sendTwice(t *testing.T, h http.Handler) [2]*http.Response {
	t.Helper()
	g := testguard.Mem(t)
	srv := httptest.NewServer(httpmw.New(g, httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return "tenant-a", nil }})(h))
	defer srv.Close()
	var out [2]*http.Response
	for i := range out {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader(`{"amount":1000}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "order-1")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		out[i] = resp
	}
	return out
}

// TestMiddlewareTrailers: trailers a guarded handler sets after its body
// (declared in a Trailer header, or named with http.TrailerPrefix) reach
// the first response, as without the middleware. Snapshots keep headers
// only, so a replay has neither the trailers nor their announcement.
func TestMiddlewareTrailers(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
	}{
		{"declared", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Checksum")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":"ord_1"}`)
			w.Header().Set("X-Checksum", "c1")
		}},
		{"prefixed", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":"ord_1"}`)
			w.Header().Set(http.TrailerPrefix+"X-Checksum", "c1")
		}},
		{"declared, implicit WriteHeader", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Checksum")
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"ord_1"}`)
			w.Header().Set("X-Checksum", "c1")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sendTwice(t, tc.h)
			fresh, replay := r[0], r[1]
			if got := fresh.Trailer.Get("X-Checksum"); got != "c1" {
				t.Errorf("fresh response trailer X-Checksum %q, want c1 (trailers %v, headers %v)", got, fresh.Trailer, fresh.Header)
			}
			if fresh.Header.Get("X-Checksum") != "" {
				t.Errorf("trailer sent as a header: %v", fresh.Header)
			}
			if replay.Header.Get("Idempotent-Replayed") != "true" || len(replay.Trailer) != 0 || replay.Header.Get("Trailer") != "" {
				t.Errorf("replay headers %v trailers %v: want a replay without trailers", replay.Header, replay.Trailer)
			}
			fb, _ := io.ReadAll(fresh.Body)
			rb, _ := io.ReadAll(replay.Body)
			if string(fb) != `{"id":"ord_1"}` || string(rb) != string(fb) || fresh.StatusCode != replay.StatusCode {
				t.Errorf("fresh %d %q, replay %d %q", fresh.StatusCode, fb, replay.StatusCode, rb)
			}
		})
	}
}

// TestMiddlewareOuterBodyLimit: a body cut by an outer http.MaxBytesHandler
// (a lower limit than MaxBodyBytes) is a 413 body-too-large naming that
// limit, reported as ErrBodyTooLarge, like a body over MaxBodyBytes; the
// handler does not run.
func TestMiddlewareOuterBodyLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		length int64
	}{{"declared length", 100}, {"chunked", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &eventlog.Log{}
			g := testguard.New(t, idemkit.Config{Store: memstore.New(), Observer: obs})
			o := &orders{}
			h := http.MaxBytesHandler(auth(httpmw.New(g, httpmw.Config{Tenant: tenantOf})(o)), 10)
			w := serve(h, request(t, func(r *http.Request) {
				r.Body = io.NopCloser(strings.NewReader(strings.Repeat("x", 100)))
				r.ContentLength = tc.length
			}))
			p := checkProblem(t, w, 413, "body-too-large")
			if d, _ := p["detail"].(string); !strings.Contains(d, " 10 bytes") {
				t.Errorf("detail %q, want the 10-byte limit", d)
			}
			if o.runs.Load() != 0 {
				t.Error("handler ran")
			}
			if evs := obs.Events(); len(evs) != 1 || !errors.Is(evs[0].Err, httpmw.ErrBodyTooLarge) {
				t.Errorf("events %+v, want one refusal with ErrBodyTooLarge", evs)
			}
		})
	}
}

// TestMiddlewareClientGone: a client that disconnects while its request
// runs cancels the request's context, but the handler's outcome is still
// stored: its retry is replayed, never run again.
func TestMiddlewareClientGone(t *testing.T) {
	settled := make(chan observe.Event, 1)
	g, err := idemkit.New(idemkit.Config{Store: memstore.New(), Observer: observe.ObserverFunc(func(_ context.Context, e observe.Event) {
		if e.Kind != observe.EventReplayed {
			settled <- e
		}
	})})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	started := make(chan struct{})
	h := httpmw.New(g, httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return "tenant-a", nil }})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			close(started)
			<-r.Context().Done() // the client is gone
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"ord_1"}`)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	send := func(ctx context.Context) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/orders", strings.NewReader(`{"amount":1000}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "order-1")
		return srv.Client().Do(req)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := send(ctx)
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the first request was not cancelled")
	}
	if e := <-settled; e.Kind != observe.EventExecuted {
		t.Fatalf("first request settled as %v (%v), want executed and stored", e.Kind, e.Err)
	}
	resp, err := send(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("Idempotent-Replayed") != "true" || string(b) != `{"id":"ord_1"}` {
		t.Fatalf("retry: %d %v %s, want the stored 201 replayed", resp.StatusCode, resp.Header, b)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}

// TestMiddlewareQueryNotDropped: every pair of the raw query string is
// fingerprinted, those net/url refuses (a semicolon, a bad escape)
// included: a key reused with another such query is a mismatch, never a
// replay.
func TestMiddlewareQueryNotDropped(t *testing.T) {
	for _, tc := range testkit.QueryRetries {
		t.Run(tc.Name, func(t *testing.T) {
			o := &orders{}
			h, _ := setup(t, httpmw.Config{}, o)
			serve(h, request(t, func(r *http.Request) { r.URL.RawQuery = tc.First }))
			w := serve(h, request(t, func(r *http.Request) { r.URL.RawQuery = tc.Second }))
			if tc.Replay {
				if !isReplay(w) || o.runs.Load() != 1 {
					t.Errorf("%d after %d runs, want a replay", w.Code, o.runs.Load())
				}
				return
			}
			checkProblem(t, w, 422, "fingerprint-mismatch")
			if o.runs.Load() != 1 {
				t.Error("handler ran")
			}
		})
	}
}

// TestMiddlewareContentLength: a buffered response is sent whole, so it
// goes out with its Content-Length, fresh and replayed, however large,
// never chunked; a handler's own Content-Length is kept as it set it.
func TestMiddlewareContentLength(t *testing.T) {
	big := `{"pad":"` + strings.Repeat("x", 64<<10) + `"}`
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
		want int64
	}{
		{"large body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, big)
		}, int64(len(big))},
		{"written in pieces", func(w http.ResponseWriter, r *http.Request) {
			for range 8 {
				io.WriteString(w, strings.Repeat("y", 1024))
			}
		}, 8 << 10},
		{"handler's own", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "14")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":"ord_1"}`)
		}, 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, resp := range sendTwice(t, tc.h) {
				if resp.ContentLength != tc.want || len(resp.TransferEncoding) != 0 {
					t.Errorf("response %d: Content-Length %d, Transfer-Encoding %v; want %d, not chunked", i, resp.ContentLength, resp.TransferEncoding, tc.want)
				}
			}
		})
	}
}
