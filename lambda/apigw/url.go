package apigw

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/internal/adapter"
)

// WrapFunctionURL guards a Lambda function URL handler and returns a
// handler of the same signature. A function URL has no route templates.
// Records are scoped by method and concrete path, and Routes are keyed by
// "METHOD /path". Its authenticated caller is the IAM principal
// (IAMUserARN) when the URL uses AWS_IAM auth. Response cookies are never
// stored or replayed.
// It panics when g is nil, when cfg has no Tenant, or when a setting
// cannot be used. It panics when it is called, not at the first request,
// so a bad setup stops the function at init.
func WrapFunctionURL(g *idemkit.Guard, cfg Config, h func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error)) func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	a := adapter.MustNew("apigw", g, cfg.Settings, cfg.Tenant != nil)
	responder := adapter.Responder[events.LambdaFunctionURLResponse]{
		Snapshot: func(r events.LambdaFunctionURLResponse) *idemkit.Snapshot {
			return a.LambdaSnapshot(r.StatusCode, r.Headers, nil, r.Body, r.IsBase64Encoded)
		},
		Replay: func(s *idemkit.Snapshot) events.LambdaFunctionURLResponse {
			hdr := adapter.Single(s.Header, 1)
			hdr[adapter.ReplayedHeader] = "true"
			body, b64 := adapter.LambdaBody(s)
			return events.LambdaFunctionURLResponse{StatusCode: s.Status, Headers: hdr, Body: body, IsBase64Encoded: b64}
		},
		Fresh: func(r events.LambdaFunctionURLResponse) events.LambdaFunctionURLResponse {
			r.Headers = adapter.WithoutReplayed(r.Headers)
			return r
		},
		Respond: func(r httpproblem.Response) events.LambdaFunctionURLResponse {
			body, b64 := adapter.ResponseBody(r.Body)
			return events.LambdaFunctionURLResponse{StatusCode: r.Status, Headers: adapter.Single(r.Header, 0), Body: body, IsBase64Encoded: b64}
		},
	}
	return func(ctx context.Context, ev events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		r := adapter.Request{
			Method:      ev.RequestContext.HTTP.Method,
			Path:        adapter.NormalizePath(ev.RawPath),
			Key:         adapter.Values(ev.Headers, nil, a.Header()),
			ContentType: adapter.First(ev.Headers, nil, "Content-Type"),
			BodyString:  ev.Body,
			Base64:      ev.IsBase64Encoded,
			RawQuery:    ev.RawQueryString,
			Header:      multi(ev.Headers),
			Tenant:      cfg.tenant(Request{URL: &ev}),
		}
		return adapter.Serve(ctx, a, &r, responder, func(ctx context.Context) (events.LambdaFunctionURLResponse, error) {
			return h(ctx, ev)
		})
	}
}
