package observe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/observe"
)

var sample = observe.Event{
	Kind:   observe.EventExecuted,
	Tenant: "tenant-a", Operation: "POST /orders", Key: "k-1",
	Status:   201,
	Duration: 12500 * time.Microsecond,
	Handler:  10 * time.Millisecond,
	Usage:    observe.Usage{Calls: 2, ReadUnits: 0.5, WriteUnits: 2},
}

func TestEMFShape(t *testing.T) {
	for _, tc := range []struct {
		kind   observe.EventKind
		metric string
	}{
		{observe.EventExecuted, "Executed"},
		{observe.EventReplayed, "Replayed"},
		{observe.EventConflict, "Conflict"},
		{observe.EventMismatch, "Mismatch"},
		{observe.EventIndeterminate, "Indeterminate"},
		{observe.EventStoreError, "StoreError"},
		{observe.EventCancelled, "Cancelled"},
		{observe.EventCompletionFailed, "CompletionFailed"},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			var buf bytes.Buffer
			m := &observe.EMF{Writer: &buf, Dimensions: map[string]string{"Service": "orders", "Stage": "prod"},
				Clock: testclock.At(time.UnixMilli(1700000000123))}
			e := sample
			e.Kind = tc.kind
			m.Observe(context.Background(), e)
			if !strings.HasSuffix(buf.String(), "}\n") || strings.Count(buf.String(), "\n") != 1 {
				t.Fatalf("not one line: %q", buf.String())
			}
			var got struct {
				AWS struct {
					Timestamp         int64
					CloudWatchMetrics []struct {
						Namespace  string
						Dimensions [][]string
						Metrics    []struct{ Name, Unit string }
					}
				} `json:"_aws"`
			}
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			var root map[string]any
			json.Unmarshal(buf.Bytes(), &root)
			d := got.AWS.CloudWatchMetrics
			if got.AWS.Timestamp != 1700000000123 || len(d) != 1 || d[0].Namespace != "idemkit" ||
				len(d[0].Dimensions) != 1 || strings.Join(d[0].Dimensions[0], ",") != "Service,Stage" {
				t.Fatalf("metadata %+v", got.AWS)
			}
			// Every declared metric has a numeric root member; every dimension a string one.
			for _, mt := range d[0].Metrics {
				if _, ok := root[mt.Name].(float64); !ok || mt.Unit == "" {
					t.Errorf("metric %s (%s) has no numeric value: %v", mt.Name, mt.Unit, root[mt.Name])
				}
			}
			for _, dim := range d[0].Dimensions[0] {
				if _, ok := root[dim].(string); !ok {
					t.Errorf("dimension %s missing", dim)
				}
			}
			if root[tc.metric] != 1.0 || root["ConsumedWriteCapacityUnits"] != 2.0 || root["ConsumedReadCapacityUnits"] != 0.5 ||
				root["StoreCalls"] != 2.0 || root["Duration"] != 12.5 || root["operation"] != "POST /orders" {
				t.Errorf("values %v", root)
			}
			if _, ok := root["tenant"]; ok {
				t.Error("tenant written to metrics")
			}
		})
	}
}

func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	l := observe.Logger{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}
	e := sample
	l.Observe(context.Background(), e)
	e.Kind, e.Err, e.Status = observe.EventStoreError, errors.New("throttled"), 0
	l.Observe(context.Background(), e)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	var a, b map[string]any
	json.Unmarshal([]byte(lines[0]), &a)
	json.Unmarshal([]byte(lines[1]), &b)
	if a["level"] != "INFO" || a["kind"] != "executed" || a["tenant"] != "tenant-a" || a["key"] != observe.Hash("k-1") || a["status"] != 201.0 || a["duration_ms"] != 12.5 {
		t.Errorf("executed line %v", a)
	}
	if b["level"] != "ERROR" || b["error"] != "throttled" {
		t.Errorf("store error line %v", b)
	}
}

func TestMulti(t *testing.T) {
	n := 0
	count := observe.ObserverFunc(func(context.Context, observe.Event) { n++ })
	observe.Multi(count, nil, count).Observe(context.Background(), sample)
	if n != 2 {
		t.Errorf("%d calls", n)
	}
}

// TestLevel: a client that hung up is routine (Info), like an execution or
// a replay; store failures are errors an alarm should see.
func TestLevel(t *testing.T) {
	for _, tc := range []struct {
		kind observe.EventKind
		want slog.Level
	}{
		{observe.EventExecuted, slog.LevelInfo},
		{observe.EventCancelled, slog.LevelInfo},
		{observe.EventConflict, slog.LevelWarn},
		{observe.EventStoreError, slog.LevelError},
		{observe.EventIndeterminate, slog.LevelError},
	} {
		if got := observe.Level(tc.kind); got != tc.want {
			t.Errorf("Level(%s) = %v, want %v", tc.kind, got, tc.want)
		}
	}
}

// TestEMFStatus: an EMF line carries the answer's status, any status, and
// leaves the member out for an event without one.
func TestEMFStatus(t *testing.T) {
	for _, status := range []int{200, 201, 409, 0} {
		var buf bytes.Buffer
		m := &observe.EMF{Writer: &buf}
		e := sample
		e.Status = status
		m.Observe(context.Background(), e)
		var root map[string]any
		if err := json.Unmarshal(buf.Bytes(), &root); err != nil {
			t.Fatal(err)
		}
		got, ok := root["status"]
		if ok != (status != 0) || (ok && got != float64(status)) {
			t.Errorf("status %d: member %v (present %v)", status, got, ok)
		}
	}
}

// TestLoggerHandlerTime: a log line gives the handler's own time when the
// handler ran, however short, and leaves it out when it did not.
func TestLoggerHandlerTime(t *testing.T) {
	for _, d := range []time.Duration{250 * time.Millisecond, 1500 * time.Microsecond, 0} {
		var buf bytes.Buffer
		e := sample
		e.Handler = d
		observe.Logger{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}.Observe(context.Background(), e)
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		got, ok := line["handler_ms"]
		if ok != (d > 0) || (ok && got != float64(d.Microseconds())/1e3) {
			t.Errorf("handler %v: handler_ms %v (present %v)", d, got, ok)
		}
	}
}
