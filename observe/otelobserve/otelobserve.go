// Package otelobserve reports idemkit outcomes to OpenTelemetry. An
// [Observer] sets attributes on the span of the guarded request, the one in
// the context the guard was given (by otelhttp or the Lambda
// instrumentation, for instance). It also records counters and a latency
// histogram per outcome.
//
//	o, err := otelobserve.New(otelobserve.Config{}) // the global MeterProvider
//	if err != nil {
//		return err
//	}
//	g, err := idemkit.New(idemkit.Config{Store: store, Observer: observe.Multi(observe.Logger{}, o)})
//
// The key and the tenant never leave in clear unless Config says so. The
// span gets a hash of the two, the same on every retry of one request and
// different across tenants. Metrics carry the outcome and the fixed
// Config.Attributes only, never tenants, keys or concrete paths, which
// would make one series per value.
//
// The package is its own Go module, so that depending on idemkit does not
// bring in OpenTelemetry.
package otelobserve

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/idemkit/observe"
)

// The span attributes an Observer sets.
const (
	AttrOutcome    = "idemkit.outcome"     // the event kind: executed, replayed, conflict, ...
	AttrReplayed   = "idemkit.replayed"    // whether a stored response was returned
	AttrOperation  = "idemkit.operation"   // "POST /orders"
	AttrKeyHash    = "idemkit.key.hash"    // see Config.KeyHashSecret
	AttrStatus     = "idemkit.status"      // the status executed or replayed, when there is one
	AttrStoreCalls = "idemkit.store.calls" // store round trips of the request
	AttrKey        = "idemkit.key"         // only with Config.RecordKey
	AttrTenant     = "idemkit.tenant"      // only with Config.RecordTenant
)

// The instruments an Observer records, each with the attribute
// idemkit.outcome and Config.Attributes.
const (
	MetricRequests   = "idemkit.requests"         // counter, one per guarded request
	MetricDuration   = "idemkit.request.duration" // histogram, seconds, the whole guarded call
	MetricStoreCalls = "idemkit.store.calls"      // counter, store round trips
	MetricReadUnits  = "idemkit.store.read_units"
	MetricWriteUnits = "idemkit.store.write_units"
)

// MeterName is the instrumentation scope of the instruments.
const MeterName = "github.com/idemkit/idemkit/observe/otelobserve"

// durationBuckets are the histogram's bounds, in seconds: OpenTelemetry's
// HTTP duration buckets.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// Config configures New. Its zero value records to the global
// MeterProvider and keeps the key and the tenant out of the span.
type Config struct {
	// MeterProvider creates the instruments. Nil: otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Attributes are added to every measurement: fixed dimensions of your
	// own, such as a stage (the service's name belongs to the resource).
	Attributes []attribute.KeyValue
	// KeyHashSecret, when set, makes idemkit.key.hash an HMAC-SHA256 of
	// the tenant and key under it, which nobody without it can compute.
	// Without it the hash is a plain SHA-256, from which anyone who knows
	// the tenant can find a short or guessable key (order-1).
	KeyHashSecret []byte
	// RecordKey sets idemkit.key, the key in clear, on the span.
	RecordKey bool
	// RecordTenant sets idemkit.tenant, the tenant in clear, on the span.
	RecordTenant bool
}

// Observer is an observe.Observer reporting to OpenTelemetry. It is safe
// for concurrent use.
type Observer struct {
	cfg      Config
	requests metric.Int64Counter
	duration metric.Float64Histogram
	calls    metric.Int64Counter
	read     metric.Float64Counter
	write    metric.Float64Counter
}

// New returns an Observer recording with cfg's MeterProvider, or the
// error of creating an instrument.
func New(cfg Config) (*Observer, error) {
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(MeterName)
	o := &Observer{cfg: cfg}
	var err error
	if o.requests, err = m.Int64Counter(MetricRequests, metric.WithUnit("{request}"),
		metric.WithDescription("Guarded requests, by outcome.")); err != nil {
		return nil, err
	}
	if o.duration, err = m.Float64Histogram(MetricDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of the guarded call, by outcome."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if o.calls, err = m.Int64Counter(MetricStoreCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Idempotency store round trips, by outcome.")); err != nil {
		return nil, err
	}
	if o.read, err = m.Float64Counter(MetricReadUnits, metric.WithUnit("{unit}"),
		metric.WithDescription("Read capacity units the store consumed, by outcome.")); err != nil {
		return nil, err
	}
	if o.write, err = m.Float64Counter(MetricWriteUnits, metric.WithUnit("{unit}"),
		metric.WithDescription("Write capacity units the store consumed, by outcome.")); err != nil {
		return nil, err
	}
	return o, nil
}

// Observe implements observe.Observer.
func (o *Observer) Observe(ctx context.Context, e observe.Event) {
	outcome := attribute.String(AttrOutcome, string(e.Kind))
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		attrs := []attribute.KeyValue{
			outcome,
			attribute.Bool(AttrReplayed, e.Kind == observe.EventReplayed),
			attribute.String(AttrOperation, e.Operation),
			attribute.Int(AttrStoreCalls, e.Usage.Calls),
		}
		if e.Key != "" {
			attrs = append(attrs, attribute.String(AttrKeyHash, o.KeyHash(e.Tenant, e.Key)))
		}
		if e.Status != 0 {
			attrs = append(attrs, attribute.Int(AttrStatus, e.Status))
		}
		if o.cfg.RecordKey {
			attrs = append(attrs, attribute.String(AttrKey, e.Key))
		}
		if o.cfg.RecordTenant {
			attrs = append(attrs, attribute.String(AttrTenant, e.Tenant))
		}
		span.SetAttributes(attrs...)
	}
	set := metric.WithAttributeSet(attribute.NewSet(append([]attribute.KeyValue{outcome}, o.cfg.Attributes...)...))
	o.requests.Add(ctx, 1, set)
	o.duration.Record(ctx, e.Duration.Seconds(), set)
	o.calls.Add(ctx, int64(e.Usage.Calls), set)
	o.read.Add(ctx, e.Usage.ReadUnits, set)
	o.write.Add(ctx, e.Usage.WriteUnits, set)
}

// KeyHash returns the idemkit.key.hash of a key of tenant. It is the first
// 16 bytes, in hex, of the SHA-256 of the tenant and key, each preceded by
// its length. With Config.KeyHashSecret, it is an HMAC-SHA256 under the
// secret instead.
func (o *Observer) KeyHash(tenant, key string) string {
	var h hash.Hash
	if o.cfg.KeyHashSecret != nil {
		h = hmac.New(sha256.New, o.cfg.KeyHashSecret)
	} else {
		h = sha256.New()
	}
	var n [8]byte
	for _, s := range []string{tenant, key} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
