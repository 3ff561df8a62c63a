package idemclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/idemclient"
	"github.com/idemkit/idemkit/internal/testing/testclock"
)

// scriptedServer is a Config.Base answering each attempt with the next
// step of a script (cyclically), on a test clock; it records each
// attempt's time and the key values it carried under any spelling.
type scriptedServer struct {
	clock                   *testclock.Clock
	script                  []byte
	retryAfter, problemType string

	mu   sync.Mutex
	at   []time.Time
	keys [][]string
}

var fuzzStatuses = []int{200, 201, 202, 204, 301, 400, 402, 404, 408, 409, 410, 413, 422, 425, 429, 500, 502, 503, 504, 599, 999, 100}

var errNotRetryable = errors.New("scripted: refused")

func (s *scriptedServer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	s.mu.Lock()
	n := len(s.at)
	s.at = append(s.at, s.clock.Now())
	var keys []string
	for k, vs := range req.Header {
		if strings.EqualFold(k, idemclient.DefaultHeader) {
			keys = append(keys, vs...)
		}
	}
	s.keys = append(s.keys, keys)
	s.mu.Unlock()

	var status, flags byte
	if len(s.script) >= 2 {
		i := 2 * (n % (len(s.script) / 2))
		status, flags = s.script[i], s.script[i+1]
	}
	switch flags & 7 {
	case 1:
		return nil, io.ErrUnexpectedEOF // a lost answer: retried
	case 2:
		return nil, errNotRetryable
	}
	h := http.Header{}
	switch flags >> 3 & 3 {
	case 1:
		h.Set("Retry-After", s.retryAfter)
	case 2:
		h.Set("Retry-After", s.clock.Now().Add(time.Duration(int8(status))*time.Second).UTC().Format(http.TimeFormat))
	case 3:
		h.Set("Retry-After", "0")
	}
	if flags&0x20 != 0 {
		h.Set(idemclient.ReplayedHeader, "true")
	}
	code := fuzzStatuses[int(status)%len(fuzzStatuses)]
	body := "{}"
	if flags&0x40 != 0 {
		typ := s.problemType
		if flags&0x80 != 0 {
			typ = httpproblem.Types()[int(status)%len(httpproblem.Types())].Type
			code = httpproblem.Types()[int(status)%len(httpproblem.Types())].Status
		}
		h.Set("Content-Type", httpproblem.ContentType)
		body = fmt.Sprintf(`{"type":%q,"status":%d}`, typ, code)
	}
	if flags&4 != 0 {
		body = strings.Repeat(body, 20) // longer than MaxResponseBytes: streamed
	}
	return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
}

// FuzzClient: whatever a server answers (any status, Retry-After,
// problem type, replay mark, lost answer, in any order), the client sends
// exactly one key on every attempt of a request, the same one (the
// caller's when it gave one), never starts an attempt past its budget or
// after MaxAttempts, never polls without a pause, and returns a response
// or an error, never both or neither.
func FuzzClient(f *testing.F) {
	// 409 in-flight with Retry-After 0, then a replay.
	f.Add([]byte{9, 0x58, 0, 0x20}, "", httpproblem.TypeInFlight, uint16(5000), uint8(0), uint8(0))
	// 429 with a Retry-After past 32 bits.
	f.Add([]byte{14, 0x08}, "4294967296", "", uint16(60000), uint8(0), uint8(1))
	// 503 store-unavailable, a lost answer, a 500 handler-failed.
	f.Add([]byte{18, 0x48, 0, 1, 15, 0xc0}, "2", httpproblem.TypeStoreUnavailable, uint16(10000), uint8(5), uint8(2))
	// A past date on an in-flight 409; the caller's key in lower case.
	f.Add([]byte{0xf6, 0x50}, "soon", httpproblem.TypeInFlight, uint16(3000), uint8(0), uint8(3))
	f.Fuzz(func(t *testing.T, script []byte, retryAfter, problemType string, budgetMs uint16, maxAttempts, keyMode uint8) {
		clock := testclock.New()
		srv := &scriptedServer{clock: clock, script: script, retryAfter: retryAfter, problemType: problemType}
		budget := time.Duration(budgetMs%20000+1) * time.Millisecond
		c, s := newClient(t, clock, idemclient.Config{Base: srv, Budget: budget, MaxAttempts: int(maxAttempts % 16), MaxResponseBytes: 256})
		// A wait of nothing is the end of the request: a client that
		// polled without a pause would do so for ever on the test clock.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var noPause bool
		s.hook = func(d time.Duration) {
			if d <= 0 {
				noPause = true
				cancel()
			}
		}
		var given string
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://api.test/orders", strings.NewReader(`{"n":1}`))
		if err != nil {
			t.Fatal(err)
		}
		switch keyMode % 4 {
		case 1:
			given = "order-1"
			req.Header.Set(idemclient.DefaultHeader, given)
		case 2:
			given = "order-2"
			req = req.WithContext(idemclient.WithKey(ctx, given))
		case 3:
			given = "order-3"
			req.Header["idempotency-key"] = []string{given}
		}
		start := clock.Now()
		resp, err := c.Do(req)
		if noPause {
			t.Fatalf("the client waited nothing before a retry (waits %v)", s.recorded())
		}
		if (resp == nil) == (err == nil) {
			t.Fatalf("response %v and error %v: want exactly one", resp, err)
		}
		if resp != nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		if len(srv.at) == 0 {
			t.Fatalf("no attempt sent: %v", err)
		}
		key := srv.keys[0]
		for i, keys := range srv.keys {
			if len(keys) != 1 || keys[0] != key[0] {
				t.Fatalf("attempt %d carried keys %q, the first %q: want one, the same", i, keys, key)
			}
		}
		if given != "" && key[0] != given {
			t.Fatalf("sent key %q, the caller gave %q", key[0], given)
		}
		if m := int(maxAttempts % 16); m > 0 && len(srv.at) > m {
			t.Fatalf("%d attempts, MaxAttempts %d", len(srv.at), m)
		}
		for i, at := range srv.at {
			if at.After(start.Add(budget)) {
				t.Fatalf("attempt %d started %s after the first, budget %s", i, at.Sub(start), budget)
			}
			if i > 0 && !at.After(srv.at[i-1]) {
				t.Fatalf("attempt %d sent without a pause after the one before (waits %v)", i, s.recorded())
			}
		}
	})
}
