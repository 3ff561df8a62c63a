package orders

import (
	"context"
	"errors"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// DevIssuer is the iss claim DevAuthorizer sets.
const DevIssuer = "idemkit-orders-dev"

// DevChallenge is the WWW-Authenticate of DevAuthorizer's 401. API
// Gateway's JWT authorizer, too, says in this header why it refused.
const DevChallenge = `Bearer error_description="send Authorization: Bearer <caller>; locally the token is the caller (the JWT sub claim), e.g. Bearer alice"`

// DevAuthorizer stands in for API Gateway's JWT authorizer where none runs
// (make run; sam local start-api, which does not emulate JWT authorizers).
// It verifies nothing: "Authorization: Bearer <token>" becomes the claim
// sub = <token> in requestContext.authorizer.jwt, so the token names the
// caller (the tenant). A request without a bearer token gets API
// Gateway's answer, 401 {"message":"Unauthorized"} (with DevChallenge),
// before h runs, as API Gateway refuses it before invoking the function:
// a 401 never reaches idemkit and is never stored. Never deploy it: behind
// API Gateway the real authorizer sets the claims. The Lambda entry point
// applies it through LambdaHandler only.
func DevAuthorizer(h HandlerFunc) HandlerFunc {
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		token, ok := bearer(header(ev.Headers, "Authorization"))
		if !ok {
			// API Gateway's own 401: the function never runs, so none of
			// its headers. The challenge says what the token is locally.
			return events.APIGatewayV2HTTPResponse{StatusCode: 401, Body: `{"message":"Unauthorized"}`,
				Headers: map[string]string{"Content-Type": "application/json", "WWW-Authenticate": DevChallenge}}, nil
		}
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{
				Claims: map[string]string{"sub": token, "iss": DevIssuer},
				Scopes: []string{},
			},
		}
		return h(ctx, ev)
	}
}

// bearer returns the token of an "Authorization: Bearer <token>" value.
func bearer(v string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || len(token) > 256 {
		return "", false
	}
	for i := 0; i < len(token); i++ {
		if token[i] <= ' ' || token[i] >= 0x7f {
			return "", false
		}
	}
	return token, true
}

// ErrDevAuthorizerDeployed is LambdaHandler's error for AWS_SAM_LOCAL=true
// beside the DynamoDB store: the combination of a deployed function, not
// of sam local.
var ErrDevAuthorizerDeployed = errors.New("orders: AWS_SAM_LOCAL=true with " + EnvStore + "=dynamodb: the development authorizer is for sam local only, which keeps records in memory; unset AWS_SAM_LOCAL")

// LambdaHandler returns the handler cmd/lambda starts: h itself, or under
// sam local start-api, which runs no JWT authorizer (AWS_SAM_LOCAL=true,
// read from getenv), h behind DevAuthorizer for events no authorizer has
// seen. AWS_SAM_LOCAL=true set by mistake in a deployed function cannot
// open it: the template sets IDEMKIT_STORE=dynamodb, with which it is
// refused (ErrDevAuthorizerDeployed), and claims an authorizer set are
// never replaced.
func LambdaHandler(h HandlerFunc, getenv func(string) string) (HandlerFunc, error) {
	if getenv("AWS_SAM_LOCAL") != "true" {
		return h, nil
	}
	if getenv(EnvStore) == "dynamodb" {
		return nil, ErrDevAuthorizerDeployed
	}
	dev := DevAuthorizer(h)
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		if a := ev.RequestContext.Authorizer; a != nil && (a.JWT != nil || a.Lambda != nil || a.IAM != nil) {
			return h(ctx, ev)
		}
		return dev(ctx, ev)
	}, nil
}
