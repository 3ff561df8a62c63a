package apigw

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
)

// Request is the event a Tenant reads; exactly one field is set.
type Request struct {
	V1  *events.APIGatewayProxyRequest   // REST API (payload 1.0)
	V2  *events.APIGatewayV2HTTPRequest  // HTTP API (payload 2.0)
	URL *events.LambdaFunctionURLRequest // function URL
}

// Tenant returns the tenant of a request, from its authenticated caller
// only, never from the body or a client-chosen header. It returns "" when
// the request has none; the request then fails closed.
type Tenant func(ctx context.Context, r Request) (string, error)

// JWTClaim names the tenant by a claim of an HTTP API JWT authorizer
// (requestContext.authorizer.jwt.claims). Empty claim: "sub".
func JWTClaim(claim string) Tenant {
	if claim == "" {
		claim = "sub"
	}
	return func(_ context.Context, r Request) (string, error) {
		if r.V2 == nil || r.V2.RequestContext.Authorizer == nil || r.V2.RequestContext.Authorizer.JWT == nil {
			return "", nil
		}
		return r.V2.RequestContext.Authorizer.JWT.Claims[claim], nil
	}
}

// CognitoClaim names the tenant by a claim of a REST API Cognito user pool
// authorizer (requestContext.authorizer.claims). Empty claim: "sub".
func CognitoClaim(claim string) Tenant {
	if claim == "" {
		claim = "sub"
	}
	return func(_ context.Context, r Request) (string, error) {
		if r.V1 == nil {
			return "", nil
		}
		claims, _ := r.V1.RequestContext.Authorizer["claims"].(map[string]any)
		return scalar(claims[claim])
	}
}

// AuthorizerContext names the tenant by a key of a Lambda authorizer's
// context: requestContext.authorizer.<key> on a REST API ("principalId"
// is the authorizer's principal), requestContext.authorizer.lambda.<key>
// on an HTTP API. String and integer values are accepted.
func AuthorizerContext(key string) Tenant {
	return func(_ context.Context, r Request) (string, error) {
		switch {
		case r.V1 != nil:
			return scalar(r.V1.RequestContext.Authorizer[key])
		case r.V2 != nil && r.V2.RequestContext.Authorizer != nil:
			return scalar(r.V2.RequestContext.Authorizer.Lambda[key])
		}
		return "", nil
	}
}

// APIKeyID names the tenant by the REST API key id the caller used
// (requestContext.identity.apiKeyId; the key's id, not its secret value).
func APIKeyID() Tenant {
	return func(_ context.Context, r Request) (string, error) {
		if r.V1 == nil {
			return "", nil
		}
		return r.V1.RequestContext.Identity.APIKeyID, nil
	}
}

// IAMUserARN names the tenant by the IAM principal that signed the
// request: requestContext.identity.userArn on a REST API,
// requestContext.authorizer.iam.userArn on an HTTP API or function URL.
func IAMUserARN() Tenant {
	return func(_ context.Context, r Request) (string, error) {
		switch {
		case r.V1 != nil:
			return r.V1.RequestContext.Identity.UserArn, nil
		case r.V2 != nil && r.V2.RequestContext.Authorizer != nil && r.V2.RequestContext.Authorizer.IAM != nil:
			return r.V2.RequestContext.Authorizer.IAM.UserARN, nil
		case r.URL != nil && r.URL.RequestContext.Authorizer != nil && r.URL.RequestContext.Authorizer.IAM != nil:
			return r.URL.RequestContext.Authorizer.IAM.UserARN, nil
		}
		return "", nil
	}
}

// SingleTenant puts every request in one tenant. Use it only for internal
// APIs whose callers all share one key space.
func SingleTenant(name string) Tenant {
	return func(context.Context, Request) (string, error) { return name, nil }
}

// scalar returns an authorizer value as a tenant: strings as they are,
// integers in decimal; anything else is refused.
func scalar(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case float64:
		if x == float64(int64(x)) {
			return strconv.FormatInt(int64(x), 10), nil
		}
	}
	return "", fmt.Errorf("apigw: authorizer value of type %T cannot name a tenant", v)
}
