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
	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/uuidv7"
	"github.com/idemkit/idemkit/lambda/batch"
	"github.com/idemkit/idemkit/lambda/event"
)

// TestOldBusinessKey: an order id that is a UUIDv7 minted 8 days ago
// (longer than the default 7-day retention), used as the key of its ship
// message, runs on its first delivery, and its redelivery is a duplicate:
// the age of a business key says nothing about when its message was first
// sent. With CheckKeyAge the key-age check of the HTTP adapters applies
// and the message fails with idemkit.ErrKeyExpired, not run.
func TestOldBusinessKey(t *testing.T) {
	order := uuidv7.At(time.Now().Add(-8 * 24 * time.Hour))
	for _, tc := range []struct {
		name        string
		checkKeyAge bool
		want        []failed
		shipped     map[string]int
	}{
		{name: "default", shipped: map[string]int{order: 1}},
		{name: "CheckKeyAge", checkKeyAge: true, want: []failed{{"m1", idemkit.ErrKeyExpired}}, shipped: map[string]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker()
			var got failures
			cfg := batch.SQSConfig{Config: byOrder, OnFailure: got.add}
			cfg.CheckKeyAge = tc.checkKeyAge
			h := batch.SQS(newGuard(t, nil), cfg, w.sqs)
			for i := range 2 {
				resp := testkit.Call(t, h, events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", order)}})
				checkFailures(t, fmt.Sprint("delivery ", i), sqsIDs(resp), got.take(), tc.want)
			}
			if shipped := w.shipped(); !reflect.DeepEqual(shipped, tc.shipped) {
				t.Errorf("shipped %v, want %v", shipped, tc.shipped)
			}
		})
	}
	// A Kinesis shard keyed by the same order id does not stall behind it.
	w := newWorker()
	var got failures
	kin := batch.KinesisConfig{Config: kinesisSource, OnFailure: got.add}
	kin.Key = func(r events.KinesisEventRecord) (string, error) { return orderOf(r.Kinesis.Data) }
	h := batch.Kinesis(newGuard(t, nil), kin, w.kinesis)
	resp, err := h(context.Background(), events.KinesisEvent{Records: []events.KinesisEventRecord{kinesisRecord(t, "1", order), kinesisRecord(t, "2", "o2")}})
	if err != nil || len(resp.BatchItemFailures) != 0 || !reflect.DeepEqual(w.shipped(), map[string]int{order: 1, "o2": 1}) {
		t.Errorf("Kinesis: %v %v (%v), shipped %v; want both shipped", resp, err, got.take(), w.shipped())
	}
}

// TestPanickingFunctions: a Key, Tenant or Payload function that panics
// on one record fails that record alone, reported in batchItemFailures
// with a *batch.PanicError (under ErrInvalidRecord, or ErrTenantMissing
// for Tenant); the other records of a standard queue run, and the
// handler returns normally. A FIFO batch keeps its rule: the records
// after the failed one are not run.
func TestPanickingFunctions(t *testing.T) {
	poison := func(m events.SQSMessage) bool { return strings.Contains(m.Body, `"o2"`) }
	for _, tc := range []struct {
		name string
		set  func(*event.Config[events.SQSMessage])
		want error
	}{
		{"Key", func(c *event.Config[events.SQSMessage]) {
			c.Key = func(m events.SQSMessage) (string, error) {
				if poison(m) {
					var o *shipment
					return o.OrderID, nil // a nil dereference
				}
				return m.MessageId, nil
			}
		}, batch.ErrInvalidRecord},
		{"Tenant", func(c *event.Config[events.SQSMessage]) {
			c.Tenant = func(_ context.Context, m events.SQSMessage) (string, error) {
				if poison(m) {
					panic("no tenant attribute")
				}
				return "acme", nil
			}
		}, idemkit.ErrTenantMissing},
		{"Payload", func(c *event.Config[events.SQSMessage]) {
			c.Payload = func(m events.SQSMessage) ([]byte, error) {
				if poison(m) {
					panic(errors.New("payload decoder"))
				}
				return []byte(m.Body), nil
			}
		}, batch.ErrInvalidRecord},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, fifo := range []bool{false, true} {
				w := newWorker()
				var got failures
				cfg := batch.SQSConfig{Config: sqsSource, OnFailure: got.add}
				tc.set(&cfg.Config)
				h := batch.SQS(newGuard(t, nil), cfg, w.sqs)
				msgs := []events.SQSMessage{message(t, "m1", "o1"), message(t, "m2", "o2"), message(t, "m3", "o3")}
				want, runs := []failed{{"m2", tc.want}}, []string{"o1", "o3"}
				if fifo {
					msgs = []events.SQSMessage{fifoMessage(t, "m1", "g", "o1"), fifoMessage(t, "m2", "g", "o2"), fifoMessage(t, "m3", "g", "o3")}
					want, runs = []failed{{"m2", tc.want}, {"m3", batch.ErrEarlierFailure}}, []string{"o1"}
				}
				var resp events.SQSEventResponse
				var err error
				if msg := testkit.PanicOf(func() { resp, err = h(context.Background(), events.SQSEvent{Records: msgs}) }); msg != "" || err != nil {
					t.Fatalf("fifo %v: the handler panicked %q / returned %v", fifo, msg, err)
				}
				reported := got.take()
				checkFailures(t, "batch", sqsIDs(resp), reported, want)
				var p *batch.PanicError
				if len(reported) == 0 || !errors.As(reported[0].Err, &p) || p.Func != tc.name || len(p.Stack) == 0 {
					t.Errorf("fifo %v: failure %v, want a *PanicError of %s with its stack", fifo, reported, tc.name)
				}
				if r := w.runList(); !reflect.DeepEqual(r, runs) {
					t.Errorf("fifo %v: runs %q, want %q", fifo, r, runs)
				}
			}
		})
	}
}

