package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/batch"
	lambdaevent "github.com/idemkit/idemkit/lambda/event"
	"github.com/idemkit/idemkit/tenant"
)

// shipOrder is the body of the messages of the batch tests.
type shipOrder struct {
	OrderID string `json:"orderId"`
	Items   int    `json:"items"`
}

// shipper is the function under the batch wrappers: every run that ships
// adds one to the effects table under its idemkit.ExecutionID, so that
// the effects are counted from the data, across consumers.
type shipper struct {
	fx *effects
	mu sync.Mutex
	// orders maps each ExecutionID to its order, to name the counts.
	orders map[string]string // guarded by mu
	runs   map[string]int    // runs per order; guarded by mu
	// fail chooses what a run of an order does before (before=true) or
	// after its effect; nil: nothing.
	fail func(order string, run int) (err error, before bool)
}

func newShipper(fx *effects) *shipper {
	return &shipper{fx: fx, orders: map[string]string{}, runs: map[string]int{}}
}

func (s *shipper) ship(ctx context.Context, order string) error {
	x, ok := idemkit.ExecutionID(ctx)
	if !ok {
		return errors.New("shipper: not run by the guard")
	}
	s.mu.Lock()
	s.orders[x] = order
	s.runs[order]++
	n := s.runs[order]
	s.mu.Unlock()
	var err error
	before := false
	if s.fail != nil {
		err, before = s.fail(order, n)
	}
	if err != nil && before {
		return err
	}
	if _, werr := s.fx.record(context.WithoutCancel(ctx), x); werr != nil {
		return werr
	}
	return err
}

func (s *shipper) sqs(ctx context.Context, m events.SQSMessage) error {
	var o shipOrder
	if err := json.Unmarshal([]byte(m.Body), &o); err != nil {
		return err
	}
	return s.ship(ctx, o.OrderID)
}

// shipped returns the effects of each order, read from the effects table.
func (s *shipper) shipped(t *testing.T) map[string]int {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]int{}
	for x, n := range s.fx.counts(t) {
		order, ok := s.orders[x]
		if !ok {
			t.Errorf("an effect under %s, which no run had", x)
		}
		m[order] += n
	}
	return m
}

// queue is an SQS standard queue as its consumers see it: at least once,
// in any order, in batches of up to ten. A message leaves it only when a
// delivery does not report it failed; a message delivered to one consumer
// may be delivered to another at the same time (its visibility timeout
// passed), or again after it was deleted.
type queue struct {
	mu      sync.Mutex
	rng     *rand.Rand
	pending []events.SQSMessage
	done    []events.SQSMessage
}

func (q *queue) receive() []events.SQSMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	var b []events.SQSMessage
	for _, i := range q.rng.Perm(len(q.pending)) {
		if len(b) == 10 {
			break
		}
		b = append(b, q.pending[i])
	}
	if len(q.done) > 0 && q.rng.IntN(3) == 0 {
		// A deleted message delivered once more.
		b = append(b, q.done[q.rng.IntN(len(q.done))])
	}
	if len(b) > 0 && q.rng.IntN(4) == 0 {
		// The same message twice in one batch.
		b = append(b, b[q.rng.IntN(len(b))])
	}
	q.rng.Shuffle(len(b), func(i, j int) { b[i], b[j] = b[j], b[i] })
	return b
}

// settle deletes the messages of b not named in resp.
func (q *queue) settle(b []events.SQSMessage, resp events.SQSEventResponse) {
	q.mu.Lock()
	defer q.mu.Unlock()
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	keep := q.pending[:0]
	for _, m := range q.pending {
		acked := false
		for _, d := range b {
			if d.MessageId == m.MessageId && !failed[m.MessageId] {
				acked = true
			}
		}
		if acked {
			q.done = append(q.done, m)
		} else {
			keep = append(keep, m)
		}
	}
	q.pending = keep
}

func (q *queue) left() []events.SQSMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]events.SQSMessage(nil), q.pending...)
}

