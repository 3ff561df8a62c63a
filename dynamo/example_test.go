package dynamo_test

import (
	"context"
	"log"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

func ExampleNew() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	store, err := dynamo.New(dynamodb.NewFromConfig(cfg), "idempotency", dynamo.Options{})
	if err != nil {
		log.Fatal(err)
	}
	guard, err := idemkit.New(idemkit.Config{Store: store})
	if err != nil {
		log.Fatal(err)
	}
	_ = guard // wrap the handlers with guard.Do
}

func ExampleNewRegional() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	client := func(region string) dynamo.Client {
		return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.Region = region })
	}
	home := map[string]string{"acme": "eu-west-1", "globex": "us-east-1"}
	store, err := dynamo.NewRegional(dynamo.Regions{
		Clients: map[string]dynamo.Client{"eu-west-1": client("eu-west-1"), "us-east-1": client("us-east-1")},
		Home:    func(tenant string) string { return home[tenant] },
		Local:   cfg.Region,
	}, "idempotency", dynamo.Options{})
	if err != nil {
		log.Fatal(err)
	}
	_ = store
}
