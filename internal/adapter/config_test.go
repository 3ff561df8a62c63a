package adapter_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/alb"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// TestNilTenantRefusedAtWrap: an adapter configured without a Tenant stops
// the function when it is wrapped, naming the setting, instead of
// answering every guarded request 500 tenant-missing.
func TestNilTenantRefusedAtWrap(t *testing.T) {
	g := testguard.Mem(t)
	for name, wrap := range map[string]func(){
		"apigw v2": func() {
			apigw.WrapV2(g, apigw.Config{}, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				return events.APIGatewayV2HTTPResponse{}, nil
			})
		},
		"apigw v1": func() {
			apigw.WrapV1(g, apigw.Config{}, func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				return events.APIGatewayProxyResponse{}, nil
			})
		},
		"function url": func() {
			apigw.WrapFunctionURL(g, apigw.Config{}, func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
				return events.LambdaFunctionURLResponse{}, nil
			})
		},
		"alb": func() {
			alb.Wrap(g, alb.Config{}, func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
				return events.ALBTargetGroupResponse{}, nil
			})
		},
		"httpmw": func() { httpmw.New(g, httpmw.Config{})(http.NotFoundHandler()) },
	} {
		t.Run(name, func(t *testing.T) {
			if p := testkit.PanicOf(wrap); !strings.Contains(p, "Tenant setting is nil") {
				t.Fatalf("panic %q, want one naming the nil Tenant", p)
			}
		})
	}
}
