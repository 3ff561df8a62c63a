package apigw_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/tenant"
)

// TestAuthorizerContextValues: a Lambda authorizer's value names a tenant
// only when it does so exactly: a string byte for byte, an integer in
// decimal when no decoder can have rounded it. A fraction, a float64 past
// 2^53-1 (two ids that round alike decode alike), a number spelled as
// text in fraction or exponent form, a boolean or an object is an error
// naming the field and wrapping tenant.ErrInexact (the request
// fails closed), never rounded or truncated into the tenant of another
// caller: 1.5 is not tenant "1".
func TestAuthorizerContextValues(t *testing.T) {
	const inexact = "inexact"
	for _, tc := range []struct {
		name string
		v    any
		want string // inexact: refused
	}{
		{"string", "acct-acme", "acct-acme"},
		{"string kept as sent", " Acct-Acme ", " Acct-Acme "},
		{"digits", "12345678901234567890", "12345678901234567890"},
		{"zero-padded digits", "007", "007"},
		{"string spelling a fraction", "1.5", inexact},
		{"string spelling an exponent", "1.2345678901234567E19", inexact},
		{"bracketed string", "[a b]", "[a b]"}, // a context value is no claim: no array renders so
		{"integer", float64(42), "42"},
		{"negative integer", float64(-7), "-7"},
		{"negative zero", math.Copysign(0, -1), "0"},
		{"2^53-1", float64(1<<53 - 1), "9007199254740991"},
		{"-(2^53-1)", -float64(1<<53 - 1), "-9007199254740991"},
		{"2^53", float64(1 << 53), inexact},
		{"2^53+2", float64(1<<53 + 2), inexact},
		{"-2^53", -float64(1 << 53), inexact},
		{"huge", 1e300, inexact},
		{"json number", json.Number("1001"), "1001"},
		{"big json number", json.Number("12345678901234567890"), "12345678901234567890"},
		{"json number -0", json.Number("-0"), "0"},
		{"json number fraction", json.Number("1.0"), inexact},
		{"json number exponent", json.Number("1e3"), inexact},
		{"json number not a number", json.Number("acct"), inexact},
		{"Go int64", int64(1) << 62, "4611686018427387904"},
		{"Go uint64", uint64(math.MaxUint64), "18446744073709551615"},
		{"missing", nil, ""},
		{"fraction", 1.5, inexact},
		{"small fraction", 42.000001, inexact},
		{"boolean", true, inexact},
		{"object", map[string]any{"id": "acct-acme"}, inexact},
		{"array", []any{"acct-acme"}, inexact},
	} {
		v1 := &events.APIGatewayProxyRequest{}
		v1.RequestContext.Authorizer = map[string]any{"accountId": tc.v}
		v2 := &events.APIGatewayV2HTTPRequest{}
		v2.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{Lambda: map[string]any{"accountId": tc.v}}
		for front, r := range map[string]apigw.Request{"v1": {V1: v1}, "v2": {V2: v2}} {
			got, err := apigw.AuthorizerContext("accountId")(context.Background(), r)
			checkTenantValue(t, front+" "+tc.name, got, err, tc.want, "requestContext.authorizer.")
		}
	}
}

// checkTenantValue checks what an extractor returned: want, or with want
// "inexact" an error wrapping tenant.ErrInexact naming field.
func checkTenantValue(t *testing.T, name, got string, err error, want, field string) {
	t.Helper()
	if want == "inexact" {
		if got != "" || !errors.Is(err, tenant.ErrInexact) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %q, %v; want an tenant.ErrInexact naming %s", name, got, err, field)
		}
		return
	}
	if got != want || err != nil {
		t.Errorf("%s: %q, %v; want %q", name, got, err, want)
	}
}

