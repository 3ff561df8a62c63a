package apigw

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit"
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
	responder := payload2Responder(a, urlResponse)
	return func(ctx context.Context, ev events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		r := payload2Request(a, ev.RequestContext.HTTP.Method, ev.Headers, ev.Body, ev.IsBase64Encoded, ev.RawQueryString)
		r.Path = adapter.NormalizePath(ev.RawPath)
		r.Tenant = cfg.tenant(Request{URL: &ev})
		return adapter.Serve(ctx, a, &r, responder, func(ctx context.Context) (events.LambdaFunctionURLResponse, error) {
			return h(ctx, ev)
		})
	}
}
