package otelobserve_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
	"github.com/idemkit/idemkit/observe/otelobserve"
)

// traced is an httpmw-guarded API whose every request runs in a span
// recorded by spans, the guard reporting to an Observer of cfg whose
// metrics reader collects. The tenant is the X-Tenant header.
type traced struct {
	spans   *tracetest.SpanRecorder
	reader  *sdkmetric.ManualReader
	handler http.Handler
	obs     *otelobserve.Observer
}

func newTraced(t *testing.T, cfg otelobserve.Config) *traced {
	t.Helper()
	tr := &traced{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tr.spans))
	cfg.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(tr.reader))
	o, err := otelobserve.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr.obs = o
	g := testguard.New(t, idemkit.Config{Store: memstore.New(), Observer: o})
	guard := httpmw.New(g, httpmw.Config{Tenant: func(_ context.Context, r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil }})
	api := guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":"ord_1"}`))
	}))
	tr.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tp.Tracer("test").Start(r.Context(), "POST /orders")
		defer span.End()
		api.ServeHTTP(w, r.WithContext(ctx))
	})
	return tr
}

// send serves one request, its span ended when it returns.
func (tr *traced) send(tenant, key, body string) int {
	req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("X-Tenant", tenant)
	rec := httptest.NewRecorder()
	tr.handler.ServeHTTP(rec, req)
	return rec.Code
}

func attrs(s sdktrace.ReadOnlySpan) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// TestSpanAttributes: each guarded request's span gets its outcome,
// whether it was replayed, the operation, the status and a hash of the
// key, the same on every retry and another for another tenant; the key
// and the tenant are nowhere in clear.
func TestSpanAttributes(t *testing.T) {
	tr := newTraced(t, otelobserve.Config{})
	const key = "order-1"
	for _, r := range []struct{ tenant, body string }{
		{"alice", `{"sku":"a"}`}, {"alice", `{"sku":"a"}`}, {"alice", `{"sku":"b"}`}, {"bob", `{"sku":"a"}`},
	} {
		tr.send(r.tenant, key, r.body)
	}
	spans := tr.spans.Ended()
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 4", len(spans))
	}
	for i, want := range []struct {
		outcome  string
		replayed bool
		status   int64
	}{
		{"executed", false, 201}, {"replayed", true, 201}, {"mismatch", false, 0}, {"executed", false, 201},
	} {
		a := attrs(spans[i])
		if a[otelobserve.AttrOutcome].AsString() != want.outcome || a[otelobserve.AttrReplayed].AsBool() != want.replayed ||
			a[otelobserve.AttrOperation].AsString() != "POST /orders" || a[otelobserve.AttrStatus].AsInt64() != want.status {
			t.Errorf("span %d: %v, want outcome %s, replayed %v, status %d", i, a, want.outcome, want.replayed, want.status)
		}
		if a[otelobserve.AttrStoreCalls].AsInt64() < 1 {
			t.Errorf("span %d: %d store calls", i, a[otelobserve.AttrStoreCalls].AsInt64())
		}
		for k, v := range a {
			if s := v.String(); strings.Contains(s, key) || strings.Contains(s, "alice") || strings.Contains(s, "bob") {
				t.Errorf("span %d: %s = %q holds the key or a tenant in clear", i, k, s)
			}
		}
		if _, ok := a[otelobserve.AttrKey]; ok {
			t.Errorf("span %d has %s without RecordKey", i, otelobserve.AttrKey)
		}
		if _, ok := a[otelobserve.AttrTenant]; ok {
			t.Errorf("span %d has %s without RecordTenant", i, otelobserve.AttrTenant)
		}
	}
	h := func(i int) string { return attrs(spans[i])[otelobserve.AttrKeyHash].AsString() }
	if h(0) == "" || h(0) != h(1) || h(0) != h(2) {
		t.Errorf("key hashes %q %q %q: want one for every request of one tenant and key", h(0), h(1), h(2))
	}
	if h(3) == h(0) {
		t.Errorf("another tenant's key has the same hash %q", h(3))
	}
	if h(0) != tr.obs.KeyHash("alice", key) || len(h(0)) != 32 {
		t.Errorf("span hash %q, KeyHash %q", h(0), tr.obs.KeyHash("alice", key))
	}
}

