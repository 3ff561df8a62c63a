// Command local serves the orders example on 127.0.0.1 without an AWS
// account, Docker or network: each HTTP request becomes the API Gateway
// (HTTP API, payload 2.0) event the deployed function would get, and is
// passed to the very handler cmd/lambda gives lambda.Start.
//
//	cd examples && go run ./orders/cmd/local [-addr 127.0.0.1:3000] [-timeout 29s] [-concurrency 64]
//
// The first line on stdout names the URL (with -addr 127.0.0.1:0, the
// port chosen). Logs go to stderr. The environment selects the stores
// (see orders.FromEnv): memory by default; IDEMKIT_STORE=dynamodb with
// AWS_ENDPOINT_URL_DYNAMODB, AWS_REGION and IDEMKIT_CREATE_TABLE=1 for a
// local DynamoDB-compatible server. SIGINT or SIGTERM shuts it down,
// letting running requests finish.
//
// Limits (orders.NewLocalServer, orders.Local): headers within 10 s and
// 64 KB, a whole request within 30 s, keep-alive connections closed after
// 30 s idle, bodies up to 10 MB, and -concurrency invocations at a time
// (ORDERS_LOCAL_CONCURRENCY, default 64: the function's concurrency, the
// sandboxes Lambda would run at once; a request past it gets 429 once its
// body is read). Deployed, Lambda takes events of at most 6 MB, the body
// included (base64-encoded when binary); the local server does not
// enforce that (docs/WALKTHROUGH.md, Limits of the local server).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/idemkit/idemkit/examples/orders"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "orders:", err)
		os.Exit(1)
	}
}

func run() error {
	port := os.Getenv("PORT")
	if port == "" {
		port = "3000"
	}
	addr := flag.String("addr", "127.0.0.1:"+port, "listen address; port 0 picks a free one")
	timeout := flag.Duration("timeout", orders.DefaultLocalTimeout, "deadline of each invocation, like the function's Timeout")
	defConcurrency, err := concurrencyFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	concurrency := flag.Int("concurrency", defConcurrency, "invocations run at once, the function's concurrency; more get 429 (default from "+orders.EnvLocalConcurrency+")")
	flag.Parse()
	if *concurrency < 1 {
		return fmt.Errorf("-concurrency %d: want 1 or more", *concurrency)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	opts, store, err := orders.FromEnv(ctx, os.Getenv, logger)
	if err != nil {
		return err
	}
	h, err := orders.Handler(opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String()
	fmt.Printf("orders example API listening on %s (store: %s)\n", url, store)
	fmt.Printf(`
Create an order (run it twice: same id, Idempotent-Replayed: true):

  curl -i %[1]s/orders -H 'Authorization: Bearer alice' -H 'Content-Type: application/json' -H 'Idempotency-Key: order-1' -d '{"sku":"book-42","quantity":1,"amount_cents":1999,"currency":"EUR"}'

Reuse the key with another body (422):

  curl -i %[1]s/orders -H 'Authorization: Bearer alice' -H 'Content-Type: application/json' -H 'Idempotency-Key: order-1' -d '{"sku":"book-42","quantity":2,"amount_cents":3998,"currency":"EUR"}'

More in docs/WALKTHROUGH.md. Ctrl-C stops the server.

`, url)

	srv := orders.NewLocalServer(&orders.Local{Handler: h, Timeout: *timeout, Logger: logger, Concurrency: *concurrency}, *timeout, logger)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	stop()
	logger.Info("shutting down: waiting for running requests")
	sctx, cancel := context.WithTimeout(context.Background(), *timeout+5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Info("stopped")
	return nil
}

// concurrencyFromEnv returns -concurrency's default: ORDERS_LOCAL_CONCURRENCY
// when set (a whole number, 1 or more), else orders.DefaultLocalConcurrency.
func concurrencyFromEnv(getenv func(string) string) (int, error) {
	v := getenv(orders.EnvLocalConcurrency)
	if v == "" {
		return orders.DefaultLocalConcurrency, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a whole number, 1 or more", orders.EnvLocalConcurrency, v)
	}
	return n, nil
}
