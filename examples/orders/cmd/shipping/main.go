// Command shipping is the Lambda bootstrap of the example's shipping
// worker (runtime provided.al2023, arm64), deployed by template.yaml on
// the shipping queue with ReportBatchItemFailures. It runs the handler
// orders.ShippingHandler builds, with the stores orders.FromEnv reads.
package main

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/observe"
)

func main() {
	logger := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	fail := func(err error) {
		logger.Error("shipping: init", "error", err.Error())
		os.Exit(1)
	}
	opts, store, err := orders.FromEnv(context.Background(), os.Getenv, logger)
	if err != nil {
		fail(err)
	}
	shipments, ok := opts.Repo.(orders.ShipmentRepo)
	if !ok {
		fail(errors.New("the orders repository keeps no shipments"))
	}
	h, err := orders.ShippingHandler(orders.WorkerOptions{
		Store: opts.Store, Shipments: shipments, Policy: opts.Policy, Logger: logger,
		// One log line and one metric line per guarded message.
		Observer: observe.Multi(opts.Observer, &observe.EMF{Dimensions: map[string]string{"Service": "shipping"}}),
	})
	if err != nil {
		fail(err)
	}
	logger.Info("shipping: ready", "store", store)
	lambda.Start(h)
}
