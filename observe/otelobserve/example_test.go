package otelobserve_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
	"github.com/idemkit/idemkit/observe/otelobserve"
)

// The observer beside the slog one, recording to the global
// MeterProvider your OpenTelemetry setup installed, with a fixed
// dimension and a secret that keeps the key hash from being guessed.
func ExampleNew() {
	o, err := otelobserve.New(otelobserve.Config{
		Attributes:    []attribute.KeyValue{attribute.String("deployment.environment.name", "prod")},
		KeyHashSecret: []byte("at least 16 random bytes, kept secret"),
	})
	if err != nil {
		log.Fatal(err)
	}
	g, err := idemkit.New(idemkit.Config{Store: memstore.New(), Observer: observe.Multi(observe.Logger{}, o)})
	if err != nil {
		log.Fatal(err)
	}
	_ = g // httpmw.New(g, ...), apigw.WrapV2(g, ...)
}

// What a guarded request's span carries: its outcome, whether it was a
// replay, the status, and the key's hash, the same for the retry.
func ExampleObserver_Observe() {
	spans := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("example")
	o, _ := otelobserve.New(otelobserve.Config{MeterProvider: otel.GetMeterProvider()})
	g, _ := idemkit.New(idemkit.Config{Store: memstore.New(), Observer: o})
	api := httpmw.New(g, httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return "alice", nil }})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))

	for range 2 { // a request and its retry
		req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"sku":"book-42"}`))
		req.Header.Set("Idempotency-Key", "order-1")
		ctx, span := tracer.Start(context.Background(), "POST /orders") // otelhttp's span, in a real server
		api.ServeHTTP(httptest.NewRecorder(), req.WithContext(ctx))
		span.End()
	}
	for _, s := range spans.Ended() {
		a := map[attribute.Key]attribute.Value{}
		for _, kv := range s.Attributes() {
			a[kv.Key] = kv.Value
		}
		fmt.Println(a[otelobserve.AttrOutcome].String(), a[otelobserve.AttrReplayed].String(), a[otelobserve.AttrStatus].String(), a[otelobserve.AttrKeyHash].String())
	}
	// Output:
	// executed false 201 cdd93c91617d632c98ec5203d8891592
	// replayed true 201 cdd93c91617d632c98ec5203d8891592
}
