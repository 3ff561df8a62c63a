// Package boot starts a ledger function (internal/ledger): its DynamoDB
// client, its guard on the idempotency table and the ledger table's name,
// all from the function's environment.
package boot

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// Ledger is what a ledger function runs with.
type Ledger struct {
	// Guard keeps its idempotency records in the table IDEM_TABLE names.
	Guard *idemkit.Guard
	// Table is the ledger table's name: LEDGER_TABLE.
	Table string

	client *dynamodb.Client
}

// Start returns the Ledger of the function's environment (its AWS
// configuration, IDEM_TABLE and LEDGER_TABLE), or ends the process with
// the reason, as a function whose initialisation fails ends.
func Start(ctx context.Context) *Ledger {
	cfg, err := config.LoadDefaultConfig(ctx)
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
	return &Ledger{Guard: g, Table: os.Getenv("LEDGER_TABLE"), client: client}
}

// Put writes item to the ledger table.
func (l *Ledger) Put(ctx context.Context, item map[string]types.AttributeValue) error {
	_, err := l.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(l.Table), Item: item})
	return err
}
