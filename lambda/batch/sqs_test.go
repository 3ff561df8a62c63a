package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/idemkey"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/batch"
	"github.com/idemkit/idemkit/lambda/event"
	"github.com/idemkit/idemkit/memstore"
)

var errCarrier = errors.New("carrier unavailable")

// byOrder keys messages by the order id of their body.
var byOrder = event.Config[events.SQSMessage]{
	Tenant: batch.TenantFromSource[events.SQSMessage](),
	Key: func(m events.SQSMessage) (string, error) {
		var s shipment
		err := json.Unmarshal([]byte(m.Body), &s)
		return s.OrderID, err
	},
}

// delivery is one invocation: a batch, and the failures it must report:
// each failed message id, in batch order, with an error its failure is
// under errors.Is.
type delivery struct {
	batch []events.SQSMessage
	want  []failed
}

type failed struct {
	id  string
	err error
}

// TestSQSStandard: batches of a standard queue delivered, redelivered,
// reordered and duplicated; each record is guarded on its own and the
// others go on after a failure. Effects are counted from the ledger.
func TestSQSStandard(t *testing.T) {
	m := func(id, order string) events.SQSMessage { return message(t, id, order) }
	with := func(msg events.SQSMessage, f func(*events.SQSMessage)) events.SQSMessage { f(&msg); return msg }
	for _, tc := range []struct {
		name       string
		cfg        event.Config[events.SQSMessage]
		maxKeyLen  int
		fail       func(order string, run int) error
		deliveries []delivery
		runs       []string
		shipped    map[string]int
	}{
		{
			name: "redelivered batch: every message a completed duplicate",
			deliveries: []delivery{
				{batch: []events.SQSMessage{m("m1", "o1"), m("m2", "o2")}},
				{batch: []events.SQSMessage{m("m1", "o1"), m("m2", "o2")}},
			},
			runs: []string{"o1", "o2"}, shipped: map[string]int{"o1": 1, "o2": 1},
		},
		{
			name: "reordered redelivery",
			deliveries: []delivery{
				{batch: []events.SQSMessage{m("m1", "o1"), m("m2", "o2"), m("m3", "o3")}},
				{batch: []events.SQSMessage{m("m3", "o3"), m("m1", "o1"), m("m2", "o2")}},
			},
			runs: []string{"o1", "o2", "o3"}, shipped: map[string]int{"o1": 1, "o2": 1, "o3": 1},
		},
		{
			name:       "the same message twice in one batch",
			deliveries: []delivery{{batch: []events.SQSMessage{m("m1", "o1"), m("m1", "o1")}}},
			runs:       []string{"o1"}, shipped: map[string]int{"o1": 1},
		},
		{
			name: "redelivery with new delivery attributes: the body is the payload",
			deliveries: []delivery{
				{batch: []events.SQSMessage{m("m1", "o1")}},
				{batch: []events.SQSMessage{with(m("m1", "o1"), func(x *events.SQSMessage) {
					x.Attributes["ApproximateReceiveCount"] = "2"
					x.ReceiptHandle = "AQEBother"
				})}},
			},
			runs: []string{"o1"}, shipped: map[string]int{"o1": 1},
		},
		{
			name: "handler error frees the key, the others go on",
			fail: func(order string, run int) error {
				if order == "o2" && run == 1 {
					return errCarrier
				}
				return nil
			},
			deliveries: []delivery{
				{batch: []events.SQSMessage{m("m1", "o1"), m("m2", "o2"), m("m3", "o3")}, want: []failed{{"m2", errCarrier}}},
				{batch: []events.SQSMessage{m("m2", "o2")}},
			},
			runs: []string{"o1", "o2", "o3", "o2"}, shipped: map[string]int{"o1": 1, "o2": 1, "o3": 1},
		},
		{
			name: "outcome unknown keeps the key: never run again",
			fail: func(order string, run int) error {
				if order == "o2" {
					return fmt.Errorf("label printer timed out: %w", idemkit.ErrOutcomeUnknown)
				}
				return nil
			},
			deliveries: []delivery{
				{batch: []events.SQSMessage{m("m1", "o1"), m("m2", "o2")}, want: []failed{{"m2", idemkit.ErrOutcomeUnknown}}},
				{batch: []events.SQSMessage{m("m2", "o2")}, want: []failed{{"m2", idemkit.ErrIndeterminate}}},
			},
			runs: []string{"o1", "o2"}, shipped: map[string]int{"o1": 1},
		},
		{
			name: "business key: another message for the same order is a duplicate",
			cfg:  byOrder,
			deliveries: []delivery{
				{batch: []events.SQSMessage{m("m1", "o1")}},
				{batch: []events.SQSMessage{m("m9", "o1"), m("m2", "o2")}},
			},
			runs: []string{"o1", "o2"}, shipped: map[string]int{"o1": 1, "o2": 1},
		},
		{
			name: "business key reused with another body",
			cfg:  byOrder,
			deliveries: []delivery{
				{batch: []events.SQSMessage{m("m1", "o1")}},
				{batch: []events.SQSMessage{with(m("m9", "o1"), func(x *events.SQSMessage) {
					x.Body = `{"orderId":"o1","sku":"book-42","quantity":5}`
				})}, want: []failed{{"m9", idemkit.ErrFingerprintMismatch}}},
			},
			runs: []string{"o1"}, shipped: map[string]int{"o1": 1},
		},
		{
			name: "invalid records: a body that is not JSON, an empty business key",
			cfg:  byOrder,
			deliveries: []delivery{{batch: []events.SQSMessage{
				with(m("m1", ""), func(x *events.SQSMessage) { x.Body = "not json" }),
				m("m2", ""),
				m("m3", "o3"),
			}, want: []failed{{"m1", batch.ErrInvalidRecord}, {"m2", idemkey.ErrEmpty}}}},
			runs: []string{"o3"}, shipped: map[string]int{"o3": 1},
		},
		{
			name:      "message id over MaxKeyLen",
			maxKeyLen: 4,
			deliveries: []delivery{{batch: []events.SQSMessage{m("m1", "o1"), m("m-long", "o2")},
				want: []failed{{"m-long", idemkey.ErrTooLong}}}},
			runs: []string{"o1"}, shipped: map[string]int{"o1": 1},
		},
		{
			name: "no event source: no tenant",
			deliveries: []delivery{{batch: []events.SQSMessage{
				with(m("m1", "o1"), func(x *events.SQSMessage) { x.EventSourceARN = "" }),
			}, want: []failed{{"m1", idemkit.ErrTenantMissing}}}},
			runs: nil, shipped: map[string]int{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker()
			w.fail = tc.fail
			var got failures
			cfg := batch.SQSConfig{Config: tc.cfg, OnFailure: got.add}
			if cfg.Tenant == nil {
				cfg.Tenant = sqsSource.Tenant
			}
			if tc.maxKeyLen > 0 {
				cfg.MaxKeyLen = tc.maxKeyLen
			}
			h := batch.SQS(newGuard(t, nil), cfg, w.sqs)
			for i, d := range tc.deliveries {
				resp, err := h(context.Background(), events.SQSEvent{Records: d.batch})
				if err != nil {
					t.Fatalf("delivery %d: %v", i, err)
				}
				checkFailures(t, fmt.Sprintf("delivery %d", i), sqsIDs(resp), got.take(), d.want)
			}
			if runs := w.runList(); !reflect.DeepEqual(runs, tc.runs) {
				t.Errorf("runs %q, want %q", runs, tc.runs)
			}
			if shipped := w.shipped(); !reflect.DeepEqual(shipped, tc.shipped) {
				t.Errorf("shipped %v, want %v", shipped, tc.shipped)
			}
		})
	}
}