// TestClaimValues: a token claim names a tenant as an authorizer value
// does, and a claim API Gateway rendered from an array ("[a b]", which
// loses its elements' boundaries: ["a b"] renders alike) is refused too.
func TestClaimValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"subject", "auth0|5fe435b5cbbc85006b071eba", "auth0|5fe435b5cbbc85006b071eba"},
		{"long digits", "110169484474386276334", "110169484474386276334"},
		{"rendered array", "[admin editor]", "inexact"},
		{"rendered empty array", "[]", "inexact"},
		{"exponent", "1.2345678901234567E19", "inexact"},
		{"bracket inside", "a[1]", "a[1]"},
		{"missing", nil, ""},
		// A REST API JWT authorizer gives claims their JSON types.
		{"number", float64(1516239022), "1516239022"},
		{"number past 2^53-1", float64(12345678901234567890), "inexact"},
		{"array", []any{"admin"}, "inexact"},
		{"object", map[string]any{"city": "Seattle"}, "inexact"},
		{"boolean", false, "inexact"},
	} {
		v1 := &events.APIGatewayProxyRequest{}
		v1.RequestContext.Authorizer = map[string]any{"claims": map[string]any{"sub": tc.v}}
		got, err := apigw.CognitoClaim("")(context.Background(), apigw.Request{V1: v1})
		checkTenantValue(t, "Cognito "+tc.name, got, err, tc.want, "requestContext.authorizer.claims.sub")
		s, ok := tc.v.(string)
		if !ok {
			continue // an HTTP API JWT authorizer gives strings only
		}
		v2 := &events.APIGatewayV2HTTPRequest{}
		v2.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": s}}}
		got, err = apigw.JWTClaim("")(context.Background(), apigw.Request{V2: v2})
		checkTenantValue(t, "JWT "+tc.name, got, err, tc.want, "requestContext.authorizer.jwt.claims.sub")
	}
}

// TestTenantsNeverMerge: two callers whose ids (9007199254740993 and
// 9007199254740992, past 2^53-1) the Lambda runtime decodes to one float64
// are never one tenant: each request fails closed with tenant-missing, the
// handler does not run, and the second is never given the first's
// response.
func TestTenantsNeverMerge(t *testing.T) {
	e := newEnv(t, nil)
	o := &orders{}
	h := apigw.WrapV2(e.g, apigw.Config{Tenant: apigw.AuthorizerContext("accountId")}, o.handle)
	for _, id := range []string{"9007199254740993", "9007199254740992"} {
		raw := `{"version":"2.0","routeKey":"POST /orders","rawPath":"/orders",
			"headers":{"idempotency-key":"order-1","content-type":"application/json"},
			"requestContext":{"http":{"method":"POST"},"authorizer":{"lambda":{"accountId":` + id + `}}},
			"body":"{\"amount\":1000}"}`
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal([]byte(raw), &ev); err != nil {
			t.Fatal(err)
		}
		r := testkit.Call(t, h, ev)
		checkProblem(t, r.StatusCode, r.Headers, r.Body, 500, "tenant-missing")
	}
	if n := o.runs.Load(); n != 0 {
		t.Errorf("handler ran %d times, want none", n)
	}
	evs := e.Events()
	if len(evs) != 2 {
		t.Fatalf("events %+v, want two refusals", evs)
	}
	for _, ev := range evs {
		if !errors.Is(ev.Err, idemkit.ErrTenantMissing) || !errors.Is(ev.Err, tenant.ErrInexact) ||
			!strings.Contains(ev.Err.Error(), "requestContext.authorizer.lambda.accountId") {
			t.Errorf("event %s: %v, want ErrTenantMissing and tenant.ErrInexact naming the field", ev.Kind, ev.Err)
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

// tenantCase is a captured event, the Tenant setting a wrapper reads it
// with, and the tenant that must come out.
type tenantCase struct {
	name, file string
	tenant     apigw.Tenant
	want       string
}

// checkTenants sends each case's event, through send, to a wrapper over
// a fresh env: it must run (201) under the tenant the case wants.
func checkTenants(t *testing.T, cases []tenantCase, send func(t *testing.T, e *env, tc tenantCase) (status int, body string)) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			if status, body := send(t, e, tc); status != 201 {
				t.Fatalf("%d %s", status, body)
			}
			if evs := e.Events(); len(evs) != 1 || evs[0].Tenant != tc.want {
				t.Fatalf("events %+v, want tenant %q", evs, tc.want)
			}
		})
	}
}
