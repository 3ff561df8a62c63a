package batch_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/batch"
	"github.com/idemkit/idemkit/lambda/event"
	"github.com/idemkit/idemkit/memstore"
)

// shipment is the body of every test record.
type shipment struct {
	OrderID  string `json:"orderId"`
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
}

func body(order string) string {
	b, _ := json.Marshal(shipment{OrderID: order, SKU: "book-42", Quantity: 1})
	return string(b)
}

// message returns the golden standard-queue message with its id and the
// body of order.
func message(t testing.TB, id, order string) events.SQSMessage {
	m := testkit.Load[events.SQSEvent](t, "sqs-event.json").Records[0]
	m.MessageId, m.Body = id, body(order)
	return m
}

// fifoMessage returns the golden FIFO message with its id, group and the
// body of order.
func fifoMessage(t testing.TB, id, group, order string) events.SQSMessage {
	m := testkit.Load[events.SQSEvent](t, "sqs-fifo-event.json").Records[0]
	m.MessageId, m.Body = id, body(order)
	m.Attributes["MessageGroupId"] = group
	return m
}

// kinesisRecord returns the golden Kinesis record with sequence number seq
// and the data of order.
func kinesisRecord(t testing.TB, seq, order string) events.KinesisEventRecord {
	r := testkit.Load[events.KinesisEvent](t, "kinesis-event.json").Records[0]
	r.Kinesis.SequenceNumber, r.EventID, r.Kinesis.Data = seq, "shardId-000000000000:"+seq, []byte(body(order))
	return r
}

// streamRecord returns the golden DynamoDB Streams record with sequence
// number seq, inserting order.
func streamRecord(t testing.TB, seq, order string) events.DynamoDBEventRecord {
	r := testkit.Load[events.DynamoDBEvent](t, "dynamodb-event.json").Records[0]
	r.EventID, r.Change.SequenceNumber = "ev-"+seq, seq
	r.Change.NewImage = map[string]events.DynamoDBAttributeValue{"sk": events.NewStringAttribute("order#" + order)}
	return r
}

// kafkaEvent returns the golden MSK event with, in each topic-partition
// named, records of the orders given, at offsets from 100 up.
func kafkaEvent(t testing.TB, partitions map[string][]string) events.KafkaEvent {
	e := testkit.Load[events.KafkaEvent](t, "msk-event.json")
	proto := e.Records["shipments-0"][0]
	e.Records = map[string][]events.KafkaRecord{}
	for p, orders := range partitions {
		var n int64
		fmt.Sscanf(p[len("shipments-"):], "%d", &n)
		for i, o := range orders {
			r := proto
			r.Partition, r.Offset = n, int64(100+i)
			r.Value = base64.StdEncoding.EncodeToString([]byte(body(o)))
			e.Records[p] = append(e.Records[p], r)
		}
	}
	return e
}

// orderOf reads the order id of a body, refusing one without.
func orderOf(b []byte) (string, error) {
	var s shipment
	if err := json.Unmarshal(b, &s); err != nil {
		return "", err
	}
	if s.OrderID == "" {
		return "", errors.New("no orderId")
	}
	return s.OrderID, nil
}

// worker is the function under the wrappers: each run that ships adds one
// entry to its ledger under the run's idemkit.ExecutionID, the effect a
// real worker would write conditionally. Effects are counted from the
// ledger, runs from runs.
type worker struct {
	mu     sync.Mutex
	runs   []string          // the order of every run, in run order
	ledger map[string]string // ExecutionID -> the order shipped under it
	// fail chooses the error of a run of an order (nil: it ships). It is
	// consulted before the effect.
	fail func(order string, run int) error
	// during, when set, is called inside each run before its effect.
	during func(ctx context.Context, order string)
}

func newWorker() *worker { return &worker{ledger: map[string]string{}} }

func (w *worker) ship(ctx context.Context, order string) error {
	x, ok := idemkit.ExecutionID(ctx)
	if !ok {
		return errors.New("worker: not run by the guard")
	}
	if w.during != nil {
		w.during(ctx, order)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.runs = append(w.runs, order)
	n := 0
	for _, o := range w.runs {
		if o == order {
			n++
		}
	}
	if w.fail != nil {
		if err := w.fail(order, n); err != nil {
			return err
		}
	}
	if prev, dup := w.ledger[x]; dup {
		return fmt.Errorf("worker: %s shipped twice (first as %s)", order, prev)
	}
	w.ledger[x] = order
	return nil
}

func (w *worker) sqs(ctx context.Context, m events.SQSMessage) error {
	order, err := orderOf([]byte(m.Body))
	if err != nil {
		return err
	}
	return w.ship(ctx, order)
}

func (w *worker) kinesis(ctx context.Context, r events.KinesisEventRecord) error {
	order, err := orderOf(r.Kinesis.Data)
	if err != nil {
		return err
	}
	return w.ship(ctx, order)
}

func (w *worker) kafka(ctx context.Context, r events.KafkaRecord) error {
	b, err := base64.StdEncoding.DecodeString(r.Value)
	if err != nil {
		return err
	}
	order, err := orderOf(b)
	if err != nil {
		return err
	}
	return w.ship(ctx, order)
}

func (w *worker) stream(ctx context.Context, r events.DynamoDBEventRecord) error {
	return w.ship(ctx, r.Change.NewImage["sk"].String()[len("order#"):])
}

// shipped returns how many effects each order had, from the ledger.
func (w *worker) shipped() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := map[string]int{}
	for _, o := range w.ledger {
		m[o]++
	}
	return m
}

func (w *worker) runList() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.runs...)
}

// failures collects the failures a wrapper reports.
type failures struct {
	mu   sync.Mutex
	list []batch.Failure
}

func (f *failures) add(_ context.Context, x batch.Failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = append(f.list, x)
}

func (f *failures) take() []batch.Failure {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.list
	f.list = nil
	return l
}

func newGuard(t testing.TB, store idemkit.Store) *idemkit.Guard {
	t.Helper()
	if store == nil {
		store = memstore.New()
	}
	return testguard.New(t, idemkit.Config{Store: store})
}

func sqsIDs(r events.SQSEventResponse) []string {
	ids := []string{}
	for _, f := range r.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func kinesisIDs(r events.KinesisEventResponse) []string {
	ids := []string{}
	for _, f := range r.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

func streamIDs(r events.DynamoDBEventResponse) []string {
	ids := []string{}
	for _, f := range r.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// The Configs of the tests whose records are scoped by their event
// source, as batch.TenantFromSource names it.
var (
	sqsSource     = event.Config[events.SQSMessage]{Tenant: batch.TenantFromSource[events.SQSMessage]()}
	kinesisSource = event.Config[events.KinesisEventRecord]{Tenant: batch.TenantFromSource[events.KinesisEventRecord]()}
	streamSource  = event.Config[events.DynamoDBEventRecord]{Tenant: batch.TenantFromSource[events.DynamoDBEventRecord]()}
	kafkaSource   = event.Config[events.KafkaRecord]{Tenant: batch.TenantFromSource[events.KafkaRecord]()}
)
