package idemclient_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/idemclient"
)

// TestConcurrentDuplicatesRunOnce: copies of one request (one key, sent
// at once, as after a double submit) run once. A copy that finds the first
// still running gets 409 in-flight, waits no longer than its Retry-After,
// and then gets the first answer, replayed.
func TestConcurrentDuplicatesRunOnce(t *testing.T) {
	const copies = 4
	entered, gate := make(chan struct{}), make(chan struct{})
	a := &api{}
	a.handler = func(w http.ResponseWriter, r *http.Request) {
		a.runs.Add(1)
		close(entered) // a second run would panic here
		<-gate
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":"ord_1"}`))
	}
	srv := a.start(t)
	c, s := newClient(t, a.clock, idemclient.Config{})
	firstDone := make(chan struct{})
	var once sync.Once
	s.hook = func(time.Duration) {
		// A copy got 409 in-flight: let the first finish, then retry.
		once.Do(func() { close(gate) })
		<-firstDone
	}
	ctx := idemclient.WithKey(context.Background(), idemclient.NewKey())
	type result struct {
		status   int
		body     string
		replayed bool
		err      error
	}
	results := make([]result, copies)
	send := func(i int) {
		resp, body, err := post(ctx, c, srv.URL+"/orders", `{"sku":"book-42"}`)
		results[i] = result{err: err}
		if err == nil {
			results[i] = result{resp.StatusCode, body, idemclient.Replayed(resp), nil}
		}
	}
	go func() { defer close(firstDone); send(0) }()
	<-entered
	var wg sync.WaitGroup
	for i := 1; i < copies; i++ {
		wg.Go(func() { send(i) })
	}
	wg.Wait()
	<-firstDone
	for i, r := range results {
		if r.err != nil || r.status != 201 || r.body != `{"id":"ord_1"}` || r.replayed != (i > 0) {
			t.Errorf("copy %d: %+v, want 201 ord_1 (replayed: %v)", i, r, i > 0)
		}
	}
	if n := a.runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
	waits := s.recorded()
	if len(waits) == 0 {
		t.Fatal("no copy waited: none met the first in flight")
	}
	for _, d := range waits {
		// The backoff (100 ms, jittered) is below the lease's Retry-After.
		if d != 75*time.Millisecond {
			t.Errorf("waited %s after 409 in-flight, want the first backoff, 75ms", d)
		}
	}
}

// TestInFlightWaitCappedByRetryAfter: a 409 in-flight is retried after
// the backoff or its Retry-After, whichever is shorter: Retry-After is
// when the first request's lease ends at the latest.
func TestInFlightWaitCappedByRetryAfter(t *testing.T) {
	entered, gate, firstDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	a := &api{policy: idemkit.Policy{MaxRetryAfter: time.Second}}
	a.handler = func(w http.ResponseWriter, r *http.Request) {
		a.runs.Add(1)
		close(entered)
		<-gate
		w.WriteHeader(http.StatusCreated)
	}
	srv := a.start(t)
	c, s := newClient(t, a.clock, idemclient.Config{BaseDelay: 10 * time.Second})
	s.hook = func(time.Duration) { close(gate); <-firstDone }
	ctx := idemclient.WithKey(context.Background(), idemclient.NewKeyAt(a.clock.Now()))
	go func() { defer close(firstDone); post(ctx, c, srv.URL+"/orders", `{}`) }()
	<-entered
	resp, _, err := post(ctx, c, srv.URL+"/orders", `{}`)
	if err != nil || resp.StatusCode != 201 || !idemclient.Replayed(resp) {
		t.Fatalf("got %v %v, want the first answer replayed", resp, err)
	}
	if w := s.recorded(); len(w) != 1 || w[0] != time.Second {
		t.Errorf("waits %v, want Retry-After's 1s, not the 7.5s backoff", w)
	}
}
