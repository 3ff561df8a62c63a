// Package apigw makes API Gateway and Lambda function URL handlers safe to
// retry: wrap a handler with [WrapV1] (REST API), [WrapV2] (HTTP API) or
// [WrapFunctionURL], and a POST or PATCH that carries an Idempotency-Key
// runs at most once per (tenant, operation, key); its retries get the first
// response back byte for byte, marked Idempotent-Replayed: true.
//
// The wrappers return the handler's own signature, so they go straight to
// lambda.Start:
//
//	g, _ := idemkit.New(idemkit.Config{Store: store})
//	h := apigw.WrapV2(g, apigw.Config{Tenant: apigw.JWTClaim("sub")}, createOrder)
//	lambda.Start(h)
//
// Refusals are RFC 9457 problem responses; package
// [github.com/idemkit/idemkit/httpguard] lists their types and statuses,
// and documents the settings every adapter shares.
//
// A replay is the first response as the caller received it: a body
// without IsBase64Encoded that is not valid UTF-8 reached the caller with
// each bad byte replaced by U+FFFD (the Lambda runtime encodes it as a JSON
// string), and it is stored and replayed so. Return binary bodies base64
// encoded, with IsBase64Encoded set.
//
// An event of another shape than the wrapper's (a REST API event given to
// WrapV2, an integration whose payload format version does not match) has
// no HTTP method where the wrapper reads it: it is refused with a 500
// guard-failure problem, reported to the Observer as [ErrNoMethod], and
// never passed on unguarded. Where the wrapper can tell, the error names
// the one the event needs ("this is a REST API (v1) event: use WrapV1").
// Without an Observer, such refusals and tenant-missing ones are logged
// through slog.Default, as store failures are.
//
// A handler's Go error is returned as the wrapper's error after the claim
// was released, so a retry runs again; a panic is released and re-raised.
// Pass the Lambda context through: the claim's lease ends at its deadline.
package apigw

import (
	"context"

	"github.com/idemkit/idemkit/httpguard"
	"github.com/idemkit/idemkit/internal/adapter"
)

// ErrNoMethod is reported to the Observer for an event without an HTTP
// method, refused with a 500 guard-failure problem.
var ErrNoMethod = adapter.ErrNoMethod

// Config configures a wrapper: the tenant, and the settings every
// adapter shares (see httpguard.Settings, whose zero value guards POST and
// PATCH). Tenant has no default: a Config without one is refused when it
// is wrapped.
type Config struct {
	// Tenant names the authenticated caller: JWTClaim, CognitoClaim,
	// AuthorizerContext, APIKeyID, IAMUserARN, SingleTenant or your own.
	// Required: the Wrap functions panic without it. An empty result or an
	// error fails the request closed (500 tenant-missing), as
	// idemkit.TenantFunc says.
	Tenant Tenant

	httpguard.Settings
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
