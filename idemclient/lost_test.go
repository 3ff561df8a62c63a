package idemclient_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/idemkit/idemkit/idemclient"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/testclock"
)

// TestLostResponseRetriedWithSameKey: the server runs the request and its
// answer is lost on the way back (the connection closed before the
// response, or cut in the middle of its body). The client retries with the
// same key and gets the first answer, replayed; the handler ran once.
func TestLostResponseRetriedWithSameKey(t *testing.T) {
	for _, tc := range []struct {
		name    string
		dropped int
		cut     bool
	}{
		{"connection closed before the response", 1, false},
		{"body cut short", 1, true},
		{"two answers lost", 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &api{}
			backend := a.start(t)
			proxy := (&dropFirst{backend: backend.URL, n: tc.dropped, cut: tc.cut}).start(t)
			c, s := newClient(t, a.clock, idemclient.Config{})
			resp, body, err := post(context.Background(), c, proxy.URL+"/orders", `{"sku":"book-42"}`)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 201 || body != `{"id":"ord_1"}` || !idemclient.Replayed(resp) {
				t.Fatalf("got %d %s replayed=%v, want the first answer replayed", resp.StatusCode, body, idemclient.Replayed(resp))
			}
			if resp.Header.Get("Location") != "/orders/ord_1" || resp.Header.Get(idemclient.ReplayedHeader) != "true" {
				t.Errorf("response headers changed: %v", resp.Header)
			}
			if n := a.runs.Load(); n != 1 {
				t.Errorf("handler ran %d times, want 1", n)
			}
			keys, _ := a.seen()
			if len(keys) != tc.dropped+1 || keys[0] == "" || len(slices.Compact(slices.Clone(keys))) != 1 {
				t.Errorf("keys sent %q, want %d attempts under one key", keys, tc.dropped+1)
			}
			if got := len(s.recorded()); got != tc.dropped {
				t.Errorf("%d waits, want %d", got, tc.dropped)
			}
		})
	}
}

// TestAttemptTimeoutRetried: an attempt whose answer does not come within
// AttemptTimeout is retried with the same key; the retry is answered from
// the record of the first, which ran.
func TestAttemptTimeoutRetried(t *testing.T) {
	release := make(chan struct{})
	a := &api{}
	a.handler = func(w http.ResponseWriter, r *http.Request) {
		if a.runs.Add(1) == 1 {
			<-r.Context().Done() // held until the client gives up on it...
		}
		w.WriteHeader(http.StatusCreated) // ...and its outcome still stored
		w.Write([]byte(`{"id":"ord_1"}`))
		if r.Context().Err() != nil {
			close(release)
		}
	}
	srv := a.start(t)
	timeout := dynalite.Scale(300 * time.Millisecond)
	c, s := newClient(t, testclock.New(), idemclient.Config{AttemptTimeout: timeout})
	s.hook = func(time.Duration) { <-release } // retry once the first run is stored
	resp, body, err := post(context.Background(), c, srv.URL+"/orders", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 201 || body != `{"id":"ord_1"}` || !idemclient.Replayed(resp) {
		t.Fatalf("got %d %s replayed=%v, want the first run's answer replayed", resp.StatusCode, body, idemclient.Replayed(resp))
	}
	if n := a.runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}
