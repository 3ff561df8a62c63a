package apigw_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// TestAuthorizerContextValues: a Lambda authorizer's value names a tenant
// only when it is a string or an integer. A fraction, a boolean or an
// object is an error (the request fails closed), never rounded or
// truncated into the tenant of another caller: 1.5 is not tenant "1".
func TestAuthorizerContextValues(t *testing.T) {
	for _, tc := range []struct {
		name    string
		v       any
		want    string
		wantErr bool
	}{
		{"string", "acct-acme", "acct-acme", false},
		{"integer", float64(42), "42", false},
		{"negative integer", float64(-7), "-7", false},
		{"json number", json.Number("1001"), "1001", false},
		{"missing", nil, "", false},
		{"fraction", 1.5, "", true},
		{"small fraction", 42.000001, "", true},
		{"boolean", true, "", true},
		{"object", map[string]any{"id": "acct-acme"}, "", true},
	} {
		v1 := &events.APIGatewayProxyRequest{}
		v1.RequestContext.Authorizer = map[string]any{"accountId": tc.v}
		v2 := &events.APIGatewayV2HTTPRequest{}
		v2.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"accountId": tc.v}}
		for front, r := range map[string]apigw.Request{"v1": {V1: v1}, "v2": {V2: v2}} {
			got, err := apigw.AuthorizerContext("accountId")(context.Background(), r)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("%s %s (%#v): %q, %v; want %q, error %v", front, tc.name, tc.v, got, err, tc.want, tc.wantErr)
			}
		}
	}
}

// TestTenantOtherEvent: an extractor given an event it does not read (a
// REST API extractor on an HTTP API or function URL event, and the other
// way round, or an event without an authorizer) names no tenant, so the
// request fails closed with tenant-missing; it never panics.
func TestTenantOtherEvent(t *testing.T) {
	extractors := map[string]apigw.Tenant{
		"JWTClaim": apigw.JWTClaim(""), "CognitoClaim": apigw.CognitoClaim(""), "AuthorizerContext": apigw.AuthorizerContext("accountId"),
		"APIKeyID": apigw.APIKeyID(), "IAMUserARN": apigw.IAMUserARN(),
	}
	reads := map[string]map[string]bool{ // the events each extractor reads
		"JWTClaim": {"v2": true}, "CognitoClaim": {"v1": true}, "AuthorizerContext": {"v1": true, "v2": true},
		"APIKeyID": {"v1": true}, "IAMUserARN": {"v1": true, "v2": true, "url": true},
	}
	bare := map[string]apigw.Request{
		"v1": {V1: &events.APIGatewayProxyRequest{}}, "v2": {V2: &events.APIGatewayV2HTTPRequest{}},
		"url": {URL: &events.LambdaFunctionURLRequest{}}, "none": {},
	}
	for name, tenant := range extractors {
		for kind, r := range bare {
			got, err := tenant(context.Background(), r)
			if got != "" || err != nil {
				t.Errorf("%s on a bare %s event: %q, %v; want no tenant", name, kind, got, err)
			}
		}
	}
	// Each reads its own event only: given the others' fields set, it
	// still names nobody.
	v1 := &events.APIGatewayProxyRequest{}
	v1.RequestContext.Authorizer = map[string]any{"accountId": "acct-1", "claims": map[string]any{"sub": "user-1"}}
	v1.RequestContext.Identity.APIKeyID, v1.RequestContext.Identity.UserArn = "key-1", "arn:aws:iam::1:user/a"
	v2 := &events.APIGatewayV2HTTPRequest{}
	v2.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT:    &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "user-1"}},
		Lambda: map[string]any{"accountId": "acct-1"},
		IAM:    &events.APIGatewayV2HTTPRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::1:user/a"},
	}
	url := &events.LambdaFunctionURLRequest{}
	url.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{
		IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: "arn:aws:iam::1:user/a"},
	}
	full := map[string]apigw.Request{"v1": {V1: v1}, "v2": {V2: v2}, "url": {URL: url}}
	for name, tenant := range extractors {
		for kind, r := range full {
			got, err := tenant(context.Background(), r)
			if err != nil || (got != "") != reads[name][kind] {
				t.Errorf("%s on a %s event: %q, %v; want a tenant %v", name, kind, got, err, reads[name][kind])
			}
		}
	}
}
