// Command dynamodb is the shared handler wrapped by lambda/apigw over the
// DynamoDB store, set up as a Lambda function would be: the SDK's default
// config from the environment, the table in IDEMKIT_TABLE, and, for a
// local server, its URL in IDEMKIT_DYNAMODB_ENDPOINT.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/lab/bench/coldstart"
	"github.com/idemkit/idemkit/lambda/apigw"
)

func main() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		panic(err)
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if ep := os.Getenv("IDEMKIT_DYNAMODB_ENDPOINT"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	})
	store, err := dynamo.New(client, os.Getenv("IDEMKIT_TABLE"), dynamo.Options{})
	if err != nil {
		panic(err)
	}
	g, err := idemkit.New(idemkit.Config{Store: store})
	if err != nil {
		panic(err)
	}
	lambda.Start(apigw.WrapV2(g, apigw.Config{Tenant: apigw.SingleTenant("bench")}, coldstart.Handler))
}
