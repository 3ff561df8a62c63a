package apigw_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// FuzzAPIGatewayV2 feeds random methods, headers and bodies to a guarded
// HTTP API handler: it never panics, never answers 500 (the tenant is
// configured) except 500 guard-failure to an event without a method, which
// never runs, and answers every refusal with a problem body.
func FuzzAPIGatewayV2(f *testing.F) {
	base := testkit.Load[events.APIGatewayV2HTTPRequest](f, "v2-jwt.json")
	f.Add("POST", "idempotency-key", base.Headers["idempotency-key"], "application/json", base.Body, false)
	f.Add("PATCH", "Idempotency-Key", `"a", "b"`, "application/json", `{"a":1,"a":2}`, false)
	f.Add("POST", "IDEMPOTENCY-KEY", "k\x00", "", "eyJhIjoxfQ==", true)
	f.Add("POST", "idempotency-key", "k", "application/x-www-form-urlencoded", "a=%zz", false)
	f.Add("GET", "idempotency-key", "k", "text/plain", "\xff\xfe", false)
	f.Add("DELETE", "x", "", "", "", true)
	f.Add("", "idempotency-key", "k", "application/json", `{}`, false)
	f.Add("POST", "idempotency-key", `"unterminated`, "application/merge-patch+json", `[[[[[[[[`, false)
	f.Add("POST", "idempotency-key", "0190a4b2-7c3d-7e4f-8a1b-2c3d4e5f6a7b", "application/json", `{"n":1e400}`, false)
	f.Fuzz(func(t *testing.T, method, name, key, contentType, body string, b64 bool) {
		e := newEnv(t, nil)
		runs := 0
		h := apigw.WrapV2(e.g, jwt, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			runs++
			return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"ok":true}`}, nil
		})
		ev := base
		ev.RequestContext.HTTP.Method = method
		ev.Headers = map[string]string{"content-type": contentType, name: key}
		ev.Body, ev.IsBase64Encoded = body, b64
		for i := 0; i < 2; i++ {
			r := testkit.Call(t, h, ev)
			checkFuzzAnswer(t, method, r.StatusCode, r.Headers, r.Body, 201)
		}
		if runs > 2 || method == "" && runs != 0 {
			t.Fatalf("%q ran %d times", method, runs)
		}
	})
}

// FuzzAPIGatewayV1 does the same for a REST API handler, whose key may
// arrive in Headers, in MultiValueHeaders, or in both with different
// values: it never panics, never answers 500, answers every refusal with a
// problem body, and runs the handler at most once for a guarded request
// and never for an event without a method (refused 500 guard-failure).
func FuzzAPIGatewayV1(f *testing.F) {
	base := testkit.Load[events.APIGatewayProxyRequest](f, "v1-cognito.json")
	f.Add("POST", "Idempotency-Key", base.Headers["Idempotency-Key"], "", "application/json", base.Body, false)
	f.Add("POST", "idempotency-key", "a", "a", "application/json", `{}`, false)
	f.Add("POST", "Idempotency-Key", "a", "b", "application/json", `{}`, false)
	f.Add("PATCH", "IDEMPOTENCY-KEY", `"a"`, "a", "", "eyJhIjoxfQ==", true)
	f.Add("POST", "Idempotency-Key", "", `"unterminated`, "application/json", `{"a":1,"a":2}`, false)
	f.Add("OPTIONS", "Idempotency-Key", "k", "k", "text/plain", "\xff", false)
	f.Add("", "Idempotency-Key", "k", "", "application/json", `{}`, false)
	f.Fuzz(func(t *testing.T, method, name, single, multi, contentType, body string, b64 bool) {
		e := newEnv(t, nil)
		runs := 0
		h := apigw.WrapV1(e.g, apigw.Config{Tenant: apigw.CognitoClaim("")}, func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
			runs++
			return events.APIGatewayProxyResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"ok":true}`}, nil
		})
		ev := base
		ev.HTTPMethod = method
		ev.Headers = map[string]string{"Content-Type": contentType, name: single}
		ev.MultiValueHeaders = map[string][]string{"Content-Type": {contentType}}
		if multi != "" {
			ev.MultiValueHeaders[name] = []string{multi}
		}
		ev.Body, ev.IsBase64Encoded = body, b64
		created := 0
		for i := 0; i < 2; i++ {
			r := testkit.Call(t, h, ev)
			checkFuzzAnswer(t, method, r.StatusCode, r.Headers, r.Body, 201)
			if r.StatusCode == 201 {
				created++
			}
		}
		// A method spelled in another case ("PoST") is guarded too, under
		// an operation of its own.
		guarded := strings.EqualFold(method, "POST") || strings.EqualFold(method, "PATCH")
		if guarded && runs > 1 || method == "" && runs != 0 || !guarded && method != "" && runs != 2 {
			t.Fatalf("%s ran %d times (%d created)", method, runs, created)
		}
	})
}

// FuzzFunctionURL does the same for a Lambda function URL handler (IAM
// caller), whose key may arrive as one header line holding several values
// and whose cookies and raw query ride beside the headers.
func FuzzFunctionURL(f *testing.F) {
	base := testkit.Load[events.LambdaFunctionURLRequest](f, "url-iam.json")
	f.Add("POST", "idempotency-key", "k-1", "application/json", `{"amount":1}`, "a=1&b=2", false)
	f.Add("POST", "Idempotency-Key", `"a", "b"`, "application/json", `{"a":1,"a":2}`, "", false)
	f.Add("PUT", "idempotency-key", "k\x00", "", "eyJhIjoxfQ==", "a=%zz", true)
	f.Add("POST", "idempotency-key", "k", "application/x-www-form-urlencoded", "a=%zz", "x", false)
	f.Add("GET", "idempotency-key", "k", "text/plain", "\xff\xfe", "", false)
	f.Add("", "idempotency-key", "k", "application/json", `{}`, "", false)
	f.Fuzz(func(t *testing.T, method, name, key, contentType, body, query string, b64 bool) {
		e := newEnv(t, nil)
		runs := 0
		h := apigw.WrapFunctionURL(e.g, apigw.Config{Tenant: apigw.IAMUserARN()}, func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
			runs++
			return events.LambdaFunctionURLResponse{StatusCode: 202, Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"ok":true}`, Cookies: []string{"s=1"}}, nil
		})
		ev := base
		ev.RequestContext.HTTP.Method = method
		ev.Headers = map[string]string{"content-type": contentType, name: key}
		ev.RawQueryString = query
		ev.Body, ev.IsBase64Encoded = body, b64
		for i := 0; i < 2; i++ {
			r := testkit.Call(t, h, ev)
			checkFuzzAnswer(t, method, r.StatusCode, r.Headers, r.Body, 202)
			if i == 1 && r.StatusCode == 202 && r.Headers["Idempotent-Replayed"] == "true" && r.Cookies != nil {
				t.Fatalf("a replay carries the first caller's cookies: %v", r.Cookies)
			}
		}
		if runs > 2 || method == "" && runs != 0 {
			t.Fatalf("%q ran %d times", method, runs)
		}
	})
}

// checkFuzzAnswer fails t unless a fuzzed event's answer is the handler's
// own status ok, or a refusal (400, 409, 414, 422) with a problem body of
// that status, or, for an event without a method (another shape), 500
// guard-failure.
func checkFuzzAnswer(t *testing.T, method string, status int, header map[string]string, body string, ok int) {
	t.Helper()
	if method == "" {
		checkProblem(t, status, header, body, 500, "guard-failure")
		return
	}
	switch status {
	case ok:
	case 400, 409, 414, 422:
		var p struct {
			Status int `json:"status"`
		}
		if header["Content-Type"] != "application/problem+json" || json.Unmarshal([]byte(body), &p) != nil || p.Status != status {
			t.Fatalf("refusal %d without a problem body: %v %q", status, header, body)
		}
	default:
		t.Fatalf("status %d: %s", status, body)
	}
}