func sqsMessage(id, order string) events.SQSMessage {
	b, _ := json.Marshal(shipOrder{OrderID: order, Items: 1})
	return events.SQSMessage{MessageId: id, Body: string(b), EventSource: "aws:sqs",
		EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:shipments", Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
}

// TestBatchSQSQueue: a standard queue on dynalite, drained by two
// consumers at once, with every message of a third of the orders sent
// twice by the producer (another message id, the same order), messages
// duplicated within a batch, redelivered after deletion and reordered;
// some first runs fail before their effect, one order's run reports an
// unknown outcome after its effect. Keyed by the order id, every order is
// shipped exactly once, counted from the effects table: the failed runs
// ran again, the unknown one never did, and its messages stay failed
// (ErrIndeterminate) for an operator.
func TestBatchSQSQueue(t *testing.T) {
	store, raw, _ := newStore(t, nil, dynamo.Options{})
	fx := newEffects(t, raw)
	g := testguard.New(t, idemkit.Config{Store: store})
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	q := &queue{rng: rand.New(rand.NewPCG(seed, 27))}
	const orders, unknown = 30, "o13"
	for i := range orders {
		order := fmt.Sprintf("o%d", i)
		q.pending = append(q.pending, sqsMessage("m-"+order, order))
		if i%3 == 0 {
			q.pending = append(q.pending, sqsMessage("m-"+order+"-again", order))
		}
	}
	s := newShipper(fx)
	s.fail = func(order string, run int) (error, bool) {
		switch {
		case order == unknown:
			return fmt.Errorf("label printer timed out: %w", idemkit.ErrOutcomeUnknown), false
		case run == 1 && (order[len(order)-1]-'0')%4 == 1: // the orders ending in 1, 5 or 9
			return errors.New("carrier unavailable"), true
		}
		return nil, false
	}
	var mu sync.Mutex
	reasons := map[string]error{} // the last failure of each message
	h := batch.SQS(g, batch.SQSConfig{
		Config: lambdaevent.Config[events.SQSMessage]{
			Key: func(m events.SQSMessage) (string, error) {
				var o shipOrder
				err := json.Unmarshal([]byte(m.Body), &o)
				return o.OrderID, err
			},
			Tenant:    tenant.Single[events.SQSMessage]("acme"),
			Operation: "orders.ship",
		},
		OnFailure: func(_ context.Context, f batch.Failure) {
			mu.Lock()
			reasons[f.ID] = f.Err
			mu.Unlock()
		},
	}, s.sqs)
	for round := 0; ; round++ {
		left := q.left()
		s.mu.Lock()
		ranUnknown := s.runs[unknown] > 0
		s.mu.Unlock()
		if ranUnknown && len(left) == 1 && left[0].MessageId == "m-"+unknown {
			break
		}
		if round == 100 {
			t.Fatalf("the queue did not drain: %d messages left", len(left))
		}
		var wg sync.WaitGroup
		for range 2 {
			b := q.receive()
			wg.Go(func() {
				resp, err := h(context.Background(), events.SQSEvent{Records: b})
				if err != nil {
					t.Error(err)
				}
				q.settle(b, resp)
			})
		}
		wg.Wait()
	}
	shipped := s.shipped(t)
	for i := range orders {
		if order := fmt.Sprintf("o%d", i); shipped[order] != 1 {
			t.Errorf("%s shipped %d times, want once", order, shipped[order])
		}
	}
	if s.runs[unknown] != 1 {
		t.Errorf("%s ran %d times: an unknown outcome must never run again", unknown, s.runs[unknown])
	}
	// Its message, delivered again, stays failed for an operator.
	resp, err := h(context.Background(), events.SQSEvent{Records: q.left()})
	if err != nil || len(resp.BatchItemFailures) != 1 || !errors.Is(reasons["m-"+unknown], idemkit.ErrIndeterminate) {
		t.Errorf("the unknown outcome's message: %v %v (%v), want one failure, ErrIndeterminate", resp.BatchItemFailures, err, reasons["m-"+unknown])
	}
}

// TestBatchStoreFaults: with the store's claims failing (5xx on every
// attempt) the messages are reported failed with ErrStoreUnavailable and
// nothing runs; their redelivery, the store back, ships each once. A
// completion whose answer was lost is still a shipped message: the batch
// reports it done, and its redelivery is a completed duplicate.
func TestBatchStoreFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules []faults.Rule
		want  error // the first delivery's failures; nil: none
	}{
		{name: "claims-5xx", rules: []faults.Rule{onClaim(faults.ServerError, 0, never)}, want: idemkit.ErrStoreUnavailable},
		{name: "completion-lost-ack", rules: []faults.Rule{onComplete(faults.LostAck, 0, 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := faults.New(baseTransport(), tc.rules...)
			store, raw, _ := newStore(t, ft, dynamo.Options{CallTimeout: dynalite.Scale(time.Second), MaxBackoff: 10 * time.Millisecond})
			fx := newEffects(t, raw)
			g := testguard.New(t, idemkit.Config{Store: store, ClaimBackoff: time.Millisecond})
			s := newShipper(fx)
			var got []batch.Failure
			h := batch.SQS(g, batch.SQSConfig{Config: lambdaevent.Config[events.SQSMessage]{Operation: "orders.ship", Tenant: batch.TenantFromSource[events.SQSMessage]()},
				OnFailure: func(_ context.Context, f batch.Failure) { got = append(got, f) }}, s.sqs)
			ev := events.SQSEvent{Records: []events.SQSMessage{sqsMessage("m1", "o1"), sqsMessage("m2", "o2")}}
			resp, err := h(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil && len(resp.BatchItemFailures) != 0 {
				t.Fatalf("failures %v (%v), want none", resp.BatchItemFailures, got)
			}
			if tc.want != nil {
				if len(resp.BatchItemFailures) != 2 || len(got) != 2 || !errors.Is(got[0].Err, tc.want) || !errors.Is(got[1].Err, tc.want) {
					t.Fatalf("failures %v (%v), want both under %v", resp.BatchItemFailures, got, tc.want)
				}
				if len(s.runs) != 0 {
					t.Fatalf("ran %v while the store was down", s.runs)
				}
			}
			ft.Clear()
			got = nil
			if resp, err = h(context.Background(), ev); err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("redelivery: %v %v (%v)", resp.BatchItemFailures, err, got)
			}
			if shipped := s.shipped(t); shipped["o1"] != 1 || shipped["o2"] != 1 || len(shipped) != 2 {
				t.Errorf("shipped %v, want each once", shipped)
			}
		})
	}
}

