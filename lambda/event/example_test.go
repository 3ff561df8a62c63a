package event_test

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/lambda/event"
	"github.com/idemkit/idemkit/memstore"
)

var fingerprintAmountOnly = fingerprint.Options{Include: []string{"/amount"}}

// An SQS consumer whose messages may be delivered twice: each transfer
// runs once, keyed by the transfer id in the message body.
func ExampleWrap() {
	g, _ := idemkit.New(idemkit.Config{Store: memstore.New()})
	execute := event.Wrap(g, event.Config[events.SQSMessage]{
		Key: func(m events.SQSMessage) (string, error) {
			var t struct{ TransferID string }
			err := json.Unmarshal([]byte(m.Body), &t)
			return t.TransferID, err
		},
		Tenant:    idemkit.SingleTenant[events.SQSMessage]("payments"),
		Operation: "transfers.execute",
		Payload:   func(m events.SQSMessage) ([]byte, error) { return []byte(m.Body), nil },
	}, func(ctx context.Context, m events.SQSMessage) (string, error) {
		return "tx_1", nil // move the money, return the ledger entry
	})
	lambda.Start(func(ctx context.Context, e events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, m := range e.Records {
			if _, err := execute(ctx, m); err != nil {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			}
		}
		return resp, nil
	})
}
