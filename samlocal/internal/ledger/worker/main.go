// Command worker is the ledger's settlement worker: each SQS message
// settles a transfer once (keyed by its transfer_id, whatever the message
// id); a message saying "fail" fails and is reported in
// batchItemFailures.
package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit/lambda/batch"
	"github.com/idemkit/idemkit/lambda/event"
	"github.com/idemkit/idemkit/samlocal/internal/ledger/boot"
	"github.com/idemkit/idemkit/tenant"
)

type settlement struct {
	TransferID  string `json:"transfer_id"`
	AmountCents int64  `json:"amount_cents"`
	Fail        bool   `json:"fail"`
}

func main() {
	l := boot.Start(context.Background())
	key := func(m events.SQSMessage) (string, error) {
		var s settlement
		err := json.Unmarshal([]byte(m.Body), &s)
		return s.TransferID, err
	}
	settle := func(ctx context.Context, m events.SQSMessage) error {
		var s settlement
		if err := json.Unmarshal([]byte(m.Body), &s); err != nil {
			return err
		}
		if s.Fail {
			return errors.New("settlement refused by the bank")
		}
		return l.Put(ctx, map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "settled#" + s.TransferID}})
	}
	lambda.Start(batch.SQS(l.Guard, batch.SQSConfig{Config: event.Config[events.SQSMessage]{
		Key: key, Tenant: tenant.Single[events.SQSMessage]("ledger"), Operation: "ledger.settle"}}, settle))
}