// TestBatchKinesisShard: a Kinesis shard on dynalite delivered as Lambda
// does: from the checkpoint (the lowest sequence number reported) on, in
// batches of up to five, some runs failing at first. Every record is
// shipped once, in the shard's order: no record runs before the records
// ahead of it are shipped.
func TestBatchKinesisShard(t *testing.T) {
	store, raw, _ := newStore(t, nil, dynamo.Options{})
	fx := newEffects(t, raw)
	g := testguard.New(t, idemkit.Config{Store: store})
	var shard []events.KinesisEventRecord
	for i := range 20 {
		b, _ := json.Marshal(shipOrder{OrderID: fmt.Sprintf("o%02d", i), Items: 1})
		seq := fmt.Sprintf("4959%020d", i)
		shard = append(shard, events.KinesisEventRecord{EventID: "shardId-000000000000:" + seq, EventSourceArn: "arn:aws:kinesis:us-east-1:123456789012:stream/shipments",
			Kinesis: events.KinesisRecord{SequenceNumber: seq, Data: b}})
	}
	s := newShipper(fx)
	s.fail = func(order string, run int) (error, bool) {
		if run <= 2 && (order == "o03" || order == "o11" || order == "o12") {
			return errors.New("carrier unavailable"), true
		}
		return nil, false
	}
	var order []string // orders in the order they were first shipped
	h := batch.Kinesis(g, batch.KinesisConfig{Config: lambdaevent.Config[events.KinesisEventRecord]{Operation: "orders.ship", Tenant: batch.TenantFromSource[events.KinesisEventRecord]()},
		OnFailure: func(context.Context, batch.Failure) {}}, func(ctx context.Context, r events.KinesisEventRecord) error {
		var o shipOrder
		if err := json.Unmarshal(r.Kinesis.Data, &o); err != nil {
			return err
		}
		if err := s.ship(ctx, o.OrderID); err != nil {
			return err
		}
		order = append(order, o.OrderID)
		return nil
	})
	checkpoint := 0
	for round := 0; checkpoint < len(shard); round++ {
		if round == 50 {
			t.Fatalf("stuck at %d", checkpoint)
		}
		end := min(checkpoint+5, len(shard))
		resp, err := h(context.Background(), events.KinesisEvent{Records: shard[checkpoint:end]})
		if err != nil {
			t.Fatal(err)
		}
		next := end
		for _, f := range resp.BatchItemFailures {
			for i := checkpoint; i < end; i++ {
				if shard[i].Kinesis.SequenceNumber == f.ItemIdentifier && i < next {
					next = i
				}
			}
		}
		if round%3 == 2 {
			next = max(checkpoint-2, 0) // a retried invocation: records already done come again
		}
		checkpoint = next
	}
	for i := range shard {
		if want := fmt.Sprintf("o%02d", i); i >= len(order) || order[i] != want {
			t.Fatalf("shipped in the order %q, want the shard's", order)
		}
	}
	for o, n := range s.shipped(t) {
		if n != 1 {
			t.Errorf("%s shipped %d times", o, n)
		}
	}
}

