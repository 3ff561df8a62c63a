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
