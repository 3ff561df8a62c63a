package observe

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/idemkit/idemkit/clock"
	"github.com/idemkit/idemkit/internal/clip"
)

// The metric names EMF writes. Each line counts one outcome (1 under its
// kind's name) and reports the store usage and duration of the request.
const (
	MetricExecuted         = "Executed"
	MetricReplayed         = "Replayed"
	MetricConflict         = "Conflict"
	MetricMismatch         = "Mismatch"
	MetricTakeover         = "Takeover"
	MetricIndeterminate    = "Indeterminate"
	MetricReleased         = "Released"
	MetricStoreError       = "StoreError"
	MetricCancelled        = "Cancelled"
	MetricCompletionFailed = "CompletionFailed"
	MetricRefused          = "Refused"
	MetricOutcome          = "OutcomeOnly"
	MetricStoreCalls       = "StoreCalls"
	MetricReadUnits        = "ConsumedReadCapacityUnits"
	MetricWriteUnits       = "ConsumedWriteCapacityUnits"
	MetricDuration         = "Duration"
)

var kindMetric = map[EventKind]string{
	EventExecuted:         MetricExecuted,
	EventReplayed:         MetricReplayed,
	EventConflict:         MetricConflict,
	EventMismatch:         MetricMismatch,
	EventTakeover:         MetricTakeover,
	EventIndeterminate:    MetricIndeterminate,
	EventReleased:         MetricReleased,
	EventStoreError:       MetricStoreError,
	EventCancelled:        MetricCancelled,
	EventCompletionFailed: MetricCompletionFailed,
	EventRefused:          MetricRefused,
	EventOutcome:          MetricOutcome,
}

// EMF is an Observer printing one CloudWatch Embedded Metric
// Format line per outcome. Metrics carry only the fixed Dimensions, since
// an operation, a tenant or a key would make one metric per value. Each line
// also carries the kind, the operation (bounded to MaxFieldBytes) and the
// status as properties, searchable in Logs Insights, and the tenant and
// the key only when Tenant and Key ask for them. The zero value writes to
// os.Stdout under the namespace "idemkit" with no dimensions, and no tenant
// or key. It is safe for concurrent use.
type EMF struct {
	// Writer receives the lines. Nil: os.Stdout.
	Writer io.Writer
	// Namespace is the CloudWatch namespace. Empty: "idemkit".
	Namespace string
	// Dimensions are fixed dimensions of every metric ("Service": "orders").
	Dimensions map[string]string
	// Clock is the time of the metric timestamps. Nil: the system clock.
	Clock clock.Clock
	// Tenant and Key say whether and how the scope's tenant and
	// Idempotency-Key are written as properties ("tenant", "key"). Zero:
	// Omitted; Logger lines carry them.
	Tenant, Key Redaction

	mu sync.Mutex // serializes writes, so lines never interleave
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMeta struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

// Observe implements Observer.
func (m *EMF) Observe(_ context.Context, e Event) {
	now := time.Now
	if m.Clock != nil {
		now = m.Clock.Now
	}
	ns := m.Namespace
	if ns == "" {
		ns = "idemkit"
	}
	name, ok := kindMetric[e.Kind]
	if !ok {
		name = string(e.Kind)
	}
	dims := make([]string, 0, len(m.Dimensions))
	line := make(map[string]any, 12+len(m.Dimensions))
	for k, v := range m.Dimensions {
		dims = append(dims, k)
		line[k] = v
	}
	slices.Sort(dims)
	line["_aws"] = emfMeta{
		Timestamp: now().UnixMilli(),
		CloudWatchMetrics: []emfDirective{{
			Namespace:  ns,
			Dimensions: [][]string{dims},
			Metrics: []emfMetric{
				{name, "Count"},
				{MetricStoreCalls, "Count"},
				{MetricReadUnits, "Count"},
				{MetricWriteUnits, "Count"},
				{MetricDuration, "Milliseconds"},
			},
		}},
	}
	line[name] = 1
	line[MetricStoreCalls] = e.Usage.Calls
	line[MetricReadUnits] = e.Usage.ReadUnits
	line[MetricWriteUnits] = e.Usage.WriteUnits
	line[MetricDuration] = ms(e.Duration.Seconds())
	line["kind"] = string(e.Kind)
	line["operation"] = clip.String(e.Operation, MaxFieldBytes)
	if v, ok := m.Tenant.field(e.Tenant, Omitted); ok {
		line["tenant"] = v
	}
	if v, ok := m.Key.field(e.Key, Omitted); ok {
		line["key"] = v
	}
	if e.Status != 0 {
		line["status"] = e.Status
	}
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	b = append(b, '\n')
	w := m.Writer
	if w == nil {
		w = os.Stdout
	}
	m.mu.Lock()
	w.Write(b)
	m.mu.Unlock()
}
