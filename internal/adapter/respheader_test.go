package adapter_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/alb"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// sentFront sends one guarded POST /orders with key "order-1" to one
// adapter, whose handler sets the response headers hdr (each name spelled
// as given, every value; a Lambda front's single-value field takes a name's
// last value), and returns the headers the front answered with, spellings
// kept.
type sentFront func(t *testing.T) map[string][]string

// headerFronts returns every front wrapped around a handler that answers
// 201 with the headers hdr, over one guard each, and counts its runs.
func headerFronts(t *testing.T, hdr [][2]string, runs *int) map[string]sentFront {
	single := func() map[string]string {
		m := map[string]string{}
		for _, kv := range hdr {
			m[kv[0]] = kv[1]
		}
		return m
	}
	multi := func() map[string][]string {
		m := map[string][]string{}
		for _, kv := range hdr {
			m[kv[0]] = append(m[kv[0]], kv[1])
		}
		return m
	}
	asMulti := func(m map[string]string) map[string][]string {
		out := map[string][]string{}
		for k, v := range m {
			out[k] = []string{v}
		}
		return out
	}
	merged := func(s map[string]string, m map[string][]string) map[string][]string {
		out := asMulti(s)
		for k, vs := range m {
			out[k] = vs
		}
		return out
	}
	tenant := "tenant-a"
	body := `{"id":"ord_1"}`
	v1 := apigw.WrapV1(testguard.Mem(t), apigw.Config{Tenant: apigw.SingleTenant(tenant)}, func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		*runs++
		return events.APIGatewayProxyResponse{StatusCode: 201, Headers: single(), Body: body}, nil
	})
	v1m := apigw.WrapV1(testguard.Mem(t), apigw.Config{Tenant: apigw.SingleTenant(tenant)}, func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		*runs++
		return events.APIGatewayProxyResponse{StatusCode: 201, MultiValueHeaders: multi(), Body: body}, nil
	})
	v2 := apigw.WrapV2(testguard.Mem(t), apigw.Config{Tenant: apigw.SingleTenant(tenant)}, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		*runs++
		return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: single(), Body: body}, nil
	})
	url := apigw.WrapFunctionURL(testguard.Mem(t), apigw.Config{Tenant: apigw.SingleTenant(tenant)}, func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		*runs++
		return events.LambdaFunctionURLResponse{StatusCode: 201, Headers: single(), Body: body}, nil
	})
	lbm := alb.Wrap(testguard.Mem(t), alb.Config{Tenant: alb.SingleTenant(tenant)}, func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
		*runs++
		return events.ALBTargetGroupResponse{StatusCode: 201, MultiValueHeaders: multi(), Body: body}, nil
	})
	lbs := alb.Wrap(testguard.Mem(t), alb.Config{Tenant: alb.SingleTenant(tenant)}, func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
		*runs++
		return events.ALBTargetGroupResponse{StatusCode: 201, Headers: single(), Body: body}, nil
	})
	mw := httpmw.New(testguard.Mem(t), httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return tenant, nil }})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*runs++
		for _, kv := range hdr {
			w.Header()[kv[0]] = append(w.Header()[kv[0]], kv[1]) // spelled as given
		}
		w.WriteHeader(201)
		io.WriteString(w, body)
	}))
	return map[string]sentFront{
		"v1 headers": func(t *testing.T) map[string][]string {
			ev := events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/orders", Resource: "/orders",
				Headers: map[string]string{"Idempotency-Key": "order-1"}, MultiValueHeaders: map[string][]string{"Idempotency-Key": {"order-1"}}}
			r := testkit.Call(t, v1, ev)
			return merged(r.Headers, r.MultiValueHeaders)
		},
		"v1 multiValueHeaders": func(t *testing.T) map[string][]string {
			ev := events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/orders", Resource: "/orders",
				Headers: map[string]string{"Idempotency-Key": "order-1"}, MultiValueHeaders: map[string][]string{"Idempotency-Key": {"order-1"}}}
			r := testkit.Call(t, v1m, ev)
			return merged(r.Headers, r.MultiValueHeaders)
		},
		"v2": func(t *testing.T) map[string][]string {
			ev := v2Post("POST /orders", "/orders", "", map[string]string{"idempotency-key": "order-1"}, "")
			r := testkit.Call(t, v2, ev)
			return asMulti(r.Headers)
		},
		"url": func(t *testing.T) map[string][]string {
			ev := urlPost("/orders", "", map[string]string{"idempotency-key": "order-1"}, "")
			r := testkit.Call(t, url, ev)
			return asMulti(r.Headers)
		},
		"alb multi-value": func(t *testing.T) map[string][]string {
			ev := events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: "/orders",
				MultiValueHeaders: map[string][]string{"idempotency-key": {"order-1"}}}
			r := testkit.Call(t, lbm, ev)
			return r.MultiValueHeaders
		},
		"alb single-value": func(t *testing.T) map[string][]string {
			ev := events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: "/orders",
				Headers: map[string]string{"idempotency-key": "order-1"}}
			r := testkit.Call(t, lbs, ev)
			return asMulti(r.Headers)
		},
		"httpmw": func(t *testing.T) map[string][]string {
			r := httptest.NewRequest(http.MethodPost, "/orders", nil)
			r.Header.Set("Idempotency-Key", "order-1")
			w := httptest.NewRecorder()
			mw.ServeHTTP(w, r)
			return w.Result().Header
		},
	}
}

// values returns the values of name in h under every spelling, spellings
// in bytewise order.
func values(h map[string][]string, name string) []string {
	var keys []string
	for k := range h {
		if http.CanonicalHeaderKey(k) == http.CanonicalHeaderKey(name) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, h[k]...)
	}
	return out
}
