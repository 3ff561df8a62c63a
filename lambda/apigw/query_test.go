package apigw_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// TestV2QueryNotDropped: the HTTP API and function URL wrappers
// fingerprint every pair of the raw query string.
func TestV2QueryNotDropped(t *testing.T) {
	for _, tc := range testkit.QueryRetries {
		t.Run(tc.Name, func(t *testing.T) {
			e := newEnv(t, nil)
			o := &orders{}
			checkV2QueryRetry(t, apigw.WrapV2(e.g, jwt, o.handle), o, tc.First, tc.Second, tc.Replay)
		})
	}
}

func TestFunctionURLQueryNotDropped(t *testing.T) {
	for _, tc := range testkit.QueryRetries {
		t.Run(tc.Name, func(t *testing.T) {
			e := newEnv(t, nil)
			runs := 0
			h := apigw.WrapFunctionURL(e.g, apigw.Config{Tenant: apigw.IAMUserARN()}, func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
				runs++
				return events.LambdaFunctionURLResponse{StatusCode: 202, Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"job":"po_1"}`}, nil
			})
			ev := testkit.Load[events.LambdaFunctionURLRequest](t, "url-iam.json")
			ev.RawQueryString = tc.First
			if r, _ := h(context.Background(), ev); r.StatusCode != 202 {
				t.Fatalf("first: %d %s", r.StatusCode, r.Body)
			}
			ev.RawQueryString = tc.Second
			r := testkit.Call(t, h, ev)
			if tc.Replay {
				if r.Headers["Idempotent-Replayed"] != "true" || runs != 1 {
					t.Errorf("got %d %v after %d runs, want a replay", r.StatusCode, r.Headers, runs)
				}
				return
			}
			checkProblem(t, r.StatusCode, r.Headers, r.Body, 422, "fingerprint-mismatch")
			if runs != 1 {
				t.Error("handler ran")
			}
		})
	}
}

// checkV2QueryRetry sends the v2 order request with the first query, then
// its retry with the second, and checks that the retry is a replay when
// replay is set and a fingerprint mismatch otherwise, the handler having
// run once.
func checkV2QueryRetry(t *testing.T, h v2Handler, o *orders, first, second string, replay bool) {
	t.Helper()
	ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
	ev.RawQueryString = first
	if r := testkit.Call(t, h, ev); r.StatusCode != 201 {
		t.Fatalf("first: %d %s", r.StatusCode, r.Body)
	}
	ev.RawQueryString = second
	r := testkit.Call(t, h, ev)
	if replay {
		if !replayed(r) || o.runs.Load() != 1 {
			t.Errorf("got %d replayed=%v, want a replay", r.StatusCode, replayed(r))
		}
		return
	}
	checkProblem(t, r.StatusCode, r.Headers, r.Body, 422, "fingerprint-mismatch")
	if o.runs.Load() != 1 {
		t.Error("handler ran")
	}
}

// TestV1RepeatedQuery: a REST API event gives a repeated parameter's last
// value in queryStringParameters and all of them in
// multiValueQueryStringParameters: the fingerprint reads all, so a retry
// that changes any but the last value is a mismatch, never a replay.
func TestV1RepeatedQuery(t *testing.T) {
	e := newEnv(t, nil)
	o := &restOrders{}
	h := apigw.WrapV1(e.g, apigw.Config{Tenant: apigw.APIKeyID()}, o.handle)
	send := func(values ...string) events.APIGatewayProxyResponse {
		ev := testkit.Load[events.APIGatewayProxyRequest](t, "v1-apikey-iam.json")
		ev.QueryStringParameters = map[string]string{"account": values[len(values)-1]}
		ev.MultiValueQueryStringParameters = map[string][]string{"account": values}
		r := testkit.Call(t, h, ev)
		return r
	}
	if r := send("1", "2"); r.StatusCode != 201 {
		t.Fatalf("first: %d %s", r.StatusCode, r.Body)
	}
	if r := send("1", "2"); r.Headers["Idempotent-Replayed"] != "true" {
		t.Errorf("same query: %d %v, want a replay", r.StatusCode, r.Headers)
	}
	for _, vs := range [][]string{{"3", "2"}, {"2"}, {"2", "1", "2"}} {
		r := send(vs...)
		checkProblem(t, r.StatusCode, r.Headers, r.Body, 422, "fingerprint-mismatch")
	}
	if o.runs != 1 {
		t.Errorf("handler ran %d times, want 1", o.runs)
	}
}
