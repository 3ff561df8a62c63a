package apigw

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/internal/adapter"
)

// WrapV1 guards a REST API (payload 1.0) proxy handler and returns a
// handler of the same signature.
// It panics when g is nil, when cfg has no Tenant, or when a setting
// cannot be used. It panics when it is called, not at the first request,
// so a bad setup stops the function at init.
func WrapV1(g *idemkit.Guard, cfg Config, h func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)) func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	a := adapter.MustNew("apigw", g, cfg.Settings, cfg.Tenant != nil)
	responder := adapter.Responder[events.APIGatewayProxyResponse]{
		Snapshot: func(r events.APIGatewayProxyResponse) *idemkit.Snapshot {
			return a.LambdaSnapshot(r.StatusCode, r.Headers, r.MultiValueHeaders, r.Body, r.IsBase64Encoded)
		},
		Replay: func(s *idemkit.Snapshot) events.APIGatewayProxyResponse {
			single, multi := adapter.Split(s.Header, 1)
			single[adapter.ReplayedHeader] = "true"
			body, b64 := adapter.LambdaBody(s)
			return events.APIGatewayProxyResponse{StatusCode: s.Status, Headers: single, MultiValueHeaders: multi,
				Body: body, IsBase64Encoded: b64}
		},
		Fresh: func(r events.APIGatewayProxyResponse) events.APIGatewayProxyResponse {
			r.Headers, r.MultiValueHeaders = adapter.WithoutReplayed(r.Headers), adapter.WithoutReplayed(r.MultiValueHeaders)
			return r
		},
		Respond: func(r httpproblem.Response) events.APIGatewayProxyResponse {
			single, multi := adapter.Split(r.Header, 0)
			body, b64 := adapter.ResponseBody(r.Body)
			return events.APIGatewayProxyResponse{StatusCode: r.Status, Headers: single, MultiValueHeaders: multi,
				Body: body, IsBase64Encoded: b64}
		},
	}
	return func(ctx context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		r := adapter.Request{
			Method:      ev.HTTPMethod,
			Path:        adapter.NormalizePath(ev.Path),
			Template:    ev.Resource,
			Key:         adapter.Values(ev.Headers, ev.MultiValueHeaders, a.Header()),
			ContentType: adapter.First(ev.Headers, ev.MultiValueHeaders, "Content-Type"),
			BodyString:  ev.Body,
			Base64:      ev.IsBase64Encoded,
			Query: func() map[string][]string {
				return adapter.MultiOr(ev.QueryStringParameters, ev.MultiValueQueryStringParameters)
			},
			Header: func() map[string][]string {
				return adapter.MultiOr(ev.Headers, ev.MultiValueHeaders)
			},
			Tenant:     cfg.tenant(Request{V1: &ev}),
			OtherShape: v1Shape(&ev),
		}
		return adapter.Serve(ctx, a, &r, responder, func(ctx context.Context) (events.APIGatewayProxyResponse, error) {
			return h(ctx, ev)
		})
	}
}

// v1Shape names the wrapper for an event WrapV1 cannot read: a payload
// 2.0 event (HTTP API, Function URL) has its method and path in fields a
// REST API event does not have, so only its requestContext's apiId and
// domainName remain.
func v1Shape(ev *events.APIGatewayProxyRequest) string {
	rc := ev.RequestContext
	if ev.HTTPMethod != "" || rc.HTTPMethod != "" || rc.APIID == "" || ev.Path != "" || ev.Resource != "" {
		return ""
	}
	if strings.Contains(rc.DomainName, ".lambda-url.") {
		return "this is a Function URL event: use WrapFunctionURL"
	}
	return "this is an HTTP API (v2) event: use WrapV2"
}
