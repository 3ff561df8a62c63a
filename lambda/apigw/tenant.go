package apigw

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/lambda/event"
	"github.com/idemkit/idemkit/tenant"
)

// Request is the event a Tenant reads; exactly one field is set.
type Request struct {
	V1  *events.APIGatewayProxyRequest   // REST API (payload 1.0)
	V2  *events.APIGatewayV2HTTPRequest  // HTTP API (payload 2.0)
	URL *events.LambdaFunctionURLRequest // function URL
}

// Tenant returns the tenant of a request from its authenticated caller,
// as tenant.Func says. The built-in extractors take strings byte for
// byte. They refuse every value that may not be exact, with an error that
// names the field and wraps tenant.ErrInexact. AuthorizerContext
// says which numbers are exact.
type Tenant = tenant.Func[Request]

// JWTClaim names the tenant by a claim of an HTTP API JWT authorizer
// (requestContext.authorizer.jwt.claims). Empty claim: "sub". API Gateway
// delivers these claims as strings, and the tenant is the string, byte for
// byte. Name a string claim, such as sub. A claim API Gateway rendered from
// an array ("[a b]", which loses the boundaries of its elements) is
// refused. So is a number in fraction or exponent form ("1.5",
// "1.2345678901234567E19"), which may have been rounded.
func JWTClaim(claim string) Tenant {
	if claim == "" {
		claim = "sub"
	}
	field := "requestContext.authorizer.jwt.claims." + claim
	return func(_ context.Context, r Request) (string, error) {
		if r.V2 == nil || r.V2.RequestContext.Authorizer == nil || r.V2.RequestContext.Authorizer.JWT == nil {
			return "", nil
		}
		return tenantValue(field, r.V2.RequestContext.Authorizer.JWT.Claims[claim], true)
	}
}

// CognitoClaim names the tenant by a claim of a REST API Cognito user pool
// or JWT authorizer (requestContext.authorizer.claims). Empty claim: "sub".
// A string claim is the tenant byte for byte, or refused as JWTClaim says.
// A number follows the rules of AuthorizerContext. A boolean, an object or
// an array is refused.
func CognitoClaim(claim string) Tenant {
	if claim == "" {
		claim = "sub"
	}
	field := "requestContext.authorizer.claims." + claim
	return func(_ context.Context, r Request) (string, error) {
		if r.V1 == nil {
			return "", nil
		}
		claims, _ := r.V1.RequestContext.Authorizer["claims"].(map[string]any)
		return tenantValue(field, claims[claim], true)
	}
}

// AuthorizerContext names the tenant by a key of a Lambda authorizer's
// context. On a REST API that is requestContext.authorizer.<key>
// ("principalId" is the authorizer's principal); on an HTTP API it is
// requestContext.authorizer.lambda.<key>. A string is the tenant byte for
// byte, unless it spells a number in fraction or exponent form. A REST API
// delivers the context's numbers as such text ("1.5",
// "1.2345678901234567E19"). An integer is the tenant in decimal when it is
// exact. The Lambda runtime decodes a JSON number as a float64, which holds
// every integer only up to 2^53-1 in magnitude. Past it, two ids that round
// alike decode alike, so a float64 past 2^53-1 is refused, as a fraction
// is. Return ids from the authorizer as strings. A json.Number is exact when it is an integer
// literal, of any size; a Go integer always is. A boolean, an object or
// an array is refused.
func AuthorizerContext(key string) Tenant {
	v1Field, v2Field := "requestContext.authorizer."+key, "requestContext.authorizer.lambda."+key
	return func(_ context.Context, r Request) (string, error) {
		switch {
		case r.V1 != nil:
			return tenantValue(v1Field, r.V1.RequestContext.Authorizer[key], false)
		case r.V2 != nil && r.V2.RequestContext.Authorizer != nil:
			return tenantValue(v2Field, r.V2.RequestContext.Authorizer.Lambda[key], false)
		}
		return "", nil
	}
}

// APIKeyID names the tenant by the id of the REST API key the caller used
// (requestContext.identity.apiKeyId), byte for byte. It is the key's id,
// not its secret value.
func APIKeyID() Tenant {
	return func(_ context.Context, r Request) (string, error) {
		if r.V1 == nil {
			return "", nil
		}
		return r.V1.RequestContext.Identity.APIKeyID, nil
	}
}

