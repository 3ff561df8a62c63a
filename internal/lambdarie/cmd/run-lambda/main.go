// Command run-lambda serves the orders example as deployed, locally: the
// bootstrap under aws-lambda-rie in K sandboxes behind an HTTP API front
// with a JWT authorizer (package lambdarie), against DynamoDB Local where
// java is installed, else dynalite. `make run-lambda` builds what it needs
// and runs it:
//
//	run-lambda -bootstrap bin/host/bootstrap -rie bin/aws-lambda-rie [-addr 127.0.0.1:3000] [-sandboxes 4]
//
// It prints the URL, the server used, and bearer tokens for alice and bob
// signed by a key it generated (the authorizer accepts no other). Ctrl-C
// stops everything.
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
	"syscall"
	"time"

	"github.com/idemkit/idemkit/internal/dynalite"
	"github.com/idemkit/idemkit/internal/lambdarie"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "run-lambda:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("addr", "127.0.0.1:3000", "listen address of the HTTP API")
	bootstrap := flag.String("bootstrap", "bin/host/bootstrap", "the function's bootstrap (make build-api BUILD_ARCH=<host>)")
	rie := flag.String("rie", "bin/aws-lambda-rie", "the aws-lambda-rie binary")
	sandboxes := flag.Int("sandboxes", 4, "sandboxes running the function, one invocation each at a time")
	endpoint := flag.String("endpoint", "", "a running DynamoDB endpoint; empty: start DynamoDB Local (java), else dynalite")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	server := "the endpoint given"
	if *endpoint == "" {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		s, err := dynalite.StartDynamoDBLocal(sctx)
		server = "DynamoDB Local"
		if errors.Is(err, dynalite.ErrNoJava) {
			fmt.Println("run-lambda: java is not on PATH: dynalite instead of DynamoDB Local")
			s, err = dynalite.Start(sctx)
			server = "dynalite"
		}
		cancel()
		if err != nil {
			return err
		}
		defer s.Stop()
		*endpoint = s.Endpoint()
	}
	st, err := lambdarie.StartStack(ctx, lambdarie.StackConfig{RIE: *rie, Bootstrap: *bootstrap, Sandboxes: *sandboxes,
		Endpoint: *endpoint, Output: os.Stderr})
	if err != nil {
		return err
	}
	defer st.Stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String()
	alice, bob := st.Issuer.Token("alice", 12*time.Hour, nil), st.Issuer.Token("bob", 12*time.Hour, nil)
	fmt.Printf("orders API (the bootstrap under aws-lambda-rie, %d sandboxes) on %s; DynamoDB: %s at %s\n", *sandboxes, url, server, *endpoint)
	fmt.Printf(`
Tokens (12 h; iss %s, aud %s):

  ALICE=%s
  BOB=%s

  curl -i %s/orders -H "Authorization: Bearer $ALICE" -H 'Content-Type: application/json' -H 'Idempotency-Key: order-1' -d '{"sku":"book-42","quantity":1,"amount_cents":1999,"currency":"EUR"}'

Ctrl-C stops it.

`, st.Issuer.URL, st.Issuer.Audience, alice, bob, url)
	srv := &http.Server{Handler: st.Front, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
