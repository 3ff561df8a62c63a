package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/lambda/batch"
	"github.com/idemkit/idemkit/lambda/event"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/tenant"
)

// ship ships an order, keying its conditional write on the execution.
func ship(ctx context.Context, m events.SQSMessage) error {
	x, ok := idemkit.ExecutionID(ctx)
	if !ok {
		return errors.New("ship: not run by the guard")
	}
	_ = x // the shipment's id, its put conditional on it
	return nil
}

// An SQS worker that ships each order once, keyed by the order id in the
// message body ({"order_id": "ord_1001", ...}), so that a second message
// about the same order (a producer's retry) is skipped too. The event
// source mapping lists ReportBatchItemFailures. docs/BATCH.md shows this
// function's body, README.md its lambda.Start call.
func ExampleSQS() {
	store := memstore.New() // dynamo.New in a deployed function
	g, _ := idemkit.New(idemkit.Config{Store: store})
	lambda.Start(batch.SQS(g, batch.SQSConfig{
		Config: event.Config[events.SQSMessage]{
			Key: func(m events.SQSMessage) (string, error) {
				var o struct {
					OrderID string `json:"order_id"`
				}
				err := json.Unmarshal([]byte(m.Body), &o)
				return o.OrderID, err // an error or an empty id fails the message
			},
			Tenant:    tenant.Single[events.SQSMessage]("shipping"),
			Operation: "orders.ship", // names this consumer: another reading the queue needs its own
		},
	}, ship)) // ship(ctx, events.SQSMessage) error
}

// A Kinesis consumer with the defaults and the stream as its tenant
// (TenantFromSource): each record keyed by its eventID, scoped by the
// stream and by this function (its name, as Lambda sets
// AWS_LAMBDA_FUNCTION_NAME): another function reading the stream runs
// every record too. The first failure and every later record are
// reported, so the shard is read again from there, in order.
func ExampleKinesis() {
	g, _ := idemkit.New(idemkit.Config{Store: memstore.New()})
	lambda.Start(batch.Kinesis(g, batch.KinesisConfig{
		Config: event.Config[events.KinesisEventRecord]{Tenant: batch.TenantFromSource[events.KinesisEventRecord]()},
	}, func(ctx context.Context, r events.KinesisEventRecord) error {
		return nil // act on r.Kinesis.Data
	}))
}

// A DynamoDB Streams consumer that leaves more time for storing the last
// record's outcome than the default margin.
func ExampleDynamoDB() {
	g, _ := idemkit.New(idemkit.Config{Store: memstore.New()})
	lambda.Start(batch.DynamoDB(g, batch.DynamoDBConfig{
		Config: event.Config[events.DynamoDBEventRecord]{Tenant: batch.TenantFromSource[events.DynamoDBEventRecord]()},
		Margin: 5 * time.Second,
	}, func(ctx context.Context, r events.DynamoDBEventRecord) error {
		return nil // act on r.Change.NewImage
	}))
}

// An Amazon MSK consumer whose tenant is the cluster (TenantFromSource):
// each record keyed by its topic-partition and offset. A failure stops only its own partition; the response names the
// partition and the offset Lambda reads it again from. The mapping lists
// ReportBatchItemFailures (a Kafka mapping offers it in provisioned
// mode).
func ExampleKafka() {
	g, _ := idemkit.New(idemkit.Config{Store: memstore.New()})
	lambda.Start(batch.Kafka(g, batch.KafkaConfig{
		Config: event.Config[events.KafkaRecord]{Tenant: batch.TenantFromSource[events.KafkaRecord]()},
	}, func(ctx context.Context, r events.KafkaRecord) error {
		return nil // act on r.Value, base64
	}))
}