// TestBatchConcurrentDelivery: one message delivered to two consumers at
// once (its visibility timeout passed while the first ran) on dynalite.
// The second reports it failed (in flight) rather than done, so when the
// first run fails the message is still in the queue, and its redelivery
// ships it once: a duplicate acknowledged while the first still ran would
// have deleted it unshipped.
func TestBatchConcurrentDelivery(t *testing.T) {
	store, raw, _ := newStore(t, nil, dynamo.Options{})
	fx := newEffects(t, raw)
	g := testguard.New(t, idemkit.Config{Store: store})
	s := newShipper(fx)
	entered, release := make(chan struct{}), make(chan struct{})
	s.fail = func(order string, run int) (error, bool) {
		if run == 1 {
			close(entered)
			<-release
			return errors.New("carrier unavailable"), true
		}
		return nil, false
	}
	h := batch.SQS(g, batch.SQSConfig{Config: lambdaevent.Config[events.SQSMessage]{Operation: "orders.ship", Tenant: batch.TenantFromSource[events.SQSMessage]()},
		OnFailure: func(context.Context, batch.Failure) {}}, s.sqs)
	q := &queue{rng: rand.New(rand.NewPCG(1, 2)), pending: []events.SQSMessage{sqsMessage("m1", "o1")}}
	ev := events.SQSEvent{Records: q.left()}
	first := make(chan events.SQSEventResponse)
	go func() {
		resp, _ := h(context.Background(), ev)
		first <- resp
	}()
	<-entered
	resp, err := h(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	q.settle(ev.Records, resp)
	close(release)
	q.settle(ev.Records, <-first)
	if left := q.left(); len(left) != 1 {
		t.Fatalf("queue %v after the failed run and its concurrent duplicate, want the message kept", left)
	}
	if resp, err := h(context.Background(), ev); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redelivery: %v %v", resp.BatchItemFailures, err)
	}
	if shipped := s.shipped(t); shipped["o1"] != 1 {
		t.Errorf("shipped %v, want o1 once", shipped)
	}
}
