package orders

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
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
// beside the DynamoDB store without a local DynamoDB endpoint: the
// combination of a deployed function, not of sam local.
var ErrDevAuthorizerDeployed = errors.New("orders: AWS_SAM_LOCAL=true with " + EnvStore + "=dynamodb and no local DynamoDB endpoint (AWS_ENDPOINT_URL_DYNAMODB): the development authorizer is for sam local only; unset AWS_SAM_LOCAL, or point AWS_ENDPOINT_URL_DYNAMODB at DynamoDB Local or LocalStack")

// DevAuthorizerAllowed reports, from getenv, whether the function runs
// under sam local and may apply DevAuthorizer:
//
//   - AWS_SAM_LOCAL is not "true": no (nil error; the function is behind
//     API Gateway's authorizer);
//   - AWS_SAM_LOCAL=true with the memory store: yes;
//   - AWS_SAM_LOCAL=true with IDEMKIT_STORE=dynamodb: yes when the DynamoDB
//     endpoint (AWS_ENDPOINT_URL_DYNAMODB, else AWS_ENDPOINT_URL) is a
//     local one (LocalEndpoint), else ErrDevAuthorizerDeployed.
//
// A deployed function has no local endpoint, so AWS_SAM_LOCAL=true set
// there by mistake stops it rather than opening it.
func DevAuthorizerAllowed(getenv func(string) string) (bool, error) {
	if getenv("AWS_SAM_LOCAL") != "true" {
		return false, nil
	}
	if getenv(EnvStore) != "dynamodb" {
		return true, nil
	}
	ep := getenv("AWS_ENDPOINT_URL_DYNAMODB")
	if ep == "" {
		ep = getenv("AWS_ENDPOINT_URL")
	}
	if !LocalEndpoint(ep) {
		return false, ErrDevAuthorizerDeployed
	}
	return true, nil
}

// LocalEndpoint reports whether endpoint, an http or https URL, names a
// DynamoDB on the developer's machine or its Docker network, which no
// deployed function uses: a loopback or private IP address (127.0.0.0/8,
// ::1, 10/8, 172.16/12, 192.168/16, fc00::/7: Docker's bridge), localhost
// or a name under .localhost, host.docker.internal,
// localhost.localstack.cloud or a name under it, or a name without a dot
// (a container on a Docker network, such as localstack or
// dynamodb-local). DynamoDB itself is reached by dotted public names.
func LocalEndpoint(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return false
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return false
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.IsLoopback() || ip.IsPrivate()
	}
	switch {
	case host == "localhost", strings.HasSuffix(host, ".localhost"),
		host == "host.docker.internal",
		host == "localhost.localstack.cloud", strings.HasSuffix(host, ".localhost.localstack.cloud"):
		return true
	}
	return !strings.Contains(host, ".")
}

// LambdaHandler returns the handler cmd/lambda starts: h itself, or under
// sam local start-api, which runs no JWT authorizer (DevAuthorizerAllowed,
// reading getenv), h behind DevAuthorizer for events no authorizer has
// seen. AWS_SAM_LOCAL=true set by mistake in a deployed function cannot
// open it: the template sets IDEMKIT_STORE=dynamodb and no endpoint, with
// which it is refused (ErrDevAuthorizerDeployed), and claims an
// authorizer set are never replaced.
func LambdaHandler(h HandlerFunc, getenv func(string) string) (HandlerFunc, error) {
	dev, err := DevAuthorizerAllowed(getenv)
	if err != nil {
		return nil, err
	}
	if !dev {
		return h, nil
	}
	withDev := DevAuthorizer(h)
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		if a := ev.RequestContext.Authorizer; a != nil && (a.JWT != nil || a.Lambda != nil || a.IAM != nil) {
			return h(ctx, ev)
		}
		return withDev(ctx, ev)
	}, nil
}
