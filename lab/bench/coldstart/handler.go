// Package coldstart is the handler the cold-start programs share: bare
// runs it as is, memory and dynamodb wrapped by lambda/apigw over the
// in-memory and the DynamoDB store. It imports nothing of idemkit, so
// that the bare program's binary holds none of it.
package coldstart

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
)

const body = `{"id":"ord_1","status":"accepted","currency":"eur","customer":{"id":"cus_42"},"lines":[{"sku":"SKU-00042","qty":2,"unit_amount":1299}]}`

// Handler answers 201 with a small order.
func Handler(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return events.APIGatewayV2HTTPResponse{StatusCode: 201,
		Headers: map[string]string{"Content-Type": "application/json", "Location": "/orders/ord_1"}, Body: body}, nil
}
