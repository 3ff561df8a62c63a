package batch_test

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/lambda/batch"
	"github.com/idemkit/idemkit/lambda/event"
	"github.com/idemkit/idemkit/memstore"
)

// stores are the stores the consumer tests run on: memstore, and
// DynamoDB (dynalite, or the server IDEMKIT_DYNAMODB_ENDPOINT names).
var stores = []struct {
	name string
	new  func(t *testing.T) idemkit.Store
}{
	{"memstore", func(*testing.T) idemkit.Store { return memstore.New() }},
	{"dynamodb", func(t *testing.T) idemkit.Store {
		raw := dynalite.Client(t)
		s, err := dynamo.New(raw, dynalite.CreateTable(t, raw, dynamo.TableDefinition("batch", dynamo.Options{})), dynamo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

// consumer is one function reading every source, with the zero Configs
// (SQS keyed by the order id of the body), and the operations its runs
// were scoped by.
type consumer struct {
	w     *worker
	got   failures
	mu    sync.Mutex
	ops   map[string]bool
	sqs   func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	kin   func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error)
	ddb   func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
	kafka func(context.Context, events.KafkaEvent) (batch.KafkaEventResponse, error)
}

// newConsumer makes the handlers of the function named fn, as Lambda
// would run them: AWS_LAMBDA_FUNCTION_NAME is fn.
func newConsumer(t *testing.T, g *idemkit.Guard, fn string) *consumer {
	t.Setenv(batch.EnvFunctionName, fn)
	c := &consumer{w: newWorker(), ops: map[string]bool{}}
	c.w.during = func(ctx context.Context, _ string) {
		s, _ := idemkit.ScopeOf(ctx)
		c.mu.Lock()
		c.ops[s.Operation] = true
		c.mu.Unlock()
	}
	c.sqs = batch.SQS(g, batch.SQSConfig{Config: byOrder, OnFailure: c.got.add}, c.w.sqs)
	c.kin = batch.Kinesis(g, batch.KinesisConfig{Config: kinesisSource, OnFailure: c.got.add}, c.w.kinesis)
	c.ddb = batch.DynamoDB(g, batch.DynamoDBConfig{Config: streamSource, OnFailure: c.got.add}, c.w.stream)
	c.kafka = batch.Kafka(g, batch.KafkaConfig{Config: kafkaSource, OnFailure: c.got.add}, c.w.kafka)
	return c
}

// deliver gives c every source's batch, and fails t on any failure.
func (c *consumer) deliver(t *testing.T, sqs events.SQSEvent, kin events.KinesisEvent, ddb events.DynamoDBEvent, kafka events.KafkaEvent) {
	t.Helper()
	ctx := context.Background()
	r1, err1 := c.sqs(ctx, sqs)
	r2, err2 := c.kin(ctx, kin)
	r3, err3 := c.ddb(ctx, ddb)
	r4, err4 := c.kafka(ctx, kafka)
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(r1.BatchItemFailures) + len(r2.BatchItemFailures) + len(r3.BatchItemFailures) + len(r4.BatchItemFailures); n != 0 {
		t.Fatalf("%d failures: %v", n, c.got.take())
	}
}

// TestTwoConsumersOfOneSource: two functions reading the same queue,
// stream or topic (a fan-out) with the zero Configs, sharing one store.
// Each runs every record once: the default operation names the function,
// so the second's copy of a record is never the first's duplicate. A
// redelivery to either is its own duplicate. On memstore and DynamoDB.
func TestTwoConsumersOfOneSource(t *testing.T) {
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			g := newGuard(t, st.new(t))
			sqs := events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", "o1"), message(t, "m2", "o2")}}
			kin := events.KinesisEvent{Records: []events.KinesisEventRecord{kinesisRecord(t, "101", "k1"), kinesisRecord(t, "102", "k2")}}
			ddb := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{streamRecord(t, "201", "d1"), streamRecord(t, "202", "d2")}}
			kafka := kafkaEvent(t, map[string][]string{"shipments-0": {"p1", "p2"}, "shipments-1": {"p3"}})
			shipper, auditor := newConsumer(t, g, "shipper"), newConsumer(t, g, "auditor")
			for round := range 2 { // a delivery, then its redelivery
				for _, c := range []*consumer{shipper, auditor} {
					c.deliver(t, sqs, kin, ddb, kafka)
					if round == 0 {
						continue
					}
					want := map[string]int{"o1": 1, "o2": 1, "k1": 1, "k2": 1, "d1": 1, "d2": 1, "p1": 1, "p2": 1, "p3": 1}
					if shipped := c.w.shipped(); !reflect.DeepEqual(shipped, want) {
						t.Errorf("shipped %v, want every record once", shipped)
					}
				}
			}
			for name, c := range map[string]*consumer{"shipper": shipper, "auditor": auditor} {
				var ops []string
				for op := range c.ops {
					ops = append(ops, op)
				}
				for _, typ := range []string{"events.SQSMessage", "events.KinesisEventRecord", "events.DynamoDBEventRecord", "events.KafkaRecord"} {
					if !c.ops[name+"/"+typ] {
						t.Errorf("%s ran under the operations %q, want %s/%s among them", name, ops, name, typ)
					}
				}
				if len(ops) != 4 {
					t.Errorf("%s ran under the operations %q, want 4", name, ops)
				}
			}
		})
	}
}