// TestRecordInClear: RecordKey and RecordTenant put the key and the
// tenant on the span.
func TestRecordInClear(t *testing.T) {
	tr := newTraced(t, otelobserve.Config{RecordKey: true, RecordTenant: true})
	tr.send("alice", "order-1", `{}`)
	a := attrs(tr.spans.Ended()[0])
	if a[otelobserve.AttrKey].AsString() != "order-1" || a[otelobserve.AttrTenant].AsString() != "alice" {
		t.Errorf("attributes %v, want the key and the tenant", a)
	}
}

// TestKeyHashSecret: with a secret the hash is the HMAC-SHA256 under it
// of the length-prefixed tenant and key, not the plain hash.
func TestKeyHashSecret(t *testing.T) {
	secret := []byte("0123456789abcdef")
	plain, err := otelobserve.New(otelobserve.Config{})
	if err != nil {
		t.Fatal(err)
	}
	keyed, err := otelobserve.New(otelobserve.Config{KeyHashSecret: secret})
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, secret)
	for _, s := range []string{"alice", "order-1"} {
		binary.Write(m, binary.BigEndian, uint64(len(s)))
		m.Write([]byte(s))
	}
	want := hex.EncodeToString(m.Sum(nil)[:16])
	if got := keyed.KeyHash("alice", "order-1"); got != want || got == plain.KeyHash("alice", "order-1") {
		t.Errorf("KeyHash with a secret = %q, want %q (and not the plain %q)", got, want, plain.KeyHash("alice", "order-1"))
	}
	// Length prefixes: moving bytes between tenant and key changes it.
	if plain.KeyHash("ab", "c") == plain.KeyHash("a", "bc") {
		t.Error("KeyHash(ab, c) == KeyHash(a, bc)")
	}
}

// TestMetricsPerOutcome: a counter, a duration histogram and store usage
// per outcome, each measurement carrying the outcome and the configured
// attributes only.
func TestMetricsPerOutcome(t *testing.T) {
	stage := attribute.String("deployment.environment.name", "test")
	tr := newTraced(t, otelobserve.Config{Attributes: []attribute.KeyValue{stage}})
	tr.send("alice", "order-1", `{"sku":"a"}`)
	tr.send("alice", "order-1", `{"sku":"a"}`)
	tr.send("alice", "order-1", `{"sku":"b"}`)
	tr.send("bob", "order-1", `{"sku":"a"}`)
	// Outside a span: metrics only.
	tr.obs.Observe(context.Background(), observe.Event{Kind: observe.EventConflict, Tenant: "t", Operation: "POST /x", Key: "k"})

	var rm metricdata.ResourceMetrics
	if err := tr.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]float64{} // metric -> outcome -> sum or count
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelobserve.MeterName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			got[m.Name] = map[string]float64{}
			check := func(set attribute.Set) string {
				if set.Len() != 2 {
					t.Errorf("%s: attributes %v, want the outcome and the stage", m.Name, set.ToSlice())
				}
				if v, ok := set.Value(stage.Key); !ok || v != stage.Value {
					t.Errorf("%s: no %s", m.Name, stage.Key)
				}
				v, _ := set.Value(otelobserve.AttrOutcome)
				return v.AsString()
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					got[m.Name][check(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					got[m.Name][check(p.Attributes)] = p.Value
				}
			case metricdata.Histogram[float64]:
				if m.Unit != "s" {
					t.Errorf("%s unit %q, want s", m.Name, m.Unit)
				}
				for _, p := range d.DataPoints {
					got[m.Name][check(p.Attributes)] = float64(p.Count)
				}
			default:
				t.Errorf("%s: data %T", m.Name, m.Data)
			}
		}
	}
	want := map[string]float64{"executed": 2, "replayed": 1, "mismatch": 1, "conflict": 1}
	for _, name := range []string{otelobserve.MetricRequests, otelobserve.MetricDuration} {
		for outcome, n := range want {
			if got[name][outcome] != n {
				t.Errorf("%s{outcome=%s} = %v, want %v (all: %v)", name, outcome, got[name][outcome], n, got[name])
			}
		}
	}
	if got[otelobserve.MetricStoreCalls]["executed"] < 2 {
		t.Errorf("%s{executed} = %v, want a claim and a completion per execution", otelobserve.MetricStoreCalls, got[otelobserve.MetricStoreCalls]["executed"])
	}
	for _, name := range []string{otelobserve.MetricReadUnits, otelobserve.MetricWriteUnits} {
		if _, ok := got[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
}
