// Command lambda is the Lambda bootstrap of the orders example (runtime
// provided.al2023, arm64), deployed by template.yaml. It runs the handler
// orders.Handler builds, the same one the local server (cmd/local) calls.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/observe"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	fail := func(err error) {
		logger.Error("orders: init", "error", err.Error())
		os.Exit(1)
	}
	opts, store, err := orders.FromEnv(context.Background(), os.Getenv, logger)
	if err != nil {
		fail(err)
	}
	// One log line and one metric line per guarded request.
	opts.Observer = observe.Multi(opts.Observer, &observe.EMF{Dimensions: map[string]string{"Service": "orders"}})
	h, err := orders.Handler(opts)
	if err != nil {
		fail(err)
	}
	// sam local start-api does not run JWT authorizers: there the
	// development authorizer stands in (never in a deployed function).
	if h, err = orders.LambdaHandler(h, os.Getenv); err != nil {
		fail(err)
	}
	logger.Info("orders: ready", "store", store)
	lambda.Start(h)
}
