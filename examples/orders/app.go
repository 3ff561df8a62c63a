package orders

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/clock"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/observe"
)

// HandlerFunc is the signature lambda.Start runs for an HTTP API (payload
// 2.0) integration, and the one the local server calls.
type HandlerFunc = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// Routes are the HTTP API route keys of the example, as template.yaml
// declares them (a test checks that it does).
var Routes = []string{
	"POST /orders",
	"GET /orders/{id}",
	"POST /payments",
}

// RequestIDHeader is set on every response, replays and refusals
// included, to a value unique to the HTTP request: API Gateway's
// requestContext.requestId. It is never stored in a snapshot, so a replay
// carries its own, new value.
const RequestIDHeader = "X-Request-Id"

// Options are what Handler needs. Store and Repo are required.
type Options struct {
	// Store keeps the idempotency records: memstore for one process,
	// dynamo for Lambda.
	Store idemkit.Store
	// Repo keeps the orders and payments.
	Repo Repo
	// Policy is the idempotency policy of every operation (replay window,
	// record retention; stale leases fail closed: this API moves money).
	Policy idemkit.Policy
	// Observer receives every idempotency outcome. Nil: none.
	Observer observe.Observer
	// Logger receives one line per request and every failure. Nil:
	// slog.Default().
	Logger *slog.Logger
	// Clock is the time the guard and the handlers read. Nil: the system
	// clock.
	Clock clock.Clock
	// Outbox, when set, is sent a ShipRequest for every order created (and
	// again when a request is run again): the shipping worker's queue.
	// Nil: none is sent.
	Outbox Outbox
}

type app struct {
	repo   Repo
	outbox Outbox // nil: none
	log    *slog.Logger
	now    func() time.Time
	tenant apigw.Tenant
}

// Handler returns the example's Lambda handler: the routes guarded by
// idemkit (apigw.WrapV2, tenant = the JWT authorizer's sub claim), wrapped
// by an outer layer that sets X-Request-Id, Cache-Control and
// X-Content-Type-Options: nosniff on every response and turns handler errors and panics (after the guard released
// the key) into problem responses. cmd/lambda passes it to lambda.Start;
// cmd/local calls it for each HTTP request.
func Handler(o Options) (HandlerFunc, error) {
	if o.Store == nil || o.Repo == nil {
		return nil, errors.New("orders: Options.Store and Options.Repo are required")
	}
	a := &app{repo: o.Repo, outbox: o.Outbox, log: o.Logger, now: time.Now, tenant: apigw.JWTClaim("sub")}
	if a.log == nil {
		a.log = slog.Default()
	}
	if o.Clock != nil {
		a.now = o.Clock.Now
	}
	g, err := idemkit.New(idemkit.Config{Store: o.Store, Policy: o.Policy, Observer: o.Observer, Clock: o.Clock})
	if err != nil {
		return nil, err
	}
	guarded := apigw.WrapV2(g, apigw.Config{Tenant: a.tenant, Settings: httpconfig.Settings{RouteTemplate: true}}, a.route)
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse, err error) {
		start := a.now()
		rid := ev.RequestContext.RequestID
		if rid == "" {
			rid = uuid.NewString()
		}
		defer func() {
			if p := recover(); p != nil {
				a.log.ErrorContext(ctx, "orders: handler panicked", "request_id", rid, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				resp = (&Problem{Type: TypeInternal, Title: "Internal error", Status: 500,
					Detail: "The request failed and nothing was recorded for its Idempotency-Key; retry with the same key."}).Response()
			}
			if resp.Headers == nil {
				resp.Headers = map[string]string{}
			}
			resp.Headers[RequestIDHeader] = rid
			if _, ok := resp.Headers["Cache-Control"]; !ok {
				resp.Headers["Cache-Control"] = "no-store"
			}
			// No answer is to be sniffed into HTML by a browser.
			resp.Headers["X-Content-Type-Options"] = "nosniff"
			a.log.InfoContext(ctx, "request", "request_id", rid, "route", ev.RouteKey, "path", ev.RawPath,
				"status", resp.StatusCode, "replayed", resp.Headers["Idempotent-Replayed"] == "true",
				"duration_ms", a.now().Sub(start).Milliseconds())
		}()
		resp, err = guarded(ctx, ev)
		// An unknown outcome (idemkit.ErrOutcomeUnknown) is answered by the
		// guard itself: 503 outcome-unknown, the key kept for an operator.
		if err != nil {
			// The guard released the key: a retry runs again, unless the
			// release failed too.
			a.log.WarnContext(ctx, "orders: request failed", "request_id", rid, "route", ev.RouteKey, "error", err.Error())
			detail := "The request did not complete and nothing was recorded for its Idempotency-Key; retry with the same key."
			if keyHeld(err) {
				detail = "The request did not complete, and its Idempotency-Key could not be freed. Retrying with the same key is safe: until the key's lease ends a retry gets 409 in-flight; after it the request runs again, or, where the operation fails closed, waits for an operator to resolve the key."
			}
			resp = (&Problem{Type: TypeTemporarilyDown, Title: "Temporarily unavailable", Status: 503, RetryAfter: 1, Detail: detail}).Response()
		}
		return resp, nil
	}, nil
}

