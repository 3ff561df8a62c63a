package httpmw_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/idemkit/idemkit/httpmw"
)

// TestMiddlewareHandlerGetsBody: the middleware reads a guarded request's
// body to fingerprint it, and the handler then reads the very same bytes,
// whatever their size and whether the length was declared: an order must
// never be created from an empty or cut body.
func TestMiddlewareHandlerGetsBody(t *testing.T) {
	for _, size := range []int{0, 52, 64 << 10, 64<<10 + 1, 300 << 10} {
		for _, declared := range []bool{true, false} {
			body := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
			var got []byte
			h, _ := setup(t, httpmw.Config{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, err := io.ReadAll(r.Body)
				if err != nil {
					t.Errorf("handler read: %v", err)
				}
				got = b
				w.WriteHeader(201)
			}))
			r := request(t, func(r *http.Request) {
				r.Header.Set("Content-Type", "application/octet-stream")
				r.Body = io.NopCloser(bytes.NewReader(body))
				r.ContentLength = int64(len(body))
				if !declared {
					r.ContentLength = -1
				}
			})
			if w := serve(h, r); w.Code != 201 || !bytes.Equal(got, body) {
				t.Errorf("%d bytes, declared %v: %d, handler read %d bytes, want all %d", size, declared, w.Code, len(got), len(body))
			}
		}
	}
}

// TestMiddlewareNilBody: a request built by hand without a body (Body nil,
// as a test or another middleware may pass it) is guarded as an empty one,
// never a panic.
func TestMiddlewareNilBody(t *testing.T) {
	o := &orders{}
	h, _ := setup(t, httpmw.Config{}, o)
	r := &http.Request{Method: http.MethodPost, URL: &url.URL{Path: "/orders"}, Header: http.Header{
		"Idempotency-Key": {"nil-body"},
		"Authorization":   {"Bearer token-b"},
	}}
	for i := range 2 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 201 || isReplay(w) != (i == 1) {
			t.Fatalf("request %d: %d replayed=%v %s", i, w.Code, isReplay(w), w.Body)
		}
	}
	if o.runs.Load() != 1 {
		t.Errorf("handler ran %d times, want 1", o.runs.Load())
	}
}
