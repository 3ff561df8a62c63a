// Command client calls the orders example API through idemclient, the Go
// client whose retries never run a request twice:
//
//	make run                                  # in one terminal
//	cd examples && go run ./orders/cmd/client [-url http://127.0.0.1:3000] [-caller alice]
//
// It creates an order under a key it minted first (as a program that
// stores the key with its request would), sends the same request again
// under that key (as after a restart: the first answer comes back,
// replayed), pays for the order, and reuses the order's key for another
// order (422 fingerprint-mismatch: a typed error, not retried).
// docs/CLIENT.md describes the client; docs/WALKTHROUGH.md the API.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/idemclient"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "3000"
	}
	url := flag.String("url", "http://127.0.0.1:"+port, "the orders API")
	caller := flag.String("caller", "alice", "the caller (the local server's bearer token)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout, *url, *caller, idemclient.Config{}); err != nil {
		fmt.Fprintln(os.Stderr, "client:", err)
		os.Exit(1)
	}
}

// run makes the calls described above against the API at base, with a
// Transport configured by cfg, and prints what each got to out.
func run(ctx context.Context, out io.Writer, base, caller string, cfg idemclient.Config) error {
	// The example's records are kept 7 days (idemkit's default): a
	// minute of retries is well within it.
	cfg.Retention, cfg.Budget = 7*24*time.Hour, time.Minute
	t, err := idemclient.New(cfg)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: t}
	send := func(key, path, body string) (*http.Response, map[string]any, error) {
		ctx := ctx
		if key != "" {
			ctx = idemclient.WithKey(ctx, key)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+caller)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("POST %s: %d: %w", path, resp.StatusCode, err)
		}
		return resp, v, nil
	}

	// Mint the key first and store it with the order (here: a variable),
	// so that a restart can send the same request again under it.
	key := idemclient.NewKey()
	order := `{"sku":"book-42","quantity":1,"amount_cents":1999,"currency":"EUR"}`
	resp, o, err := send(key, "/orders", order)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "order %v: %d, replayed: %v\n", o["id"], resp.StatusCode, idemclient.Replayed(resp))

	resp, again, err := send(key, "/orders", order)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "the same order under the same key: %d, replayed: %v, same order: %v\n",
		resp.StatusCode, idemclient.Replayed(resp), again["id"] == o["id"])

	// No key given: the client mints one and keeps it for every retry.
	resp, p, err := send("", "/payments", fmt.Sprintf(`{"order_id":%q,"amount_cents":1999,"card":"4242424242424242"}`, o["id"]))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "payment %v: %d, %v\n", p["id"], resp.StatusCode, p["status"])

	_, _, err = send(key, "/orders", `{"sku":"book-42","quantity":2,"amount_cents":3998,"currency":"EUR"}`)
	var pe *idemclient.ProblemError
	if !errors.As(err, &pe) {
		return fmt.Errorf("another order under the first order's key: %v, want a 422", err)
	}
	fmt.Fprintf(out, "another order under the first order's key: %d %s, key reused: %v\n",
		pe.Problem.Status, strings.TrimPrefix(pe.Problem.Type, httpproblem.Base), errors.Is(err, idemclient.ErrKeyReused))
	return nil
}
