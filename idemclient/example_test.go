package idemclient_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/idemclient"
	"github.com/idemkit/idemkit/memstore"
)

// ordersAPI is an idemkit-guarded API for the examples: POST /orders
// answers 201 with a new order id.
func ordersAPI() *httptest.Server {
	var n atomic.Int64
	g, err := idemkit.New(idemkit.Config{Store: memstore.New()})
	if err != nil {
		log.Fatal(err)
	}
	guard := httpmw.New(g, httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return "alice", nil }})
	return httptest.NewServer(guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":"ord_%d"}`, n.Add(1))
	})))
}

// A client whose POST and PATCH requests are safe to retry: each gets an
// Idempotency-Key, and a lost answer is retried under it.
func Example() {
	srv := ordersAPI()
	defer srv.Close()

	// Retention is the server's record retention (Policy.RecordRetention).
	t, err := idemclient.New(idemclient.Config{Retention: 7 * 24 * time.Hour, Budget: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Transport: t}
	resp, err := client.Post(srv.URL+"/orders", "application/json", strings.NewReader(`{"sku":"book-42"}`))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body), idemclient.Replayed(resp))
	// Output: 201 {"id":"ord_1"} false
}

// New refuses a retry budget longer than the server keeps its records: a
// retry after that would be a new request.
func ExampleNew() {
	_, err := idemclient.New(idemclient.Config{Retention: 24 * time.Hour, Budget: 48 * time.Hour})
	fmt.Println(errors.Is(err, idemclient.ErrBudgetTooLong))
	// Output: true
}

// A request that must survive a crash: store its key before sending it,
// and send it again under that key after a restart. The second send gets
// the first answer, replayed; nothing runs twice.
func ExampleWithKey() {
	srv := ordersAPI()
	defer srv.Close()
	t, err := idemclient.New(idemclient.Config{})
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Transport: t}

	key := idemclient.NewKey() // store it with the order before sending
	for range 2 {              // the second time: after a restart
		ctx := idemclient.WithKey(context.Background(), key)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/orders", strings.NewReader(`{"sku":"book-42"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body), "replayed:", idemclient.Replayed(resp))
	}
	// Output:
	// 201 {"id":"ord_1"} replayed: false
	// 201 {"id":"ord_1"} replayed: true
}

// Replayed tells a replay from a first answer; the response is the
// server's, unchanged.
func ExampleReplayed() {
	srv := ordersAPI()
	defer srv.Close()
	t, _ := idemclient.New(idemclient.Config{})
	client := &http.Client{Transport: t}
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", "order-7") // a key of the caller's own
		resp, err := client.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		resp.Body.Close()
		fmt.Printf("%v %q\n", idemclient.Replayed(resp), resp.Header.Get("Idempotent-Replayed"))
	}
	// Output:
	// false ""
	// true "true"
}

// A key reused for a different request is not retried: the error says
// what happened and what to check.
func ExampleProblemError() {
	srv := ordersAPI()
	defer srv.Close()
	t, _ := idemclient.New(idemclient.Config{})
	client := &http.Client{Transport: t}
	ctx := idemclient.WithKey(context.Background(), idemclient.NewKey())
	for _, body := range []string{`{"sku":"book-42"}`, `{"sku":"book-43"}`} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/orders", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		var pe *idemclient.ProblemError
		switch {
		case errors.As(err, &pe):
			fmt.Println(pe.Problem.Status, pe.Problem.Type, errors.Is(err, idemclient.ErrKeyReused))
		case err != nil:
			log.Fatal(err)
		default:
			resp.Body.Close()
			fmt.Println(resp.StatusCode)
		}
	}
	// Output:
	// 201
	// 422 https://idemkit.dev/problems/fingerprint-mismatch true
}

// A request whose retries ran out with its outcome open: keep the key,
// and retry under it later, before RetryBefore.
func ExampleGiveUpError() {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer down.Close()
	t, _ := idemclient.New(idemclient.Config{MaxAttempts: 3, BaseDelay: time.Millisecond})
	client := &http.Client{Transport: t}
	_, err := client.Post(down.URL+"/orders", "application/json", strings.NewReader(`{}`))
	var ge *idemclient.GiveUpError
	if errors.As(err, &ge) {
		// Store ge.Key with the request; send it again with WithKey.
		fmt.Println(ge.Attempts, ge.Status, errors.Is(err, idemclient.ErrBudgetSpent), time.Until(ge.RetryBefore) > 6*24*time.Hour)
	}
	// Output: 3 502 true true
}
