package orders_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit/examples/orders"
)

// The Lambda entry point applies the development authorizer under sam
// local only: AWS_SAM_LOCAL=true set by mistake in a deployed function
// (whose template sets IDEMKIT_STORE=dynamodb) stops it at its start, and
// claims a real authorizer set are never replaced by the bearer token.
func TestLambdaHandlerDevAuthorizer(t *testing.T) {
	jwt := func(sub string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
		return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": sub}}}
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		auth    *events.APIGatewayV2HTTPRequestContextAuthorizerDescription
		wantSub string // "": the handler sees no sub claim
		wantErr error
	}{
		{"deployed, no authorizer", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders", orders.EnvStore: "dynamodb"}, nil, "", nil},
		{"deployed, JWT authorizer", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders", orders.EnvStore: "dynamodb"}, jwt("bob"), "bob", nil},
		{"deployed, AWS_SAM_LOCAL by mistake", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders", orders.EnvStore: "dynamodb", "AWS_SAM_LOCAL": "true"}, nil, "", orders.ErrDevAuthorizerDeployed},
		{"sam local", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders", orders.EnvStore: "memory", "AWS_SAM_LOCAL": "true"}, nil, "alice", nil},
		{"sam local, store unset", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders", "AWS_SAM_LOCAL": "true"}, nil, "alice", nil},
		{"sam local, claims set", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders", orders.EnvStore: "memory", "AWS_SAM_LOCAL": "true"}, jwt("bob"), "bob", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gotSub string
			inner := func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				if a := ev.RequestContext.Authorizer; a != nil && a.JWT != nil {
					gotSub = a.JWT.Claims["sub"]
				}
				return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
			}
			h, err := orders.LambdaHandler(inner, func(k string) string { return tc.env[k] })
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			ev := events.APIGatewayV2HTTPRequest{Headers: map[string]string{"authorization": "Bearer alice"}}
			ev.RequestContext.Authorizer = tc.auth
			resp, err := h(context.Background(), ev)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%d %v, want the handler's 200", resp.StatusCode, err)
			}
			if gotSub != tc.wantSub {
				t.Errorf("handler saw sub %q, want %q", gotSub, tc.wantSub)
			}
		})
	}
}
