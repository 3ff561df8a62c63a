package idemclient_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemkit/idemkit/idemclient"
)

// TestBodyReplayedForEachRetry: each retry sends the whole body again,
// from Request.GetBody, so that the server's fingerprint matches and it
// replays instead of answering 422.
func TestBodyReplayedForEachRetry(t *testing.T) {
	a := &api{}
	backend := a.start(t)
	proxy := (&dropFirst{backend: backend.URL, n: 2}).start(t)
	c, _ := newClient(t, a.clock, idemclient.Config{})
	const body = `{"sku":"book-42","quantity":1}`
	req, err := http.NewRequest(http.MethodPost, proxy.URL+"/orders", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	var replays atomic.Int32
	getBody := req.GetBody
	req.GetBody = func() (io.ReadCloser, error) {
		replays.Add(1)
		return getBody()
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 || !idemclient.Replayed(resp) {
		t.Fatalf("got %d replayed=%v, want the first answer replayed", resp.StatusCode, idemclient.Replayed(resp))
	}
	_, bodies := a.seen()
	if len(bodies) != 3 {
		t.Fatalf("server got %d requests, want 3", len(bodies))
	}
	for i, b := range bodies {
		if b != body {
			t.Errorf("attempt %d sent %q, want %q", i+1, b, body)
		}
	}
	if n := replays.Load(); n < 2 {
		t.Errorf("GetBody called %d times, want once per retry (2)", n)
	}
	if n := a.runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
}

type closeCounter struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeCounter) Close() error { c.closed.Store(true); return nil }

// TestBodyNotReplayable: a guarded request whose body has no GetBody is
// refused before anything is sent, its body closed; so is a key the
// server could not read as one. A body-less request needs no GetBody.
func TestBodyNotReplayable(t *testing.T) {
	a := &api{}
	srv := a.start(t)
	c, _ := newClient(t, a.clock, idemclient.Config{})
	for _, tc := range []struct {
		name string
		key  string
		want error
	}{
		{"no GetBody", "", idemclient.ErrBodyNotReplayable},
		{"key with a comma", "a,b", idemclient.ErrKeyNotSendable},
		{"key with a newline", "a\nb", idemclient.ErrKeyNotSendable},
		{"key with a space at the end", "ab ", idemclient.ErrKeyNotSendable},
		{"key not ASCII", "clé", idemclient.ErrKeyNotSendable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := &closeCounter{Reader: strings.NewReader(`{}`)}
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/orders", body)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tc.key != "" {
				ctx = idemclient.WithKey(ctx, tc.key)
				req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(`{}`)), nil }
			}
			_, err = c.Do(req.WithContext(ctx))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !body.closed.Load() {
				t.Error("the request body was not closed")
			}
		})
	}
	if keys, _ := a.seen(); len(keys) != 0 {
		t.Errorf("server got %d requests, want none", len(keys))
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", http.NoBody)
	resp, err := c.Do(req)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("body-less POST: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestGetBodyFails: a retry whose body GetBody cannot give is not sent;
// the client gives up, its outcome open, with GetBody's error.
func TestGetBodyFails(t *testing.T) {
	a := &api{}
	backend := a.start(t)
	proxy := (&dropFirst{backend: backend.URL, n: 1}).start(t)
	c, _ := newClient(t, a.clock, idemclient.Config{})
	req, err := http.NewRequest(http.MethodPost, proxy.URL+"/orders", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	gone := errors.New("spool file removed")
	req.GetBody = func() (io.ReadCloser, error) { return nil, gone }
	_, err = c.Do(req)
	var ge *idemclient.GiveUpError
	if !errors.As(err, &ge) || !errors.Is(err, gone) || ge.Attempts != 1 {
		t.Fatalf("err = %v, want a GiveUpError with GetBody's error after 1 attempt", err)
	}
}
