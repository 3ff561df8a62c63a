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

// TestV2ReplayAsDelivered: an HTTP API replay is the response API Gateway
// delivered the first time: payload format 2.0 has no multiValueHeaders in
// its response, so a handler's MultiValueHeaders, never delivered, are not
// replayed either; empty bodies, 204 and 304, binary bodies and header
// spellings replay as they were.
func TestV2ReplayAsDelivered(t *testing.T) {
	for _, tc := range []struct {
		name       string
		resp       events.APIGatewayV2HTTPResponse
		wantHeader string // the replay's headers, without Idempotent-Replayed
	}{
		{"multiValueHeaders are not delivered, not replayed", events.APIGatewayV2HTTPResponse{StatusCode: 201,
			Headers:           map[string]string{"Content-Type": "application/json", "Location": "/orders/ord_1"},
			MultiValueHeaders: map[string][]string{"Content-Type": {"text/plain"}, "Location": {"/elsewhere"}, "X-Order-Id": {"ord_1"}},
			Body:              `{"id":"ord_1"}`},
			"map[Content-Type:application/json Location:/orders/ord_1]"},
		{"only multiValueHeaders: none delivered", events.APIGatewayV2HTTPResponse{StatusCode: 201,
			MultiValueHeaders: map[string][]string{"Location": {"/orders/ord_1"}}, Body: `{"id":"ord_1"}`},
			"map[]"},
		{"lower-case names", events.APIGatewayV2HTTPResponse{StatusCode: 201,
			Headers: map[string]string{"content-type": "application/json", "location": "/orders/ord_1", "x-order-id": "ord_1"}, Body: `{}`},
			"map[Content-Type:application/json Location:/orders/ord_1 X-Order-Id:ord_1]"},
		{"204 without a body", events.APIGatewayV2HTTPResponse{StatusCode: 204}, "map[]"},
		{"304 without a body", events.APIGatewayV2HTTPResponse{StatusCode: 304, Headers: map[string]string{"Location": "/orders/ord_1"}},
			"map[Location:/orders/ord_1]"},
		{"binary body", events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "application/octet-stream"},
			Body: "AAH/gA==", IsBase64Encoded: true}, "map[Content-Type:application/octet-stream]"},
		{"empty base64 body", events.APIGatewayV2HTTPResponse{StatusCode: 202, IsBase64Encoded: true}, "map[]"},
		{"gzip body", events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Encoding": "gzip", "Content-Type": "application/json"},
			Body: "H4sIAAAAAAAA/6pWKkktLlGyUkpKTVGqBQQAAP//", IsBase64Encoded: true},
			"map[Content-Encoding:gzip Content-Type:application/json]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			runs := 0
			cfg := jwt
			cfg.ReplayHeaders = []string{"X-Order-Id"}
			h := apigw.WrapV2(e.g, cfg, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				runs++
				return tc.resp, nil
			})
			ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
			testkit.Call(t, h, ev)
			r := testkit.Call(t, h, ev)
			if runs != 1 || !replayed(r) {
				t.Fatalf("%d runs, replayed %v", runs, replayed(r))
			}
			delete(r.Headers, "Idempotent-Replayed")
			if got := fmt.Sprint(r.Headers); got != tc.wantHeader {
				t.Errorf("replayed headers %s, want %s", got, tc.wantHeader)
			}
			if r.StatusCode != tc.resp.StatusCode || r.Body != tc.resp.Body || r.IsBase64Encoded != tc.resp.IsBase64Encoded ||
				r.MultiValueHeaders != nil || r.Cookies != nil {
				t.Errorf("replay %+v, want %+v without multiValueHeaders and cookies", r, tc.resp)
			}
		})
	}
}

// TestV1ReplayAsDelivered: a REST API replay keeps the one-value and
// many-value headers API Gateway delivered, the values of a name in
// multiValueHeaders replacing its value in headers as API Gateway merges
// them, and bodies of any kind as they were.
func TestV1ReplayAsDelivered(t *testing.T) {
	for _, tc := range []struct {
		name       string
		resp       events.APIGatewayProxyResponse
		wantSingle string // the replay's Headers, without Idempotent-Replayed
		wantMulti  string
	}{
		{"multi replaces single", events.APIGatewayProxyResponse{StatusCode: 201,
			Headers:           map[string]string{"Content-Type": "text/plain", "Location": "/orders/ord_1"},
			MultiValueHeaders: map[string][]string{"content-type": {"application/json"}},
			Body:              `{}`},
			"map[Content-Type:application/json Location:/orders/ord_1]", "map[]"},
		{"several values stay several", events.APIGatewayProxyResponse{StatusCode: 201,
			MultiValueHeaders: map[string][]string{"X-Order-Id": {"ord_1", "ord_2"}, "Set-Cookie": {"a=1", "b=2"}},
			Body:              `{}`},
			"map[]", "map[X-Order-Id:[ord_1 ord_2]]"},
		{"204 without a body", events.APIGatewayProxyResponse{StatusCode: 204}, "map[]", "map[]"},
		{"binary body", events.APIGatewayProxyResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "image/png"},
			Body: "iVBORw0KGgo=", IsBase64Encoded: true}, "map[Content-Type:image/png]", "map[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			runs := 0
			h := apigw.WrapV1(e.g, apigw.Config{Tenant: apigw.CognitoClaim(""), Settings: httpconfig.Settings{ReplayHeaders: []string{"X-Order-Id"}}},
				func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
					runs++
					return tc.resp, nil
				})
			ev := testkit.Load[events.APIGatewayProxyRequest](t, "v1-cognito.json")
			h(context.Background(), ev)
			r, err := h(context.Background(), ev)
			if err != nil || runs != 1 || r.Headers["Idempotent-Replayed"] != "true" {
				t.Fatalf("%d runs, replay %+v, %v", runs, r, err)
			}
			delete(r.Headers, "Idempotent-Replayed")
			if got := fmt.Sprint(r.Headers); got != tc.wantSingle {
				t.Errorf("replayed Headers %s, want %s", got, tc.wantSingle)
			}
			if got := fmt.Sprint(r.MultiValueHeaders); got != tc.wantMulti {
				t.Errorf("replayed MultiValueHeaders %s, want %s", got, tc.wantMulti)
			}
			if r.StatusCode != tc.resp.StatusCode || r.Body != tc.resp.Body || r.IsBase64Encoded != tc.resp.IsBase64Encoded {
				t.Errorf("replay %+v, want %+v", r, tc.resp)
			}
		})
	}
}
