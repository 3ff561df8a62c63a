package event_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/lambda/event"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/tenant"
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
		Tenant:    tenant.Single[events.SQSMessage]("payments"),
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

// A Step Functions task whose result says when it is a replay, so that a
// retried state does not count the transfer twice. The replay is the
// stored result, marked by the hook; the stored result stays unmarked.
func ExampleAdjustReplay() {
	type Transfer struct {
		TransferID string `json:"transfer_id"`
		Amount     int64  `json:"amount"`
	}
	type Receipt struct {
		LedgerEntry string `json:"ledger_entry"`
		Replayed    bool   `json:"replayed"`
	}
	g, _ := idemkit.New(idemkit.Config{Store: memstore.New()})
	execute := event.Wrap(g, event.Config[Transfer]{
		Key:       func(t Transfer) (string, error) { return t.TransferID, nil },
		Tenant:    tenant.Single[Transfer]("payments"),
		Operation: "transfers.execute",
	}, func(ctx context.Context, t Transfer) (Receipt, error) {
		return Receipt{LedgerEntry: "le_1"}, nil // move the money
	}, event.AdjustReplay(func(_ context.Context, _ Transfer, r Receipt) Receipt {
		r.Replayed = true
		return r
	}))
	in := Transfer{TransferID: "tr_1", Amount: 100}
	first, _ := execute(context.Background(), in)
	again, _ := execute(context.Background(), in)
	fmt.Printf("%+v\n%+v\n", first, again)
	// Output:
	// {LedgerEntry:le_1 Replayed:false}
	// {LedgerEntry:le_1 Replayed:true}
}
