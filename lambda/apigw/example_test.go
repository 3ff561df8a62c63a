package apigw_test

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/memstore"
)

// An HTTP API handler behind a JWT authorizer with the in-memory store, as
// in unit tests and local runs: it protects one process only.
// Example_quickstart has the DynamoDB store.
func ExampleWrapV2() {
	g, _ := idemkit.New(idemkit.Config{Store: memstore.New()})
	handler := apigw.WrapV2(g, apigw.Config{Tenant: apigw.JWTClaim("sub")}, createOrder)
	lambda.Start(handler)
}

// A REST API handler whose callers authenticate with API keys, with
// records scoped by route template and a fingerprint of two fields.
func ExampleWrapV1() {
	g, _ := idemkit.New(idemkit.Config{Store: memstore.New()})
	cfg := apigw.Config{
		Tenant: apigw.APIKeyID(),
		Settings: httpconfig.Settings{
			RouteTemplate: true,
			Routes:        map[string]httpconfig.Route{"POST /carts/{id}/items": {KeyOptional: true}},
		},
	}
	handler := apigw.WrapV1(g, cfg, func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		return events.APIGatewayProxyResponse{StatusCode: 201, Body: `{}`}, nil
	})
	lambda.Start(handler)
}
