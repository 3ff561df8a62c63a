package apigw_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/eventlog"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
)

// TestMisconfigurationIsLoud: a request refused because the function is
// misconfigured (no tenant, an event of another shape than its wrapper
// reads) is logged through slog.Default when the guard has no Observer,
// and the error names the wrapper the event needs. With an Observer, the
// observer gets the same error and slog.Default stays quiet.
func TestMisconfigurationIsLoud(t *testing.T) {
	ok := func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 201}, nil
	}
	okV1 := func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		return events.APIGatewayProxyResponse{StatusCode: 201}, nil
	}
	// toV1 sends the captured event file to a REST API wrapper.
	toV1 := func(file string) func(t *testing.T, g *idemkit.Guard) int {
		return func(t *testing.T, g *idemkit.Guard) int {
			h := apigw.WrapV1(g, apigw.Config{Tenant: apigw.CognitoClaim("sub")}, okV1)
			return testkit.Call(t, h, testkit.Load[events.APIGatewayProxyRequest](t, file)).StatusCode
		}
	}
	for _, tc := range []struct {
		name   string
		call   func(t *testing.T, g *idemkit.Guard) int
		status int
		want   string
	}{
		{"no tenant", func(t *testing.T, g *idemkit.Guard) int {
			h := apigw.WrapV2(g, apigw.Config{Tenant: apigw.JWTClaim("tenant_id")}, ok)
			return testkit.Call(t, h, withKey(testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json"), "k-1")).StatusCode
		}, 500, "no tenant for the request"},
		{"REST API event to WrapV2", func(t *testing.T, g *idemkit.Guard) int {
			h := apigw.WrapV2(g, jwt, ok)
			return testkit.Call(t, h, testkit.Load[events.APIGatewayV2HTTPRequest](t, "v1-cognito.json")).StatusCode
		}, 500, "this is a REST API (v1) event: use WrapV1"},
		{"HTTP API event to WrapV1", toV1("v2-jwt.json"), 500, "this is an HTTP API (v2) event: use WrapV2"},
		{"Function URL event to WrapV1", toV1("url-iam.json"), 500, "this is a Function URL event: use WrapFunctionURL"},
	} {
		for _, observed := range []bool{false, true} {
			name := tc.name + ", no observer"
			if observed {
				name = tc.name + ", observer"
			}
			t.Run(name, func(t *testing.T) {
				logs := captureDefaultLog(t)
				var seen eventlog.Log
				cfg := idemkit.Config{Store: memstore.New()}
				if observed {
					cfg.Observer = &seen
				}
				g := testguard.New(t, cfg)
				if got := tc.call(t, g); got != tc.status {
					t.Fatalf("status %d, want %d", got, tc.status)
				}
				out := logs.String()
				if observed {
					evs := seen.Events()
					if out != "" {
						t.Errorf("slog.Default logged with an Observer set:\n%s", out)
					}
					if len(evs) != 1 || evs[0].Kind != observe.EventRefused || evs[0].Err == nil || !strings.Contains(evs[0].Err.Error(), tc.want) {
						t.Errorf("observer got %+v, want one refusal saying %q", evs, tc.want)
					}
					return
				}
				testkit.Has(t, "log", out, []string{"level=ERROR", "idemkit: misconfiguration", tc.want}, nil)
			})
		}
	}
}