// IAMUserARN names the tenant by the IAM principal that signed the
// request, byte for byte. That is requestContext.identity.userArn on a REST
// API, and requestContext.authorizer.iam.userArn on an HTTP API or function
// URL.
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
func SingleTenant(name string) Tenant { return tenant.Single[Request](name) }

// maxExactFloat is the largest integer below which every integer has a
// float64 of its own: 2^53-1. A float64 past it may be the rounding of
// another integer.
const maxExactFloat = 1<<53 - 1

// tenantValue returns the tenant an authorizer value v at field names, ""
// for none, or an error wrapping tenant.ErrInexact when v cannot
// name one exactly. claim says v is a token claim, which API Gateway may
// render from an array.
func tenantValue(field string, v any, claim bool) (string, error) {
	s, why := tenantText(v, claim)
	if why != "" {
		return "", fmt.Errorf("apigw: %s: %s: %w", field, why, tenant.ErrInexact)
	}
	return s, nil
}

// tenantText returns the tenant v names ("" for none), or why v cannot
// name one exactly; claim is as for tenantValue.
func tenantText(v any, claim bool) (s, why string) {
	switch x := v.(type) {
	case nil:
		return "", ""
	case string:
		return stringTenant(x, claim)
	case json.Number:
		return numberTenant(x)
	case float64:
		return floatTenant(x)
	case bool:
		return "", "a boolean cannot name a tenant"
	case map[string]any:
		return "", "an object cannot name a tenant"
	case []any:
		return "", "an array cannot name a tenant"
	}
	return integerTenant(v)
}

// stringTenant returns x as it is, or why it cannot name a tenant exactly:
// an array claim as API Gateway renders it, or a number in a form that may
// have been rounded.
func stringTenant(x string, claim bool) (s, why string) {
	switch {
	case claim && len(x) >= 2 && x[0] == '[' && x[len(x)-1] == ']':
		return "", fmt.Sprintf("%.40q is an array claim as API Gateway renders it, which loses its elements' boundaries", x)
	case numberText(x) && strings.ContainsAny(x, ".eE"):
		return "", fmt.Sprintf("%.40q is a number in fraction or exponent form, which may have been rounded", x)
	}
	return x, ""
}

// numberTenant returns the integer literal x as it is ("-0" as "0"), or
// why x, not an integer literal, cannot name a tenant.
func numberTenant(x json.Number) (s, why string) {
	s = string(x)
	if !numberText(s) || strings.ContainsAny(s, ".eE") {
		return "", fmt.Sprintf("%.40q is not an integer literal", s)
	}
	if s == "-0" {
		s = "0"
	}
	return s, ""
}

// floatTenant returns the decimal form of x, or why x cannot name a tenant
// exactly: it is not an integer, or past the integers a float64 holds
// exactly.
func floatTenant(x float64) (s, why string) {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x):
		return "", fmt.Sprintf("%v is not an integer", x)
	case math.Abs(x) > maxExactFloat:
		return "", fmt.Sprintf("%v is past 2^53-1, where a float64 may be the rounding of another integer: give the id as a string", x)
	}
	return strconv.FormatInt(int64(x), 10), ""
}

// integerTenant returns the decimal form of v, a value of an integer kind,
// or why a value of another type cannot name a tenant.
func integerTenant(v any) (s, why string) {
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(rv.Int(), 10), ""
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(rv.Uint(), 10), ""
	}
	return "", fmt.Sprintf("a value of type %T cannot name a tenant", v)
}

// numberText reports whether s is a JSON number.
func numberText(s string) bool {
	return s != "" && (s[0] == '-' || '0' <= s[0] && s[0] <= '9') && json.Valid([]byte(s))
}

// InvocationTenant names the tenant by the invocation's tenant id, for a
// function in Lambda's tenant isolation mode: it is
// event.InvocationTenant, which every adapter can use, and its caveat
// holds (map the tenant id from the authorizer, never from what the client
// sends). HTTP APIs cannot invoke such functions; REST APIs can.
func InvocationTenant() Tenant { return event.InvocationTenant[Request]() }