// TestConsumerMustBeNamed: outside Lambda (no AWS_LAMBDA_FUNCTION_NAME)
// a Config without an Operation cannot tell two consumers apart, and
// every constructor refuses it with a panic naming Config.Operation. One
// with an Operation is used as it is.
func TestConsumerMustBeNamed(t *testing.T) {
	t.Setenv(batch.EnvFunctionName, "")
	g := newGuard(t, nil)
	w := newWorker()
	for name, build := range map[string]func(op string){
		"SQS": func(op string) { batch.SQS(g, batch.SQSConfig{Config: withOp(byOrder, op)}, w.sqs) },
		"Kinesis": func(op string) {
			c := batch.KinesisConfig{Config: kinesisSource}
			c.Operation = op
			batch.Kinesis(g, c, w.kinesis)
		},
		"DynamoDB": func(op string) {
			c := batch.DynamoDBConfig{Config: streamSource}
			c.Operation = op
			batch.DynamoDB(g, c, w.stream)
		},
		"Kafka": func(op string) {
			c := batch.KafkaConfig{Config: kafkaSource}
			c.Operation = op
			batch.Kafka(g, c, w.kafka)
		},
	} {
		t.Run(name, func(t *testing.T) {
			if msg := testkit.PanicOf(func() { build("") }); !strings.Contains(msg, "Config.Operation") || !strings.Contains(msg, batch.EnvFunctionName) {
				t.Errorf("no Operation, no function name: panic %q, want one naming Config.Operation", msg)
			}
			if msg := testkit.PanicOf(func() { build("orders.ship") }); msg != "" {
				t.Errorf("with an Operation: panic %q", msg)
			}
		})
	}
	var op string
	w.during = func(ctx context.Context, _ string) { s, _ := idemkit.ScopeOf(ctx); op = s.Operation }
	h := batch.Kinesis(g, batch.KinesisConfig{Config: withOp(kinesisSource, "shipments.audit")}, w.kinesis)
	if resp, err := h(context.Background(), events.KinesisEvent{Records: []events.KinesisEventRecord{kinesisRecord(t, "1", "o1")}}); err != nil || len(resp.BatchItemFailures) != 0 || op != "shipments.audit" {
		t.Errorf("%v %v, ran under %q; want run under shipments.audit", resp, err, op)
	}
}

// TestConstructorsRefuseConfigWithoutTenant: every constructor refuses a
// Config without a Tenant with a panic naming the setting, as every
// adapter refuses it; none takes the event source for the tenant unless
// TenantFromSource is named.
func TestConstructorsRefuseConfigWithoutTenant(t *testing.T) {
	g := newGuard(t, nil)
	w := newWorker()
	for name, build := range map[string]func(){
		"SQS":      func() { batch.SQS(g, batch.SQSConfig{}, w.sqs) },
		"Kinesis":  func() { batch.Kinesis(g, batch.KinesisConfig{}, w.kinesis) },
		"DynamoDB": func() { batch.DynamoDB(g, batch.DynamoDBConfig{}, w.stream) },
		"Kafka":    func() { batch.Kafka(g, batch.KafkaConfig{}, w.kafka) },
	} {
		if msg := testkit.PanicOf(build); !strings.HasPrefix(msg, "batch: invalid Config: the Tenant setting is nil") {
			t.Errorf("%s without a Tenant: panic %q, want one naming the Tenant setting", name, msg)
		}
	}
}

func withOp[R any](c event.Config[R], op string) event.Config[R] {
	c.Operation = op
	return c
}
