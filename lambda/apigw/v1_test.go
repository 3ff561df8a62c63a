package apigw_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/lambda/apigw"
)

type restOrders struct{ runs int }

func (o *restOrders) handle(_ context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	o.runs++
	return events.APIGatewayProxyResponse{
		StatusCode: 201,
		Headers:    map[string]string{"Content-Type": "application/json", "X-Amzn-RequestId": ev.RequestContext.RequestID},
		MultiValueHeaders: map[string][]string{
			"Link":       {"</orders/ord_1>; rel=self", "</customers/cus_42>; rel=customer"},
			"Set-Cookie": {"a=1", "b=2"},
		},
		Body: fmt.Sprintf(`{"id":"ord_%d"}`, o.runs),
	}, nil
}

// TestV1TenantExtractors: each built-in reads the caller of a REST API event.
func TestV1TenantExtractors(t *testing.T) {
	checkTenants(t, []tenantCase{
		{"Cognito sub", "v1-cognito.json", apigw.CognitoClaim(""), "tenant-a"},
		{"Cognito custom claim", "v1-cognito.json", apigw.CognitoClaim("custom:merchant_id"), "m_1001"},
		{"Lambda authorizer principal", "v1-lambda-authorizer.json", apigw.AuthorizerContext("principalId"), "user|a1b2c3"},
		{"Lambda authorizer context key", "v1-lambda-authorizer.json", apigw.AuthorizerContext("accountId"), "acct-acme"},
		{"Lambda authorizer integer", "v1-lambda-authorizer.json", apigw.AuthorizerContext("seats"), "42"},
		{"API key id", "v1-apikey-iam.json", apigw.APIKeyID(), "q8wz1xmplk"},
		{"IAM caller", "v1-apikey-iam.json", apigw.IAMUserARN(), "arn:aws:sts::123456789012:assumed-role/billing-worker/billing-worker"},
		{"custom", "v1-apikey-iam.json", func(_ context.Context, r apigw.Request) (string, error) {
			return "acct:" + r.V1.RequestContext.Identity.AccountID, nil
		}, "acct:123456789012"},
	}, func(t *testing.T, e *env, tc tenantCase) (int, string) {
		h := apigw.WrapV1(e.g, apigw.Config{Tenant: tc.tenant}, (&restOrders{}).handle)
		r := testkit.Call(t, h, testkit.Load[events.APIGatewayProxyRequest](t, tc.file))
		return r.StatusCode, r.Body
	})
}

// TestV1TenantMissing: an extractor for another authorizer finds nothing.
func TestV1TenantMissing(t *testing.T) {
	e := newEnv(t, nil)
	o := &restOrders{}
	h := apigw.WrapV1(e.g, apigw.Config{Tenant: apigw.CognitoClaim("")}, o.handle)
	r, _ := h(context.Background(), testkit.Load[events.APIGatewayProxyRequest](t, "v1-apikey-iam.json"))
	checkProblem(t, r.StatusCode, r.Headers, r.Body, 500, "tenant-missing")
	if o.runs != 0 {
		t.Error("handler ran")
	}
}

// TestV1Keys: the key is read across Headers and MultiValueHeaders.
func TestV1Keys(t *testing.T) {
	for _, tc := range []struct {
		name       string
		single     map[string]string
		multi      map[string][]string
		wantStatus int
		wantType   string
	}{
		{name: "both maps agree", single: map[string]string{"Idempotency-Key": "k1"}, multi: map[string][]string{"Idempotency-Key": {"k1"}}, wantStatus: 201},
		{name: "lower case in multi only", multi: map[string][]string{"idempotency-key": {`"k1"`}}, wantStatus: 201},
		{name: "single map only", single: map[string]string{"IDEMPOTENCY-KEY": "k1"}, wantStatus: 201},
		{name: "two field lines with one value", multi: map[string][]string{"Idempotency-Key": {"k1", `"k1"`}}, wantStatus: 201},
		{name: "uuid bare and quoted on two lines", multi: map[string][]string{"Idempotency-Key": {
			"0190a1b2-40d5-43e8-bc93-6894a57f9324", `"0190a1b2-40d5-43e8-bc93-6894a57f9324"`}}, wantStatus: 201},
		{name: "two field lines with different values", single: map[string]string{"Idempotency-Key": "k2"},
			multi: map[string][]string{"Idempotency-Key": {"k1", "k2"}}, wantStatus: 400, wantType: "key-invalid"},
		{name: "maps disagree", single: map[string]string{"Idempotency-Key": "k1"}, multi: map[string][]string{"idempotency-key": {"k2"}},
			wantStatus: 400, wantType: "key-invalid"},
		{name: "missing", wantStatus: 400, wantType: "key-missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			h := apigw.WrapV1(e.g, apigw.Config{Tenant: apigw.CognitoClaim("")}, (&restOrders{}).handle)
			ev := testkit.Load[events.APIGatewayProxyRequest](t, "v1-cognito.json")
			ev.Headers, ev.MultiValueHeaders = tc.single, tc.multi
			r := testkit.Call(t, h, ev)
			if tc.wantType != "" {
				checkProblem(t, r.StatusCode, r.Headers, r.Body, tc.wantStatus, tc.wantType)
			} else if r.StatusCode != tc.wantStatus {
				t.Errorf("status %d, want %d: %s", r.StatusCode, tc.wantStatus, r.Body)
			}
		})
	}
}