// TestPanicLogged: without OnFailure, a record failed by a panic is one
// error line naming the record, the panic and its stack.
func TestPanicLogged(t *testing.T) {
	var buf strings.Builder
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	cfg := batch.SQSConfig{Config: sqsSource}
	cfg.Key = func(events.SQSMessage) (string, error) { panic("key decoder broke") }
	h := batch.SQS(newGuard(t, nil), cfg, newWorker().sqs)
	resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", "o1")}})
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("%v %v, want m1 failed", resp, err)
	}
	out := buf.String()
	for _, want := range []string{"level=ERROR", "id=m1", `panic="key decoder broke"`, "stack=", "records_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// TestTextBodies: bodies that start with "[" or "{" but are not JSON (a
// log line, a truncated document) are no poison: with the default
// fingerprint they are compared byte for byte. Each runs once, its
// redelivery is a duplicate, and another text under the same key is a
// reuse (ErrFingerprintMismatch). Under fingerprint.ModeJSON, asked for,
// such a body is refused as invalid.
func TestTextBodies(t *testing.T) {
	texts := []string{"[INFO] service started", "{oops", "[", `{"orderId":"o1",`, " \t[WARN] disk 91% full"}
	keyed := event.Config[events.SQSMessage]{Tenant: batch.TenantFromSource[events.SQSMessage](), Key: func(m events.SQSMessage) (string, error) { return m.MessageId, nil }}
	var runs []string
	fn := func(_ context.Context, m events.SQSMessage) error { runs = append(runs, m.Body); return nil }
	var got failures
	h := batch.SQS(newGuard(t, nil), batch.SQSConfig{Config: keyed, OnFailure: got.add}, fn)
	var msgs []events.SQSMessage
	for i, text := range texts {
		m := message(t, fmt.Sprint("m", i+1), "")
		m.Body = text
		msgs = append(msgs, m)
	}
	for i := range 2 {
		resp, err := h(context.Background(), events.SQSEvent{Records: msgs})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("delivery %d: %v %v (%v)", i, resp, err, got.take())
		}
	}
	if !reflect.DeepEqual(runs, texts) {
		t.Errorf("runs %q, want each text once", runs)
	}
	other := msgs[0]
	other.Body = "[INFO] service stopped"
	resp, _ := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{other}})
	checkFailures(t, "another text under m1", sqsIDs(resp), got.take(), []failed{{"m1", idemkit.ErrFingerprintMismatch}})

	strict := batch.SQSConfig{Config: keyed, OnFailure: got.add}
	strict.Fingerprint = fingerprint.Options{Mode: fingerprint.ModeJSON}
	resp, _ = batch.SQS(newGuard(t, nil), strict, fn)(context.Background(), events.SQSEvent{Records: msgs[:1]})
	checkFailures(t, "ModeJSON", sqsIDs(resp), got.take(), []failed{{"m1", batch.ErrInvalidRecord}})

	// A JSON body keeps its JSON fingerprint: the same document spelled
	// otherwise is the same payload.
	runs = nil
	j := message(t, "j1", "")
	j.Body = `{"orderId":"o1","quantity":1}`
	h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{j}})
	j.Body = "{ \"quantity\": 1, \"orderId\": \"o1\" }"
	resp, _ = h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{j}})
	if len(resp.BatchItemFailures) != 0 || len(runs) != 1 {
		t.Errorf("a respelled JSON body: %v (%v) after %d runs, want a duplicate", resp, got.take(), len(runs))
	}
	var v any
	if json.Unmarshal([]byte(j.Body), &v) != nil {
		t.Fatal("the respelled body is not JSON")
	}
}
