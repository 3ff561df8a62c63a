// Package httpconfig holds the settings idemkit's HTTP adapters share.
// The Config of lambda/apigw, lambda/alb and httpmw embeds its [Settings],
// which also hold two hooks: one answers problems in the API's own error
// format, the other adjusts the header of replayed responses. A setting
// means the same in every adapter. Where an adapter reads one differently
// (what a route template is), Settings says so.
// The limits every HTTP adapter applies to a guarded request,
// [MaxPathLen] and [MaxQueryParams], are fixed, and their errors are here
// too.
//
//	cfg := apigw.Config{
//		Tenant:   apigw.JWTClaim("sub"),
//		Settings: httpconfig.Settings{RouteTemplate: true, ReplayHeaders: []string{"ETag"}},
//	}
//
// The problem responses the adapters answer with, their types and
// statuses, are package [github.com/idemkit/idemkit/httpproblem]'s.
package httpconfig

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/httpproblem"
)

// Settings are the settings every HTTP adapter shares; each adapter's
// Config embeds them. The zero value guards POST and PATCH on every
// route, requires an Idempotency-Key of at most 255 bytes, scopes records
// by method and concrete path, fingerprints the body (canonical JSON for
// JSON bodies, raw bytes otherwise) and the query string, and replays
// Content-Type, Content-Encoding and Location.
type Settings struct {
	// Methods are the guarded methods. Nil: POST and PATCH. GET, HEAD,
	// OPTIONS, TRACE and CONNECT cannot be listed. Nor can a method with a
	// lower-case letter, since methods are case-sensitive (RFC 9110) and
	// "post" would not name POST. Requests with other methods pass through
	// untouched, even with a key. The exception is a guarded method spelled
	// in another case ("post"). It is another method, with an operation of
	// its own ("post /orders" never shares a record with "POST /orders"),
	// and it is guarded all the same, in case the handler folds the case of
	// methods and would run it as a POST.
	Methods []string
	// Header is the request header carrying the key, matched in any case.
	// Empty: "Idempotency-Key".
	Header string
	// MaxKeyLen is the longest key accepted, in bytes. Zero: 255.
	MaxKeyLen int
	// KeyOptional lets guarded requests without a key run unguarded.
	// False: they get a 400 key-missing problem.
	KeyOptional bool
	// Routes overrides KeyOptional and Fingerprint per route. Its keys are
	// "METHOD /template", with the method upper case and matched exactly.
	// Where the request has no template, a key is "METHOD /concrete/path",
	// with the path percent-encoded in its normal form as
	// docs/FINGERPRINT.md says ("/orders/~ann", not "/orders/%7Eann"). The
	// template is the REST API resource ("POST /orders/{id}/capture"), the
	// HTTP API route key, or the http.ServeMux pattern without its method
	// (httpmw). Function URL and ALB events have none.
	Routes map[string]Route
	// RouteTemplate scopes records by the route template instead of the
	// concrete path. A greedy template ("{proxy+}", "$default", a ServeMux
	// pattern ending in "/" or "{x...}") and a request without one
	// (Function URL, ALB, httpmw wrapping a whole mux) still use the
	// concrete path. With a template, the concrete path is part of the
	// fingerprint. A key reused for another resource of the template
	// (/orders/2/capture after /orders/1/capture) is a 422
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

	// ProblemResponse returns the response sent for a problem, in the
	// API's own error format, built from the problem's Type, Status, Detail
	// and RetryAfter. When RetryAfter is set, send Retry-After yourself.
	// Nil: p.Response(), RFC 9457. A status outside 200-599 is replaced by
	// p.Status. These header fields are dropped: fields that are not valid,
	// hop-by-hop fields, the framing (Connection, Transfer-Encoding,
	// Content-Length), and Idempotent-Replayed, which only a replay
	// carries. idemclient reads RFC 9457 problems only. It takes another
	// format for a plain response and retries it only when it is a 429 or
	// a 5xx, so it does not wait out a 409 in-flight.
	ProblemResponse func(ctx context.Context, p httpproblem.Details) httpproblem.Response
	// AdjustReplay may add, change or remove header fields of a replayed
	// response before it is sent; status is the stored status. The body
	// and status are the stored answer and cannot change. Content-Type and
	// Content-Encoding, which describe the body, keep their stored values,
	// and Idempotent-Replayed stays "true". Hop-by-hop fields, the framing
	// and fields that are not valid are dropped. A field that is never
	// stored (Set-Cookie, Date, X-Request-Id, RateLimit-*) is sent as the
	// hook sets it, since it belongs to this response, not the first one.
	// Nil: the stored header as it is.
	AdjustReplay func(ctx context.Context, status int, header http.Header)
}

// Route overrides Settings for one route.
type Route struct {
	// KeyOptional lets requests without a key run unguarded.
	KeyOptional bool
	// Fingerprint replaces Settings.Fingerprint for the route. Nil:
	// Settings'.
	Fingerprint *fingerprint.Options
}

// MaxPathLen is the longest request path, in bytes, that the HTTP adapters
// guard. The operation names the path, and it is stored and logged with
// every record. A guarded request with a longer path is refused before the
// store with [ErrPathTooLong].
const MaxPathLen = 2048

// MaxQueryParams is the most query parameters the HTTP adapters read from
// a guarded request. It is the default limit of net/url since Go 1.26, and
// parameters are counted as net/url counts them: one more than the "&" of
// a raw query, or the values of an event's parameters. A guarded request
// with more is refused before the store with [ErrQueryTooLarge], because
// its handler would read no parameter at all.
const MaxQueryParams = 10000

// Errors the HTTP adapters report to the Observer for a guarded request
// they refuse before the store, with a 414 problem.
var (
	// ErrPathTooLong: the request path is over MaxPathLen bytes
	// (path-too-long).
	ErrPathTooLong = fmt.Errorf("idemkit: request path longer than %d bytes", MaxPathLen)
	// ErrQueryTooLarge: the query string has more than MaxQueryParams
	// parameters (query-too-large). With fingerprint.Options.IgnoreQuery,
	// the query is not read and not bounded.
	ErrQueryTooLarge = fmt.Errorf("idemkit: query string with more than %d parameters", MaxQueryParams)
)
