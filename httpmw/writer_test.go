package httpmw_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
)

// TestMiddlewareWriterSemantics: whatever a guarded handler does with its
// writer, the client gets what net/http alone would send (status, body,
// Content-Type, the handler's headers), and the replay has the same status
// and body. Streaming and connection features the buffering writer cannot
// offer fail with http.ErrNotSupported (or an absent interface), never a
// panic or a lost body.
func TestMiddlewareWriterSemantics(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.HandlerFunc
	}{
		{"write without WriteHeader", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"id":"ord_1"}`)
		}},
		{"nothing written", func(w http.ResponseWriter, r *http.Request) {}},
		{"WriteHeader twice", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			w.WriteHeader(http.StatusAccepted)
			io.WriteString(w, `{"id":"ord_1"}`)
		}},
		{"header changed after WriteHeader", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "/orders/ord_1")
			w.WriteHeader(http.StatusCreated)
			w.Header().Set("Location", "/orders/ord_2")
			io.WriteString(w, `{"id":"ord_1"}`)
		}},
		{"103 Early Hints before the status", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":"ord_1"}`)
		}},
		{"204 No Content", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		}},
		{"Flusher", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":`)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			io.WriteString(w, `"ord_1"}`)
		}},
		{"ResponseController", func(w http.ResponseWriter, r *http.Request) {
			rc := http.NewResponseController(w)
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":`)
			if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
				panic(err)
			}
			io.WriteString(w, `"ord_1"}`)
		}},
		{"Hijacker", func(w http.ResponseWriter, r *http.Request) {
			const body = `{"id":"ord_1"}`
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				// Without the middleware: the handler answers on the wire.
				io.WriteString(conn, "HTTP/1.1 201 Created\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 14\r\nConnection: close\r\n\r\n"+body)
				conn.Close()
				return
			}
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, body)
		}},
		{"large body", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"pad":"`+strings.Repeat("x", 256<<10)+`"}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain := httptest.NewUnstartedServer(tc.h)
			plain.Config.ErrorLog = log.New(io.Discard, "", 0) // "superfluous WriteHeader"
			plain.Start()
			defer plain.Close()
			want := post(t, plain.URL)

			g := testguard.Mem(t)
			srv := httptest.NewServer(httpmw.New(g, httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return "tenant-a", nil }, Settings: httpconfig.Settings{ReplayHeaders: []string{"Link"}}})(tc.h))
			defer srv.Close()
			fresh, replay := post(t, srv.URL), post(t, srv.URL)
			for _, name := range []string{"Content-Type", "Location", "Link"} {
				if g, w := fresh.h.Get(name), want.h.Get(name); g != w {
					t.Errorf("fresh %s %q, want %q as without the middleware", name, g, w)
				}
			}
			if fresh.status != want.status || fresh.body != want.body {
				t.Errorf("fresh %d %d bytes, want %d %d bytes as without the middleware", fresh.status, len(fresh.body), want.status, len(want.body))
			}
			if replay.h.Get("Idempotent-Replayed") != "true" || replay.status != want.status || replay.body != want.body ||
				replay.h.Get("Content-Type") != want.h.Get("Content-Type") {
				t.Errorf("replay %d %v %d bytes, want %d %d bytes", replay.status, replay.h, len(replay.body), want.status, len(want.body))
			}
			// A header the handler set after its status was never sent:
			// the replay must not carry it either.
			for _, name := range []string{"Location", "Link"} {
				if g, w := replay.h.Get(name), want.h.Get(name); g != w {
					t.Errorf("replay %s %q, want %q as first sent", name, g, w)
				}
			}
		})
	}
}

type sent struct {
	status int
	h      http.Header
	body   string
}

// post sends a guarded POST to url and returns what came back.
func post(t *testing.T, url string) sent {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/orders", strings.NewReader(`{"amount":1000}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "order-1")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(bufio.NewReader(resp.Body))
	if err != nil {
		t.Fatal(err)
	}
	return sent{resp.StatusCode, resp.Header, string(b)}
}
