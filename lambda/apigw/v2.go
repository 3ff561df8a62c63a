package apigw

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/internal/adapter"
)

// WrapV2 guards an HTTP API (payload 2.0) handler and returns a handler of
// the same signature. HTTP API delivers rawPath decoded already, so the
// operation uses it as it is. Response cookies are never stored or replayed, nor
// MultiValueHeaders, which payload format 2.0 does not deliver.
// It panics when g is nil, when cfg has no Tenant, or when a setting
// cannot be used. It panics when it is called, not at the first request,
// so a bad setup stops the function at init.
func WrapV2(g *idemkit.Guard, cfg Config, h func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	a := adapter.MustNew("apigw", g, cfg.Settings, cfg.Tenant != nil)
	responder := adapter.Responder[events.APIGatewayV2HTTPResponse]{
		Snapshot: func(r events.APIGatewayV2HTTPResponse) *idemkit.Snapshot {
			// Payload format 2.0 responses have no multiValueHeaders: API
			// Gateway never delivers them, so they are not replayed either.
			return a.LambdaSnapshot(r.StatusCode, r.Headers, nil, r.Body, r.IsBase64Encoded)
		},
		Replay: func(s *idemkit.Snapshot) events.APIGatewayV2HTTPResponse {
			hdr := adapter.Single(s.Header, 1)
			hdr[adapter.ReplayedHeader] = "true"
			body, b64 := adapter.LambdaBody(s)
			return events.APIGatewayV2HTTPResponse{StatusCode: s.Status, Headers: hdr, Body: body, IsBase64Encoded: b64}
		},
		Fresh: func(r events.APIGatewayV2HTTPResponse) events.APIGatewayV2HTTPResponse {
			r.Headers = adapter.WithoutReplayed(r.Headers)
			return r
		},
		Respond: func(r httpproblem.Response) events.APIGatewayV2HTTPResponse {
			body, b64 := adapter.ResponseBody(r.Body)
			return events.APIGatewayV2HTTPResponse{StatusCode: r.Status, Headers: adapter.Single(r.Header, 0), Body: body, IsBase64Encoded: b64}
		},
	}
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		r := adapter.Request{
			Method:      ev.RequestContext.HTTP.Method,
			Path:        ev.RawPath,
			Template:    routeTemplate(ev.RouteKey),
			Key:         adapter.Values(ev.Headers, nil, a.Header()),
			ContentType: adapter.First(ev.Headers, nil, "Content-Type"),
			BodyString:  ev.Body,
			Base64:      ev.IsBase64Encoded,
			RawQuery:    ev.RawQueryString,
			Header:      multi(ev.Headers),
			Tenant:      cfg.tenant(Request{V2: &ev}),
			OtherShape:  v2Shape(&ev),
		}
		return adapter.Serve(ctx, a, &r, responder, func(ctx context.Context) (events.APIGatewayV2HTTPResponse, error) {
			return h(ctx, ev)
		})
	}
}

// v2Shape names the wrapper for an event WrapV2 cannot read: a REST API
// event (or payload format 1.0) has no requestContext.http, and either
// version "1.0" or no version, where every payload 2.0 event has "2.0".
func v2Shape(ev *events.APIGatewayV2HTTPRequest) string {
	if ev.RequestContext.HTTP.Method != "" {
		return ""
	}
	if ev.Version == "1.0" || (ev.Version == "" && ev.RequestContext.APIID != "") {
		return "this is a REST API (v1) event: use WrapV1"
	}
	return ""
}

// routeTemplate returns the path of an HTTP API route key ("POST
// /orders/{id}" -> "/orders/{id}"); "$default" stays as it is.
func routeTemplate(routeKey string) string {
	if _, path, ok := strings.Cut(routeKey, " "); ok {
		return path
	}
	return routeKey
}
