// Package alb makes Application Load Balancer Lambda targets safe to
// retry. Wrap a handler with [Wrap]. A POST or PATCH that carries an
// Idempotency-Key then runs at most once per (tenant, operation, key). Its
// retries get the first response back, byte for byte, marked
// Idempotent-Replayed: true. The semantics are those of package apigw; the
// settings are package httpconfig's, the problem types package
// httpproblem's. As there, a
// handler's Go error releases the claim and stays a function error, which
// the load balancer answers 502 Bad Gateway; a 500 response the handler
// returns is stored and replayed.
//
// Responses follow the target group's header mode, since the load balancer
// reads either headers or multiValueHeaders. When the event carries
// multiValueHeaders (multi-value headers enabled), replays and problems set
// only multiValueHeaders, and otherwise only headers. For the same reason a
// snapshot keeps the handler's headers from that field only. The other one
// never reached the client.
//
// The load balancer passes query parameters as sent, percent-encoded,
// where API Gateway decodes them. The fingerprint reads them decoded ("+"
// as a space, an invalid escape as sent). So a retry that encodes a value
// another way (a%20b, a+b) is replayed, as through the other fronts. The
// handler still gets the event as the load balancer sent it.
//
// A replay's StatusDescription is the standard one for its status ("201
// Created"), not the handler's own, because a snapshot keeps the status
// code, not the reason phrase. The phrase is no part of the response's
// meaning. Clients must ignore it (RFC 9112, section 4). HTTP/2 and
// HTTP/3, which the load balancer speaks to clients that offer them, do not
// carry it. A snapshot stored through one front may be replayed through
// another. The standard phrase is also always in the "code reason" form the
// load balancer requires. Do not put meaning in a custom StatusDescription.
package alb

import (
	"context"
	"net/http"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/internal/adapter"
	"github.com/idemkit/idemkit/lambda/event"
	"github.com/idemkit/idemkit/tenant"
)

// ErrNoMethod is reported to the Observer for an event without an HTTP
// method (an event of another source, such as an HTTP API's), refused with
// a 500 guard-failure problem, never run unguarded.
var ErrNoMethod = adapter.ErrNoMethod

// Config configures Wrap. It holds the tenant, and the settings every
// adapter shares (httpconfig.Settings). ALB events carry no route template,
// so records are always scoped by method and path, and Routes are keyed by
// "METHOD /path". RouteTemplate changes nothing.
type Config struct {
	// Tenant names the authenticated caller: OIDCIdentity, SingleTenant or
	// your own. Required: Wrap panics without it. An empty result or an
	// error fails the request closed, as tenant.Func says.
	Tenant Tenant

	httpconfig.Settings
}

// Tenant returns the tenant of a request from its authenticated caller,
// as tenant.Func says.
type Tenant = tenant.Func[*events.ALBTargetGroupRequest]

// OIDCIdentity names the tenant by the x-amzn-oidc-identity header, the
// subject the load balancer's authenticate-oidc or authenticate-cognito
// action sets. It takes the header byte for byte, with no case folding,
// trimming or normalization, which could merge two callers. Use it only on
// listener rules with such an action. Without one, the client chooses the
// header.
func OIDCIdentity() Tenant {
	return func(_ context.Context, r *events.ALBTargetGroupRequest) (string, error) {
		vs := adapter.Values(r.Headers, r.MultiValueHeaders, "X-Amzn-Oidc-Identity")
		if len(vs) != 1 {
			return "", nil
		}
		return vs[0], nil
	}
}

// InvocationTenant names the tenant by the invocation's tenant id, for a
// function in Lambda's tenant isolation mode: it is
// event.InvocationTenant, which every adapter can use, and its caveat
// holds (the id is as trustworthy as the invoker that set it).
func InvocationTenant() Tenant { return event.InvocationTenant[*events.ALBTargetGroupRequest]() }

// SingleTenant puts every request in one tenant, for internal services.
func SingleTenant(name string) Tenant {
	return tenant.Single[*events.ALBTargetGroupRequest](name)
}

// Wrap guards an ALB target handler and returns a handler of the same
// signature. It panics when g is nil, when cfg has no Tenant, or when a
// setting cannot be used. It panics when it is called, not at the first
// request, so a bad setup stops the function at init.
func Wrap(g *idemkit.Guard, cfg Config, h func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error)) func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
	a := adapter.MustNew("alb", g, cfg.Settings, cfg.Tenant != nil)
	return func(ctx context.Context, ev events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
		multi := ev.MultiValueHeaders != nil
		respond := func(status int, h http.Header, body string, b64 bool) events.ALBTargetGroupResponse {
			r := events.ALBTargetGroupResponse{StatusCode: status, StatusDescription: statusLine(status), Body: body, IsBase64Encoded: b64}
			if multi {
				r.MultiValueHeaders = h
			} else {
				r.Headers = adapter.Single(h, 0)
			}
			return r
		}
		responder := adapter.Responder[events.ALBTargetGroupResponse]{
			Snapshot: func(r events.ALBTargetGroupResponse) *idemkit.Snapshot {
				// The load balancer reads the one header field of its mode
				// and ignores the other: only what it delivers is stored.
				if multi {
					return a.LambdaSnapshot(r.StatusCode, nil, r.MultiValueHeaders, r.Body, r.IsBase64Encoded)
				}
				return a.LambdaSnapshot(r.StatusCode, r.Headers, nil, r.Body, r.IsBase64Encoded)
			},
			Replay: func(s *idemkit.Snapshot) events.ALBTargetGroupResponse {
				h := s.Header.Clone()
				if h == nil {
					h = http.Header{}
				}
				h.Set(adapter.ReplayedHeader, "true")
				body, b64 := adapter.LambdaBody(s)
				return respond(s.Status, h, body, b64)
			},
			Fresh: func(r events.ALBTargetGroupResponse) events.ALBTargetGroupResponse {
				r.Headers, r.MultiValueHeaders = adapter.WithoutReplayed(r.Headers), adapter.WithoutReplayed(r.MultiValueHeaders)
				return r
			},
			Respond: func(r httpproblem.Response) events.ALBTargetGroupResponse {
				body, b64 := adapter.ResponseBody(r.Body)
				return respond(r.Status, r.Header, body, b64)
			},
		}
		r := adapter.Request{
			Method:      ev.HTTPMethod,
			Path:        adapter.NormalizePath(ev.Path),
			Key:         adapter.Values(ev.Headers, ev.MultiValueHeaders, a.Header()),
			ContentType: adapter.First(ev.Headers, ev.MultiValueHeaders, "Content-Type"),
			BodyString:  ev.Body,
			Base64:      ev.IsBase64Encoded,
			Query: func() map[string][]string {
				// The load balancer passes them percent-encoded, as sent.
				return adapter.DecodeQuery(adapter.MultiOr(ev.QueryStringParameters, ev.MultiValueQueryStringParameters))
			},
			Header: func() map[string][]string {
				return adapter.MultiOr(ev.Headers, ev.MultiValueHeaders)
			},
		}
		if cfg.Tenant != nil {
			r.Tenant = func(ctx context.Context) (string, error) { return cfg.Tenant(ctx, &ev) }
		}
		return adapter.Serve(ctx, a, &r, responder, func(ctx context.Context) (events.ALBTargetGroupResponse, error) {
			return h(ctx, ev)
		})
	}
}

func statusLine(code int) string {
	return strconv.Itoa(code) + " " + http.StatusText(code)
}
