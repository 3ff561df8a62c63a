package apigw_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/observe"
)

// TestWrongEventShape: an event of another shape than the wrapper's (a
// REST API event given to WrapV2, an HTTP API event given to WrapV1, a
// payload format 1.0 integration in front of WrapV2) has no HTTP method
// where the wrapper looks for one. It is refused closed with a 500
// guard-failure problem, reported as ErrNoMethod: run unguarded, a
// retried POST with a key would run twice.
func TestWrongEventShape(t *testing.T) {
	single := apigw.Config{Tenant: apigw.SingleTenant("internal")}
	for _, tc := range []struct {
		name string
		call func(t *testing.T, g *idemkit.Guard, runs *int) (int, map[string]string, string)
	}{
		{"REST API event to WrapV2", func(t *testing.T, g *idemkit.Guard, runs *int) (int, map[string]string, string) {
			h := apigw.WrapV2(g, single, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				*runs++
				return events.APIGatewayV2HTTPResponse{StatusCode: 201, Body: `{"id":"ord_1"}`}, nil
			})
			ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v1-cognito.json")
			r := testkit.Call(t, h, ev)
			return r.StatusCode, r.Headers, r.Body
		}},
		{"HTTP API event to WrapV1", func(t *testing.T, g *idemkit.Guard, runs *int) (int, map[string]string, string) {
			h := apigw.WrapV1(g, single, func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				*runs++
				return events.APIGatewayProxyResponse{StatusCode: 201, Body: `{"id":"ord_1"}`}, nil
			})
			ev := testkit.Load[events.APIGatewayProxyRequest](t, "v2-jwt.json")
			r := testkit.Call(t, h, ev)
			return r.StatusCode, r.Headers, r.Body
		}},
		{"REST API event to WrapFunctionURL", func(t *testing.T, g *idemkit.Guard, runs *int) (int, map[string]string, string) {
			h := apigw.WrapFunctionURL(g, single, func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
				*runs++
				return events.LambdaFunctionURLResponse{StatusCode: 201, Body: `{"id":"ord_1"}`}, nil
			})
			ev := testkit.Load[events.LambdaFunctionURLRequest](t, "v1-cognito.json")
			r := testkit.Call(t, h, ev)
			return r.StatusCode, r.Headers, r.Body
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			runs := 0
			for i := 0; i < 2; i++ {
				status, header, body := tc.call(t, e.g, &runs)
				checkProblem(t, status, header, body, 500, "guard-failure")
			}
			if runs != 0 {
				t.Errorf("handler ran %d times", runs)
			}
			evs := e.Events()
			if len(evs) != 2 || evs[0].Kind != observe.EventRefused || !errors.Is(evs[0].Err, apigw.ErrNoMethod) {
				t.Errorf("events %+v, want two refusals with ErrNoMethod", evs)
			}
		})
	}
}
