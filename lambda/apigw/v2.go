package apigw

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit"
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
	responder := payload2Responder(a, httpAPIResponse)
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		r := payload2Request(a, ev.RequestContext.HTTP.Method, ev.Headers, ev.Body, ev.IsBase64Encoded, ev.RawQueryString)
		r.Path = ev.RawPath
		r.Template = routeTemplate(ev.RouteKey)
		r.Tenant = cfg.tenant(Request{V2: &ev})
		r.OtherShape = v2Shape(&ev)
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
