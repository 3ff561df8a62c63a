package httpmw_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
)

// sink is a client's end of a response: it keeps the status and header
// and hashes the body as it arrives, holding none of it.
type sink struct {
	header http.Header
	status int
	n      int
	sum    hash.Hash
}

func newSink() *sink { return &sink{header: http.Header{}, sum: sha256.New()} }

func (s *sink) Header() http.Header { return s.header }

func (s *sink) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}

func (s *sink) Write(p []byte) (int, error) {
	s.WriteHeader(200)
	s.n += len(p)
	return s.sum.Write(p)
}

// bigResponse is a handler writing a 201 of size bytes, in chunks of 32
// KiB, with a Location; runs counts its runs.
func bigResponse(size int, runs *int) http.HandlerFunc {
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 2<<10)
	return func(w http.ResponseWriter, r *http.Request) {
		*runs++
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Location", "/exports/1")
		w.WriteHeader(http.StatusCreated)
		for left := size; left > 0; left -= len(chunk) {
			w.Write(chunk[:min(left, len(chunk))])
		}
	}
}

// bodySum is the SHA-256 of what bigResponse(size) writes.
func bodySum(size int) []byte {
	s := newSink()
	bigResponse(size, new(int))(s, nil)
	return s.sum.Sum(nil)
}

// TestMiddlewareLargeResponse: a guarded response over MaxResponseBytes
// reaches the client whole, without being buffered (the bytes allocated
// stay well under its size), and its record completes without the body:
// the retry gets 410 response-not-stored with the first status and
// Location, and the handler runs once. One at the limit is buffered and
// replayed whole. (A 256 MiB response cost 767 MiB, all of it buffered;
// it now costs what buffering the first 16 MiB does.)
func TestMiddlewareLargeResponse(t *testing.T) {
	const limit = 64 << 10
	for _, tc := range []struct {
		name   string
		limit  int64
		size   int
		stored bool
	}{
		{"at the limit", limit, limit, true},
		{"one byte over", limit, limit + 1, false},
		{"8 MiB", limit, 8 << 20, false},
		{"4 times the default limit", 0, 4 * httpmw.DefaultMaxResponseBytes, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.size > 8<<20 && testing.Short() {
				t.Skip("a 64 MiB response: not in -short")
			}
			buffered := uint64(tc.limit)
			if buffered == 0 {
				buffered = httpmw.DefaultMaxResponseBytes
			}
			runs := 0
			h, _ := setup(t, httpmw.Config{MaxResponseBytes: tc.limit}, bigResponse(tc.size, &runs))
			want := bodySum(tc.size)
			first, retry := request(t, nil), request(t, nil)
			w := newSink()
			_, alloc := testkit.Allocated(func() { h.ServeHTTP(w, first) })
			if w.status != 201 || w.n != tc.size || !bytes.Equal(w.sum.Sum(nil), want) || w.header.Get("Location") != "/exports/1" {
				t.Fatalf("first: %d, %d bytes, Location %q; want 201 and the whole %d-byte body", w.status, w.n, w.header.Get("Location"), tc.size)
			}
			t.Logf("%d-byte response: %d bytes allocated", tc.size, alloc)
			// Up to the limit the buffer grows by doubling (and, under the
			// race detector, allocates each size twice).
			growth := 2 * buffered
			if httpmw.RaceEnabled {
				growth *= 2
			}
			if budget := growth + uint64(tc.size)/8 + 256<<10; !tc.stored && budget < uint64(tc.size) && alloc > budget {
				t.Errorf("%d bytes allocated for a %d-byte response: it was buffered", alloc, tc.size)
			}

			rw := httptest.NewRecorder()
			h.ServeHTTP(rw, retry)
			if runs != 1 {
				t.Fatalf("handler ran %d times", runs)
			}
			if tc.stored {
				if rw.Code != 201 || !isReplay(rw) || !bytes.Equal(sha256Sum(rw.Body.Bytes()), want) {
					t.Fatalf("retry: %d replayed=%v, %d bytes; want the whole response replayed", rw.Code, isReplay(rw), rw.Body.Len())
				}
				return
			}
			if rw.Code != 410 {
				t.Fatalf("retry: %d replayed=%v, %d bytes; want 410", rw.Code, isReplay(rw), rw.Body.Len())
			}
			p := checkProblem(t, rw, 410, "response-not-stored")
			if p["originalStatus"] != float64(201) || p["location"] != "/exports/1" {
				t.Errorf("retry: %v, want originalStatus 201 and location /exports/1", p)
			}
		})
	}
}

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