// checkFailures compares the reported identifiers and the OnFailure
// reasons with want.
func checkFailures(t *testing.T, what string, ids []string, reported []batch.Failure, want []failed) {
	t.Helper()
	wantIDs := []string{}
	for _, f := range want {
		wantIDs = append(wantIDs, f.id)
	}
	if !reflect.DeepEqual(ids, wantIDs) {
		t.Errorf("%s: batchItemFailures %q, want %q", what, ids, wantIDs)
	}
	if len(reported) != len(want) {
		t.Errorf("%s: OnFailure got %d failures, want %d: %v", what, len(reported), len(want), reported)
		return
	}
	for i, f := range want {
		if reported[i].ID != f.id || !errors.Is(reported[i].Err, f.err) {
			t.Errorf("%s: failure %d: %s %v, want %s under %v", what, i, reported[i].ID, reported[i].Err, f.id, f.err)
		}
	}
}

// TestSQSInFlight: a message whose key is held by a running delivery
// (another instance got the same message) is reported failed at once with
// idemkit.ErrInFlight; the rest of the batch runs, and the held one is
// shipped once, by its first delivery.
func TestSQSInFlight(t *testing.T) {
	w := newWorker()
	entered, release := make(chan struct{}), make(chan struct{})
	w.during = func(_ context.Context, order string) {
		if order == "o1" {
			close(entered)
			<-release
		}
	}
	var got failures
	h := batch.SQS(newGuard(t, nil), batch.SQSConfig{Config: sqsSource, OnFailure: got.add}, w.sqs)
	first := make(chan events.SQSEventResponse)
	go func() {
		resp, _ := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", "o1")}})
		first <- resp
	}()
	<-entered
	resp := testkit.Call(t, h, events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", "o1"), message(t, "m2", "o2")}})
	checkFailures(t, "duplicate delivery", sqsIDs(resp), got.take(), []failed{{"m1", idemkit.ErrInFlight}})
	close(release)
	if r := <-first; len(r.BatchItemFailures) != 0 {
		t.Errorf("first delivery failed %v", r.BatchItemFailures)
	}
	if shipped := w.shipped(); !reflect.DeepEqual(shipped, map[string]int{"o1": 1, "o2": 1}) {
		t.Errorf("shipped %v", shipped)
	}
}

// TestSQSStoreFailure: a message the store cannot guard is reported failed
// (idemkit.ErrStoreUnavailable) without running, and runs once on its
// redelivery when the store is back.
func TestSQSStoreFailure(t *testing.T) {
	store := faultstore.New(memstore.New())
	store.OnOp(faultstore.OpClaim, faultstore.Fail(errors.New("connection refused")))
	g := testguard.New(t, idemkit.Config{Store: store, ClaimBackoff: time.Millisecond})
	w := newWorker()
	var got failures
	h := batch.SQS(g, batch.SQSConfig{Config: sqsSource, OnFailure: got.add}, w.sqs)
	ev := events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", "o1"), message(t, "m2", "o2")}}
	resp, _ := h(context.Background(), ev)
	checkFailures(t, "store down", sqsIDs(resp), got.take(), []failed{{"m1", idemkit.ErrStoreUnavailable}, {"m2", idemkit.ErrStoreUnavailable}})
	store.OnOp(faultstore.OpClaim, nil)
	resp, _ = h(context.Background(), ev)
	checkFailures(t, "store back", sqsIDs(resp), got.take(), nil)
	if runs := w.runList(); !reflect.DeepEqual(runs, []string{"o1", "o2"}) {
		t.Errorf("runs %q", runs)
	}
}

// TestNoIdentifier: a batch with a message without an id runs nothing and
// returns ErrNoIdentifier (the whole batch is delivered again).
func TestNoIdentifier(t *testing.T) {
	w := newWorker()
	h := batch.SQS(newGuard(t, nil), batch.SQSConfig{Config: sqsSource}, w.sqs)
	_, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", "o1"), message(t, "", "o2")}})
	if !errors.Is(err, batch.ErrNoIdentifier) || len(w.runList()) != 0 {
		t.Errorf("error %v after runs %q, want ErrNoIdentifier and none", err, w.runList())
	}
}

// TestResponseShape: the response is the JSON Lambda reads, one
// itemIdentifier (the message id) per failed message; a batch without
// failures has an empty list.
func TestResponseShape(t *testing.T) {
	w := newWorker()
	w.fail = func(order string, _ int) error {
		if order == "o2" {
			return errCarrier
		}
		return nil
	}
	h := batch.SQS(newGuard(t, nil), batch.SQSConfig{Config: sqsSource, OnFailure: func(context.Context, batch.Failure) {}}, w.sqs)
	for _, tc := range []struct {
		batch []events.SQSMessage
		want  string
	}{
		{[]events.SQSMessage{message(t, "m1", "o1"), message(t, "m2", "o2")}, `{"batchItemFailures":[{"itemIdentifier":"m2"}]}`},
		{[]events.SQSMessage{message(t, "m1", "o1")}, `{"batchItemFailures":[]}`},
		{nil, `{"batchItemFailures":[]}`},
	} {
		resp, err := h(context.Background(), events.SQSEvent{Records: tc.batch})
		b, _ := json.Marshal(resp)
		if err != nil || string(b) != tc.want {
			t.Errorf("response %s %v, want %s", b, err, tc.want)
		}
	}
}

// TestDefaultLogsFailures: without OnFailure, each failure is one warning
// line naming the message and the reason.
func TestDefaultLogsFailures(t *testing.T) {
	var buf strings.Builder
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	w := newWorker()
	w.fail = func(string, int) error { return errCarrier }
	h := batch.SQS(newGuard(t, nil), batch.SQSConfig{Config: sqsSource}, w.sqs)
	h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", "o1")}})
	if out := buf.String(); strings.Count(out, "\n") != 1 || !strings.Contains(out, "id=m1") || !strings.Contains(out, errCarrier.Error()) {
		t.Errorf("log %q, want one line naming m1 and the error", out)
	}
}