// keyHeld reports whether the guard failed to free the key after the
// handler's error err: its release failed, or the key was no longer the
// run's (taken over after its lease).
func keyHeld(err error) bool {
	var se *idemkit.StoreError
	return (errors.As(err, &se) && se.Op == "release") || errors.Is(err, idemkit.ErrNotOwner)
}

// route dispatches on the route key; an event without one of ours
// ("$default", a proxy route) is matched by method and path.
func (a *app) route(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	key, params := ev.RouteKey, ev.PathParameters
	if !isRoute(key) || (strings.Contains(key, "{") && len(params) == 0) {
		var ok bool
		if key, params, ok = MatchRoute(ev.RequestContext.HTTP.Method, ev.RawPath); !ok {
			return notFound("No route " + ev.RequestContext.HTTP.Method + " " + ev.RawPath + "."), nil
		}
	}
	tenant, _ := a.tenant(ctx, apigw.Request{V2: &ev})
	if tenant == "" {
		// API Gateway's JWT authorizer always sets sub; without it the
		// deployment is misconfigured. Fail closed.
		return (&Problem{Type: TypeTenantMissing, Title: "No authenticated caller", Status: 500,
			Detail: "The request carries no authenticated caller (JWT sub claim); the route's authorizer is misconfigured."}).Response(), nil
	}
	switch key {
	case "POST /orders":
		return a.createOrder(ctx, tenant, ev)
	case "GET /orders/{id}":
		return a.getOrder(ctx, tenant, params["id"])
	case "POST /payments":
		return a.createPayment(ctx, tenant, ev)
	}
	return notFound("No route " + key + "."), nil
}

func isRoute(key string) bool {
	for _, r := range Routes {
		if r == key {
			return true
		}
	}
	return false
}

// MatchRoute returns the route key and path parameters of a request, as
// API Gateway matches them against Routes: the method exactly, then the
// path segment by segment, "{name}" matching one non-empty segment. ok is false when no route matches
// (API Gateway then answers 404 without invoking the function).
func MatchRoute(method, path string) (routeKey string, params map[string]string, ok bool) {
	segs := strings.Split(path, "/")
	for _, r := range Routes {
		m, tmpl, _ := strings.Cut(r, " ")
		if m != method { // methods are case-sensitive (RFC 9110): post is not POST
			continue
		}
		ts := strings.Split(tmpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		var p map[string]string
		match := true
		for i, t := range ts {
			if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
				if segs[i] == "" {
					match = false
					break
				}
				if p == nil {
					p = map[string]string{}
				}
				p[t[1:len(t)-1]] = segs[i]
				continue
			}
			if t != segs[i] {
				match = false
				break
			}
		}
		if match {
			return r, p, true
		}
	}
	return "", nil, false
}

func jsonResponse(status int, body []byte, extra map[string]string) events.APIGatewayV2HTTPResponse {
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range extra {
		h[k] = v
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: h, Body: string(body)}
}
