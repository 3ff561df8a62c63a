package orders_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/memstore"
)

// errReader fails every read: a body that must not be read.
type errReader struct{}

func (errReader) Read([]byte) (int, error) {
	return 0, errors.New("read a body that was to be refused unread")
}

// TestReadBody: every size up to MaxLocalBody reads back exactly, as
// text or base64, with or without a declared length; one byte more is
// ErrBodyTooLarge, and so is a larger declared length, unread.
func TestReadBody(t *testing.T) {
	const chunk = 256 << 10
	for _, n := range []int{0, 1, 3, chunk - 1, chunk, chunk + 1, 3*chunk + 5, orders.MaxLocalBody} {
		data := bytes.Repeat([]byte("0123456789abcdef\x00\xff"), n/18+1)[:n]
		for _, declared := range []bool{true, false} {
			for _, ct := range []string{"application/json", "application/octet-stream"} {
				t.Run(fmt.Sprintf("%d/declared=%v/%s", n, declared, ct), func(t *testing.T) {
					r := httptest.NewRequest("POST", "/orders", bytes.NewReader(data))
					r.Header.Set("Content-Type", ct)
					if !declared {
						r.ContentLength = -1
					}
					b, err := orders.ReadBody(r)
					if err != nil {
						t.Fatal(err)
					}
					want := string(data)
					if b.Base64 {
						want = base64.StdEncoding.EncodeToString(data)
					}
					if b.Len != n || b.Text != want || b.Base64 != (ct == "application/octet-stream" && n > 0) {
						t.Fatalf("Len %d (want %d), base64 %v, text equal %v", b.Len, n, b.Base64, b.Text == want)
					}
				})
			}
		}
	}
	t.Run("too large", func(t *testing.T) {
		data := make([]byte, orders.MaxLocalBody+1)
		for _, cl := range []int64{-1, orders.MaxLocalBody} { // unknown, or a declared length the body exceeds
			r := httptest.NewRequest("POST", "/orders", bytes.NewReader(data))
			r.ContentLength = cl
			if _, err := orders.ReadBody(r); !errors.Is(err, orders.ErrBodyTooLarge) {
				t.Errorf("Content-Length %d, %d bytes sent: err = %v, want ErrBodyTooLarge", cl, len(data), err)
			}
		}
		r := httptest.NewRequest("POST", "/orders", errReader{})
		r.ContentLength = orders.MaxLocalBody + 1
		if _, err := orders.ReadBody(r); !errors.Is(err, orders.ErrBodyTooLarge) {
			t.Errorf("declared Content-Length over the limit: err = %v, want ErrBodyTooLarge before reading", err)
		}
	})
}

// allocated returns the fewest bytes allocated by one call of f in three.
func allocated(f func()) uint64 {
	best := ^uint64(0)
	for range 3 {
		_, b := testkit.Allocated(f)
		best = min(best, b)
	}
	return best
}

// TestLocalBodyMemoryBudget: a 10 MB body costs the local server the
// event's one string (the bytes, or their base64) plus the pieces it read
// it in, and the handler its decoding: under 2.2 times the body as text,
// under 3.6 times base64-encoded (5.9 times before the copies were cut).
func TestLocalBodyMemoryBudget(t *testing.T) {
	h, err := orders.Handler(orders.Options{Store: memstore.New(), Repo: &orders.MemRepo{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	l := &orders.Local{Handler: h, Logger: slog.New(slog.DiscardHandler)}
	body := bytes.Repeat([]byte{0xff, 0x00, '{'}, orders.MaxLocalBody/3)
	for i, tc := range []struct {
		contentType string
		status      int
		budget      float64 // bytes allocated per body byte
	}{
		// The fingerprint refuses the body at its first byte: the cost is
		// the local server's.
		{"application/json", 400, 2.2},
		// The handler decodes the base64 before refusing the media type.
		{"application/octet-stream", 415, 3.6},
	} {
		status := 0
		got := allocated(func() {
			req := httptest.NewRequest("POST", "/orders", bytes.NewReader(body))
			req.Header.Set("Content-Type", tc.contentType)
			req.Header.Set("Authorization", "Bearer alice")
			req.Header.Set("Idempotency-Key", fmt.Sprintf("k-%d", i))
			w := httptest.NewRecorder()
			l.ServeHTTP(w, req)
			status = w.Code
		})
		ratio := float64(got) / float64(len(body))
		t.Logf("%s: %.1f MB allocated for a %.1f MB body (%.2fx)", tc.contentType, float64(got)/1e6, float64(len(body))/1e6, ratio)
		if status != tc.status {
			t.Errorf("%s: status %d, want %d", tc.contentType, status, tc.status)
		}
		if ratio > tc.budget {
			t.Errorf("%s: %.2fx the body allocated, budget %.1fx", tc.contentType, ratio, tc.budget)
		}
	}
}

// TestLocalSlowSenderHoldsNoSlot: clients that send their body slowly
// hold no invocation slot; with every slot's worth of them connected,
// another request is served, not throttled.
func TestLocalSlowSenderHoldsNoSlot(t *testing.T) {
	h := func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "{}"}, nil
	}
	const slots = 2
	local := &orders.Local{Handler: h, Concurrency: slots, Logger: slog.New(slog.DiscardHandler)}
	entered := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		local.ServeHTTP(w, r)
	}))
	defer srv.Close()

	// Each slow client has sent its headers and one byte of ten; it is
	// still sending when the fast request arrives.
	var slow []net.Conn
	for range slots + 1 {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /orders HTTP/1.1\r\nHost: local\r\nAuthorization: Bearer alice\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{")
		slow = append(slow, c)
	}
	// Every slow request has reached Local, which is reading its body.
	for range slots + 1 {
		<-entered
	}
	resp, body := send(t, "GET", srv.URL+"/orders/1", "", "")
	if resp.StatusCode != 200 {
		t.Fatalf("with %d slow senders connected: %d %s, want 200 (a slow sender holds a slot)", len(slow), resp.StatusCode, body)
	}
	// The slow senders finish and are served.
	for _, c := range slow {
		if _, err := io.WriteString(c, `"a":1234}`); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		r, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != 200 {
			t.Errorf("slow sender: %d, want 200", r.StatusCode)
		}
	}
}
