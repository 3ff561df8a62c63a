package apigw_test

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/observe"
)

// createOrder is your handler, unchanged: it runs at most once per key.
func createOrder(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	// Charge the card, write the order...
	return events.APIGatewayV2HTTPResponse{
		StatusCode: 201,
		Headers:    map[string]string{"Content-Type": "application/json", "Location": "/orders/ord_1"},
		Body:       `{"id":"ord_1","status":"paid"}`,
	}, nil
}

// A Lambda behind an API Gateway HTTP API with a JWT authorizer, its
// records in DynamoDB: the program README.md starts with.
func Example_quickstart() {
	// The AWS SDK's standard configuration: in Lambda, the function's
	// region and role.
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	// A table laid out as dynamo.TableDefinition says (template.yaml has it).
	// IndexInFlight is off: `idemkit list --state stale` then lists no
	// crashed runs; on, it does, for 2 more write units per request.
	store, err := dynamo.New(dynamodb.NewFromConfig(cfg), os.Getenv("IDEMKIT_TABLE"), dynamo.Options{})
	if err != nil {
		log.Fatal(err)
	}
	// Stop here if the table is missing or laid out otherwise, rather than
	// answer 503 to every request (needs dynamodb:DescribeTable and
	// dynamodb:DescribeTimeToLive).
	if err := store.Check(context.Background()); err != nil {
		log.Fatal(err)
	}
	// observe.Logger writes one slog line per outcome, store errors included.
	g, err := idemkit.New(idemkit.Config{Store: store, Observer: observe.Logger{}})
	if err != nil {
		log.Fatal(err)
	}
	// The tenant is the caller the JWT authorizer verified (claim sub).
	lambda.Start(apigw.WrapV2(g, apigw.Config{Tenant: apigw.JWTClaim("sub")}, createOrder))
}