// TestMiddlewareLargeResponseOverHTTP: over a real connection, a streamed
// response keeps the trailers its handler sets after the body, and never
// carries a handler's own Idempotent-Replayed; a handler that calls Fail
// after streaming has its connection aborted, so the client sees a cut
// response, and its key is freed (a retry runs) or kept (outcome unknown).
func TestMiddlewareLargeResponseOverHTTP(t *testing.T) {
	const limit, size = 4 << 10, 64 << 10
	body := strings.Repeat("x", size)
	for _, tc := range []struct {
		name   string
		fail   error
		retry  int // the retry's status
		reruns bool
	}{
		{"completed", nil, 410, false},
		{"Fail after streaming", errors.New("charge declined"), 201, true},
		{"Fail with an unknown outcome", fmt.Errorf("timeout: %w", idemkit.ErrOutcomeUnknown), 409, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := testguard.Mem(t)
			runs := 0
			mw := httpmw.New(g, httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return "tenant-a", nil }, MaxResponseBytes: limit})
			srv := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs++
				w.Header().Set("Trailer", "X-Checksum")
				w.Header().Set("Idempotent-Replayed", "true")
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, body)
				if tc.fail != nil && runs == 1 {
					httpmw.Fail(r.Context(), tc.fail)
					return
				}
				w.Header().Set("X-Checksum", "c1")
				w.Header().Set(http.TrailerPrefix+"X-Late", "l1")
			})))
			defer srv.Close()
			post := func() (*http.Response, []byte, error) {
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/exports", nil)
				req.Header.Set("Idempotency-Key", "export-1")
				resp, err := srv.Client().Do(req)
				if err != nil {
					return nil, nil, err
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				return resp, b, err
			}
			resp, b, err := post()
			switch {
			case tc.fail == nil && (err != nil || resp.StatusCode != 201 || string(b) != body):
				t.Fatalf("first: %v, %d bytes, err %v; want 201 and the whole body", resp, len(b), err)
			case tc.fail == nil && (resp.Trailer.Get("X-Checksum") != "c1" || resp.Trailer.Get("X-Late") != "l1"):
				t.Errorf("trailers %v, want X-Checksum and X-Late", resp.Trailer)
			case tc.fail == nil && resp.Header.Get("Idempotent-Replayed") != "":
				t.Errorf("a fresh response carries Idempotent-Replayed")
			case tc.fail != nil && err == nil:
				t.Fatalf("first: %d bytes read without error; want a cut response", len(b))
			}
			resp, _, err = post()
			if err != nil || resp.StatusCode != tc.retry {
				t.Fatalf("retry: %v %v, want %d", resp, err, tc.retry)
			}
			if want := map[bool]int{true: 2, false: 1}[tc.reruns]; runs != want {
				t.Errorf("handler ran %d times, want %d", runs, want)
			}
		})
	}
}

// FuzzMiddlewareResponseLimit writes a response in chunks of any sizes
// under any MaxResponseBytes: the client gets every byte in order, and the
// retry replays the whole response when it fits the limit, or answers 410
// response-not-stored when it does not; the handler runs once.
func FuzzMiddlewareResponseLimit(f *testing.F) {
	f.Add(uint16(16), []byte{4, 12})
	f.Add(uint16(16), []byte{4, 13})
	f.Add(uint16(1), []byte{0, 0, 1})
	f.Add(uint16(1), []byte{2})
	f.Add(uint16(300), []byte{255, 255, 0, 1})
	f.Fuzz(func(t *testing.T, limit uint16, chunks []byte) {
		if limit == 0 || len(chunks) > 64 {
			return
		}
		var body []byte
		for i, n := range chunks {
			body = append(body, bytes.Repeat([]byte{byte('a' + i%26)}, int(n))...)
		}
		runs := 0
		h, _ := setup(t, httpmw.Config{MaxResponseBytes: int64(limit)}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			runs++
			w.Header().Set("Location", "/exports/1")
			w.WriteHeader(http.StatusCreated)
			off := 0
			for _, n := range chunks {
				w.Write(body[off : off+int(n)])
				off += int(n)
			}
		}))
		first := serve(h, request(t, nil))
		if first.Code != 201 || !bytes.Equal(first.Body.Bytes(), body) {
			t.Fatalf("first: %d, %d bytes; want 201 and %d bytes", first.Code, first.Body.Len(), len(body))
		}
		retry := serve(h, request(t, nil))
		switch {
		case runs != 1:
			t.Fatalf("handler ran %d times", runs)
		case len(body) <= int(limit) && (retry.Code != 201 || !isReplay(retry) || !bytes.Equal(retry.Body.Bytes(), body)):
			t.Fatalf("retry of a %d-byte response under a %d-byte limit: %d replayed=%v", len(body), limit, retry.Code, isReplay(retry))
		case len(body) > int(limit) && retry.Code != 410:
			t.Fatalf("retry of a %d-byte response over a %d-byte limit: %d, want 410", len(body), limit, retry.Code)
		}
	})
}
