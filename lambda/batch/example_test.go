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
)

// orderIDOfBody keys a message by the order id of its body: an error or
// an empty id fails the message.
func orderIDOfBody(m events.SQSMessage) (string, error) {
	var o struct{ OrderID string }
	err := json.Unmarshal([]byte(m.Body), &o)
	return o.OrderID, err
}

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
// message body, so that a second message about the same order (a
// producer's retry) is skipped too. The event source mapping lists
// ReportBatchItemFailures. The README shows its lambda.Start call.
func ExampleSQS() {
	g, _ := idemkit.New(idemkit.Config{Store: memstore.New()}) // dynamo.New in a deployed function
	lambda.Start(batch.SQS(g, batch.SQSConfig{
		Config: event.Config[events.SQSMessage]{Key: orderIDOfBody, Tenant: idemkit.SingleTenant[events.SQSMessage]("shipping"), Operation: "orders.ship"},
	}, ship)) // ship(ctx, events.SQSMessage) error; the key defaults to the message id
}

// A Kinesis consumer with the defaults: each record keyed by its eventID,
// scoped by the stream; the first failure and every later record are
// reported, so the shard is read again from there, in order.
func ExampleKinesis() {
	g, _ := idemkit.New(idemkit.Config{Store: memstore.New()})
	lambda.Start(batch.Kinesis(g, batch.KinesisConfig{}, func(ctx context.Context, r events.KinesisEventRecord) error {
		return nil // act on r.Kinesis.Data
	}))
}

// A DynamoDB Streams consumer that leaves more time for storing the last
// record's outcome than the default margin.
func ExampleDynamoDB() {
	g, _ := idemkit.New(idemkit.Config{Store: memstore.New()})
	lambda.Start(batch.DynamoDB(g, batch.DynamoDBConfig{Margin: 5 * time.Second}, func(ctx context.Context, r events.DynamoDBEventRecord) error {
		return nil // act on r.Change.NewImage
	}))
}
