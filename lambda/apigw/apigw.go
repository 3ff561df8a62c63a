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
// Refusals are RFC 9457 problem responses (application/problem+json, with
// Cache-Control: no-store and X-Content-Type-Options: nosniff) whose type
// is a stable URI under https://idemkit.dev/problems/. A detail repeats at
// most 200 bytes of anything taken from the request. The table is the
// reference for the problem types of every adapter; when several apply,
// the one returned follows the order of precedence of
// [github.com/idemkit/idemkit.Guard.Do]:
//
//	key-missing                      400  the route requires a key and none was sent
//	key-invalid                      400  empty, too long, not printable ASCII, two values
//	key-expired                      400  a UUIDv7 key older than the record retention
//	body-invalid                     400  the body cannot be fingerprinted (bad JSON, duplicate keys, too deep)
//	body-too-large                   413  httpmw only: the body is over MaxBodyBytes or an outer http.MaxBytesReader's limit
//	path-too-long                    414  the path is over idemkit.MaxPathLen (2,048) bytes; nothing ran
//	query-too-large                  414  the query has more than idemkit.MaxQueryParams (10,000) parameters, as net/url refuses; nothing ran
//	fingerprint-mismatch             422  the key was used with a different request (body, query, resource)
//	operation-mismatch               422  account-wide keys: the key was used for another operation
//	in-flight                        409  a request with the key is running; Retry-After says when to retry
//	indeterminate-operator-required  409  an earlier run ended without a recorded outcome; an operator must resolve it
//	replay-window-passed             410  completed; the response is no longer replayed (originalStatus, location, completedAt)
//	response-not-stored              410  completed; the response was too large to store (originalStatus, location, completedAt)
//	store-unavailable                503  the store did not confirm the key; nothing ran; Retry-After
//	outcome-unknown                  503  the handler returned idemkit.ErrOutcomeUnknown; the key is kept, never run again
//	record-corrupt                   500  the stored record is unreadable; nothing ran or replayed
//	tenant-missing                   500  no authenticated caller: the Tenant setting is misconfigured; nothing ran
//	guard-failure                    500  an unexpected guard error, a record the store refuses, or an event without an HTTP method (ErrNoMethod); nothing ran
//	handler-failed                   500  httpmw only: the handler called httpmw.Fail; the key was freed
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
	"time"

	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/internal/adapter"
)

// ErrNoMethod is reported to the Observer for an event without an HTTP
// method, refused with a 500 guard-failure problem.
var ErrNoMethod = adapter.ErrNoMethod

// Config configures a wrapper. Its documentation is the reference for the
// settings every adapter shares (lambda/alb and httpmw refer to it). The
// zero value guards POST and PATCH on every route, requires an Idempotency-Key of at most 255 bytes, scopes
// records by method and concrete path, fingerprints the body (canonical
// JSON for JSON bodies, raw bytes otherwise) and the query string, replays
// Content-Type, Content-Encoding and Location. Tenant has no default: a
// Config without one is refused when it is wrapped.
type Config struct {
	// Tenant names the authenticated caller: JWTClaim, CognitoClaim,
	// AuthorizerContext, APIKeyID, IAMUserARN, SingleTenant or your own.
	// Required: the Wrap functions panic without it. An empty result or an
	// error: the request fails closed (500 tenant-missing), the handler
	// does not run and nothing is stored. The error, joined with
	// idemkit.ErrTenantMissing, goes to the Observer, or without one to
	// slog.Default (never to the caller).
	Tenant Tenant

	// Methods are the guarded methods. Nil: POST and PATCH. GET, HEAD,
	// OPTIONS, TRACE and CONNECT cannot be listed, nor a method with a
	// lower-case letter: methods are case-sensitive (RFC 9110), so "post"
	// would not name POST. Requests with other methods pass through
	// untouched, even with a key, except a guarded method spelled in
	// another case ("post"): it is another method, with an operation of
	// its own ("post /orders", which never shares a record with "POST
	// /orders"), and is guarded all the same, in case the handler folds
	// the case of methods and would run it as a POST.
	Methods []string
	// Header is the request header carrying the key, matched in any case.
	// Empty: "Idempotency-Key".
	Header string
	// MaxKeyLen is the longest key accepted, in bytes. Zero: 255.
	MaxKeyLen int
	// KeyOptional lets guarded requests without a key run unguarded.
	// False: they get a 400 key-missing problem.
	KeyOptional bool
	// Routes overrides KeyOptional and Fingerprint per route, keyed by
	// "METHOD /template" ("POST /orders/{id}/capture"; the method upper
	// case, and matched exactly) or, where the event
	// has no template, "METHOD /concrete/path" (a percent-encoded path in
	// its normal form, as docs/FINGERPRINT.md says: "/orders/~ann", not
	// "/orders/%7Eann").
	Routes map[string]Route
	// RouteTemplate scopes records by the route template (v1 resource, v2
	// routeKey) instead of the concrete path. A greedy route ("{proxy+}",
	// "$default") still uses the concrete path. The concrete path is then
	// part of the fingerprint: a key reused for another resource of the
	// template (/orders/2/capture after /orders/1/capture) is a 422
	// fingerprint-mismatch, never a replay.
	RouteTemplate bool
	// Fingerprint says what of the request must be equal for a retry to be
	// replayed. Zero: the whole body and the query string (set IgnoreQuery,
	// per route if need be, to leave the query out).
	Fingerprint fingerprint.Options
	// ReplayHeaders adds response headers to the replayed ones (Content-Type,
	// Content-Encoding, Location). Set-Cookie, Date, Retry-After, RateLimit-*,
	// request and trace ids and hop-by-hop fields cannot be listed.
	ReplayHeaders []string
	// StoreRetryAfter is the Retry-After of a 503 store-unavailable
	// problem. Zero: 1 s.
	StoreRetryAfter time.Duration
}

// Route overrides a Config for one route.
type Route struct {
	// KeyOptional lets requests without a key run unguarded.
	KeyOptional bool
	// Fingerprint replaces Config.Fingerprint for the route. Nil: Config's.
	Fingerprint *fingerprint.Options
}

func (c *Config) options() adapter.Options {
	return adapter.Options{
		NoTenant: c.Tenant == nil,
		Methods:  c.Methods, Header: c.Header, MaxKeyLen: c.MaxKeyLen, KeyOptional: c.KeyOptional,
		Routes: adapter.Routes(c.Routes), RouteTemplate: c.RouteTemplate, Fingerprint: c.Fingerprint,
		ReplayHeaders: c.ReplayHeaders, StoreRetryAfter: c.StoreRetryAfter,
	}
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
