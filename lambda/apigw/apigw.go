// Package apigw makes API Gateway and Lambda function URL handlers safe to
// retry. Wrap a handler with [WrapV1] (REST API), [WrapV2] (HTTP API) or
// [WrapFunctionURL]. A POST or PATCH that carries an Idempotency-Key then
// runs at most once per (tenant, operation, key). Its retries get the first
// response back, byte for byte, marked Idempotent-Replayed: true.
//
// The wrappers return the handler's own signature, so they go straight to
// lambda.Start:
//
//	g, _ := idemkit.New(idemkit.Config{Store: store})
//	h := apigw.WrapV2(g, apigw.Config{Tenant: apigw.JWTClaim("sub")}, createOrder)
//	lambda.Start(h)
//
// Refusals are RFC 9457 problem responses. Package
// [github.com/idemkit/idemkit/httpproblem] lists their types and
// statuses; package [github.com/idemkit/idemkit/httpconfig] documents the
// settings every adapter shares.
//
// A replay is the first response as the caller received it. The Lambda
// runtime encodes a body as a JSON string, so a body without
// IsBase64Encoded that is not valid UTF-8 reached the caller with each bad
// byte replaced by U+FFFD. It is stored and replayed so. Return binary
// bodies base64 encoded, with IsBase64Encoded set.
//
// An event of another shape than the wrapper's (a REST API event given to
// WrapV2, an integration whose payload format version does not match) has
// no HTTP method where the wrapper reads it. It is refused with a 500
// guard-failure problem, reported to the Observer as [ErrNoMethod], and
// never passed on unguarded. Where the wrapper can tell, the error names
// the wrapper the event needs ("this is a REST API (v1) event: use
// WrapV1"). Without an Observer, such refusals and tenant-missing ones are
// logged through slog.Default, as store failures are.
//
// A handler's Go error is returned as the wrapper's error after the claim
// was released, so a retry runs again. The caller then gets what the front
// makes of a function error, not a problem: an HTTP API answers 500
// {"message":"Internal Server Error"}, a REST API and a function URL 502.
// It stays a function error so that Lambda counts and logs it (the Errors
// metric, the runtime's error log) as without the guard. An error wrapping
// idemkit.ErrOutcomeUnknown keeps the key instead, and the client gets a
// 503 outcome-unknown problem. A panic releases the claim and is raised
// again. A response the handler returns is its outcome, whatever its
// status: a 500 response is stored and replayed for the replay window
// (24 h by default) like a 201, so return a Go error, not a 500 response,
// for a failure a retry may cure. Pass the Lambda context through, since
// the claim's lease ends at its deadline.
package apigw

import (
	"context"

	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/internal/adapter"
)

// ErrNoMethod is reported to the Observer for an event without an HTTP
// method, refused with a 500 guard-failure problem.
var ErrNoMethod = adapter.ErrNoMethod

// Config configures a wrapper. It holds the tenant, and the settings every
// adapter shares (httpconfig.Settings, whose zero value guards POST and
// PATCH). Tenant has no default. A Config without one is refused when the
// handler is wrapped.
type Config struct {
	// Tenant names the authenticated caller: JWTClaim, CognitoClaim,
	// AuthorizerContext, APIKeyID, IAMUserARN, SingleTenant or your own.
	// Required: the Wrap functions panic without it. An empty result or an
	// error fails the request closed (500 tenant-missing), as
	// tenant.Func says.
	Tenant Tenant

	httpconfig.Settings
}

func (c *Config) tenant(r Request) func(context.Context) (string, error) {
	if c.Tenant == nil {
		return nil
	}
	return func(ctx context.Context) (string, error) { return c.Tenant(ctx, r) }
}

// multi defers adapter.Multi(h) until a fingerprint option asks for it.
func multi(h map[string]string) func() map[string][]string {
	return func() map[string][]string { return adapter.Multi(h) }
}
