// Command worker is the ledger's settlement worker: each SQS message
// settles a transfer once (keyed by its transfer_id, whatever the message
// id); a message saying "fail" fails and is reported in
// batchItemFailures.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/lambda/batch"
	"github.com/idemkit/idemkit/lambda/event"
	"github.com/idemkit/idemkit/tenant"
)

type settlement struct {
	TransferID  string `json:"transfer_id"`
	AmountCents int64  `json:"amount_cents"`
	Fail        bool   `json:"fail"`
}

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	client := dynamodb.NewFromConfig(cfg)
	store, err := dynamo.New(client, os.Getenv("IDEM_TABLE"), dynamo.Options{})
	if err != nil {
		log.Fatal(err)
	}
	g, err := idemkit.New(idemkit.Config{Store: store})
	if err != nil {
		log.Fatal(err)
	}
	ledger := os.Getenv("LEDGER_TABLE")
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
		_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(ledger), Item: map[string]types.AttributeValue{
			"id": &types.AttributeValueMemberS{Value: "settled#" + s.TransferID}}})
		return err
	}
	lambda.Start(batch.SQS(g, batch.SQSConfig{Config: event.Config[events.SQSMessage]{
		Key: key, Tenant: tenant.Single[events.SQSMessage]("ledger"), Operation: "ledger.settle"}}, settle))
}