// TestV1Replay: multi-value allow-listed headers replay as such; cookies
// and request ids never do.
func TestV1Replay(t *testing.T) {
	e := newEnv(t, nil)
	o := &restOrders{}
	h := apigw.WrapV1(e.g, apigw.Config{Tenant: apigw.CognitoClaim(""), Settings: httpconfig.Settings{ReplayHeaders: []string{"Link"}}}, o.handle)
	ev := testkit.Load[events.APIGatewayProxyRequest](t, "v1-cognito.json")
	fresh, _ := h(context.Background(), ev)
	if fresh.Headers["Idempotent-Replayed"] != "" || len(fresh.MultiValueHeaders["Set-Cookie"]) != 2 {
		t.Errorf("fresh response changed: %+v", fresh)
	}
	r, _ := h(context.Background(), ev)
	want := "map[Content-Type:application/json Idempotent-Replayed:true] map[Link:[</orders/ord_1>; rel=self </customers/cus_42>; rel=customer]]"
	if got := fmt.Sprint(r.Headers, " ", r.MultiValueHeaders); got != want {
		t.Errorf("replayed headers\n got %s\nwant %s", got, want)
	}
	if r.StatusCode != 201 || r.Body != fresh.Body || o.runs != 1 {
		t.Errorf("replay %+v after %d runs", r, o.runs)
	}
}

// TestV1RouteTemplate: the REST resource is the template.
func TestV1RouteTemplate(t *testing.T) {
	for _, tc := range []struct {
		template bool
		want     string
	}{{false, "POST /orders/1/capture"}, {true, "POST /orders/{id}/capture"}} {
		e := newEnv(t, nil)
		h := apigw.WrapV1(e.g, apigw.Config{Tenant: apigw.AuthorizerContext("accountId"), Settings: httpconfig.Settings{RouteTemplate: tc.template}}, (&restOrders{}).handle)
		h(context.Background(), testkit.Load[events.APIGatewayProxyRequest](t, "v1-lambda-authorizer.json"))
		if evs := e.Events(); len(evs) != 1 || evs[0].Operation != tc.want {
			t.Errorf("RouteTemplate=%v: events %+v, want operation %q", tc.template, evs, tc.want)
		}
	}
}

// TestV1OptionalRoute: Routes are keyed by the resource template.
func TestV1OptionalRoute(t *testing.T) {
	e := newEnv(t, nil)
	o := &restOrders{}
	h := apigw.WrapV1(e.g, apigw.Config{Tenant: apigw.AuthorizerContext("accountId"), Settings: httpconfig.Settings{Routes: map[string]httpconfig.Route{"POST /orders/{id}/capture": {KeyOptional: true}}}}, o.handle)
	ev := testkit.Load[events.APIGatewayProxyRequest](t, "v1-lambda-authorizer.json")
	ev.Headers, ev.MultiValueHeaders = nil, nil
	h(context.Background(), ev)
	h(context.Background(), ev)
	if o.runs != 2 || len(e.Events()) != 0 {
		t.Errorf("runs %d, events %d: want two unguarded runs", o.runs, len(e.Events()))
	}
}

// TestFunctionURL: IAM caller, replay without cookies.
func TestFunctionURL(t *testing.T) {
	e := newEnv(t, nil)
	runs := 0
	h := apigw.WrapFunctionURL(e.g, apigw.Config{Tenant: apigw.IAMUserARN()}, func(_ context.Context, ev events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		runs++
		return events.LambdaFunctionURLResponse{StatusCode: 202, Headers: map[string]string{"Content-Type": "application/json", "Location": "/payouts/po_1"},
			Body: `{"job":"po_1"}`, Cookies: []string{"s=1"}}, nil
	})
	ev := testkit.Load[events.LambdaFunctionURLRequest](t, "url-iam.json")
	fresh, _ := h(context.Background(), ev)
	r, _ := h(context.Background(), ev)
	if runs != 1 || r.StatusCode != 202 || r.Body != fresh.Body || r.Cookies != nil || r.Headers["Idempotent-Replayed"] != "true" || r.Headers["Location"] != "/payouts/po_1" {
		t.Errorf("replay %+v after %d runs", r, runs)
	}
	if evs := e.Events(); evs[0].Tenant != "arn:aws:sts::123456789012:assumed-role/payout-worker/payout-worker" || evs[0].Operation != "POST /payouts" {
		t.Errorf("event %+v", evs[0])
	}
	ev.Body = `{"amount":25001,"currency":"eur"}`
	r, _ = h(context.Background(), ev)
	checkProblem(t, r.StatusCode, r.Headers, r.Body, 422, "fingerprint-mismatch")
}

// TestV1ResourceMismatch: with RouteTemplate, a key reused on another
// resource of the same REST resource template, or with another query
// string, is a 422 fingerprint-mismatch, never a replay.
func TestV1ResourceMismatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*events.APIGatewayProxyRequest)
	}{
		{"other order", func(ev *events.APIGatewayProxyRequest) {
			ev.Path = "/orders/2/capture"
			ev.PathParameters = map[string]string{"id": "2"}
		}},
		{"query string", func(ev *events.APIGatewayProxyRequest) {
			ev.QueryStringParameters = map[string]string{"dryRun": "true"}
			ev.MultiValueQueryStringParameters = map[string][]string{"dryRun": {"true"}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			o := &restOrders{}
			h := apigw.WrapV1(e.g, apigw.Config{Tenant: apigw.AuthorizerContext("accountId"), Settings: httpconfig.Settings{RouteTemplate: true}}, o.handle)
			ev := testkit.Load[events.APIGatewayProxyRequest](t, "v1-lambda-authorizer.json")
			if r, err := h(context.Background(), ev); err != nil || r.StatusCode != 201 {
				t.Fatalf("first: %d %v", r.StatusCode, err)
			}
			tc.mod(&ev)
			r := testkit.Call(t, h, ev)
			checkProblem(t, r.StatusCode, r.Headers, r.Body, 422, "fingerprint-mismatch")
			if o.runs != 1 {
				t.Errorf("handler ran %d times", o.runs)
			}
		})
	}
}
