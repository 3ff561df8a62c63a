package adapter_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/alb"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/memstore"
)

// identityReq is one request of the identity tests: what names it, and
// nothing else (the body is always the same).
type identityReq struct {
	method, path string
	template     string // the route template, "" for none
	query        string // the raw query, as sent
	tenant, key  string
}

// identityResp is a front's answer to an identityReq.
type identityResp struct {
	status   int
	replayed bool
	exec     string // the ExecutionID the handler saw; "" when it did not run
}

// identityOpts are the settings the identity tests vary.
type identityOpts struct {
	template    bool     // RouteTemplate
	ignoreQuery bool     // Fingerprint.IgnoreQuery
	query       []string // Fingerprint.Query
}

// identityFronts names the fronts sendIdentity knows: "httpmw" wraps a
// ServeMux, "httpmw/pattern" the handlers registered on it (so that
// Request.Pattern is set).
var identityFronts = []string{"v1", "v2", "url", "alb", "httpmw", "httpmw/pattern"}

// muxPatterns are the patterns the httpmw fronts' ServeMux serves.
var muxPatterns = []string{"POST /orders", "PATCH /orders", "POST /orders/{id}/capture", "PATCH /orders/{id}/capture"}

// sendIdentity sends r to front over g, configured with o. Its handler
// answers 201 to POST and PATCH and 405 to any other method, comparing
// methods exactly as net/http's ServeMux does; the tenant is r.tenant.
func sendIdentity(t *testing.T, g *idemkit.Guard, front string, o identityOpts, r identityReq) identityResp {
	t.Helper()
	var got identityResp
	run := func(ctx context.Context, method string) int {
		got.exec, _ = idemkit.ExecutionID(ctx)
		if method != http.MethodPost && method != http.MethodPatch {
			return http.StatusMethodNotAllowed
		}
		return http.StatusCreated
	}
	fp := fingerprint.Options{IgnoreQuery: o.ignoreQuery, Query: o.query}
	const body = `{"amount":1000}`
	hdr := map[string]string{"Idempotency-Key": r.key, "Content-Type": "application/json"}
	switch front {
	case "v1", "v2", "url":
		cfg := apigw.Config{Tenant: apigw.SingleTenant(r.tenant), Settings: httpconfig.Settings{RouteTemplate: o.template, Fingerprint: fp}}
		switch front {
		case "v1":
			h := apigw.WrapV1(g, cfg, func(ctx context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				return events.APIGatewayProxyResponse{StatusCode: run(ctx, ev.HTTPMethod)}, nil
			})
			// API Gateway gives the query decoded, the template as the
			// resource (the path itself for a route without parameters).
			q, err := url.ParseQuery(r.query)
			if err != nil {
				t.Fatal(err)
			}
			single := map[string]string{}
			for k, vs := range q {
				single[k] = vs[len(vs)-1]
			}
			resource := r.template
			if resource == "" {
				resource = r.path
			}
			resp, err := h(context.Background(), events.APIGatewayProxyRequest{HTTPMethod: r.method, Path: r.path, Resource: resource,
				Headers: hdr, MultiValueHeaders: multiOf(hdr), QueryStringParameters: single, MultiValueQueryStringParameters: q, Body: body})
			if err != nil {
				t.Fatal(err)
			}
			got.status, got.replayed = resp.StatusCode, resp.Headers["Idempotent-Replayed"] == "true"
		case "v2":
			h := apigw.WrapV2(g, cfg, func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				return events.APIGatewayV2HTTPResponse{StatusCode: run(ctx, ev.RequestContext.HTTP.Method)}, nil
			})
			routeKey := "$default"
			if r.template != "" {
				routeKey = r.method + " " + r.template
			}
			ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: routeKey, RawPath: r.path, RawQueryString: r.query,
				Headers: lowered(hdr), Body: body}
			ev.RequestContext.HTTP.Method = r.method
			resp := testkit.Call(t, h, ev)
			got.status, got.replayed = resp.StatusCode, resp.Headers["Idempotent-Replayed"] == "true"
		case "url":
			h := apigw.WrapFunctionURL(g, cfg, func(ctx context.Context, ev events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
				return events.LambdaFunctionURLResponse{StatusCode: run(ctx, ev.RequestContext.HTTP.Method)}, nil
			})
			ev := events.LambdaFunctionURLRequest{Version: "2.0", RawPath: r.path, RawQueryString: r.query, Headers: lowered(hdr), Body: body}
			ev.RequestContext.HTTP.Method = r.method
			resp := testkit.Call(t, h, ev)
			got.status, got.replayed = resp.StatusCode, resp.Headers["Idempotent-Replayed"] == "true"
		}
	case "alb":
		h := alb.Wrap(g, alb.Config{Tenant: alb.SingleTenant(r.tenant), Settings: httpconfig.Settings{Fingerprint: fp}},
			func(ctx context.Context, ev events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
				return events.ALBTargetGroupResponse{StatusCode: run(ctx, ev.HTTPMethod)}, nil
			})
		// The load balancer gives the query as sent, percent-encoded.
		var q map[string][]string
		for _, pair := range strings.Split(r.query, "&") {
			if k, v, _ := strings.Cut(pair, "="); pair != "" {
				if q == nil {
					q = map[string][]string{}
				}
				q[k] = append(q[k], v)
			}
		}
		resp, err := h(context.Background(), events.ALBTargetGroupRequest{HTTPMethod: r.method, Path: r.path,
			MultiValueHeaders: multiOf(lowered(hdr)), MultiValueQueryStringParameters: q, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		got.status = resp.StatusCode
		got.replayed = len(resp.MultiValueHeaders["Idempotent-Replayed"]) == 1 && resp.MultiValueHeaders["Idempotent-Replayed"][0] == "true"
	case "httpmw", "httpmw/pattern":
		mw := httpmw.New(g, httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return r.tenant, nil }, Settings: httpconfig.Settings{RouteTemplate: o.template, Fingerprint: fp}})
		handler := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			w.WriteHeader(run(req.Context(), req.Method))
		})
		mux := http.NewServeMux()
		for _, p := range muxPatterns {
			if front == "httpmw" {
				mux.Handle(p, handler)
			} else {
				mux.Handle(p, mw(handler))
			}
		}
		var h http.Handler = mux
		if front == "httpmw" {
			h = mw(mux)
		}
		target := r.path
		if r.query != "" {
			target += "?" + r.query
		}
		req := httptest.NewRequest(r.method, target, strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		got.status, got.replayed = w.Code, w.Header().Get("Idempotent-Replayed") == "true"
	default:
		t.Fatalf("no front %q", front)
	}
	return got
}

// newGuard returns a guard over a store of its own.
func newGuard(t *testing.T, mod func(*idemkit.Config)) *idemkit.Guard {
	t.Helper()
	cfg := idemkit.Config{Store: memstore.New()}
	if mod != nil {
		mod(&cfg)
	}
	return testguard.New(t, cfg)
}

// TestMethodCaseIsIdentity: methods are case-sensitive (RFC 9110): "post"
// is not "POST". A "post" with a key is guarded under an operation of its
// own, so the 405 a handler answers it (comparing methods exactly, as
// net/http's ServeMux does) is replayed to a retry of that "post" only,
// never to the real POST with the same key, which runs. With account-wide
// keys the POST is an operation mismatch, not a replay of the 405.
func TestMethodCaseIsIdentity(t *testing.T) {
	post := identityReq{method: "POST", path: "/orders", tenant: "tenant-a", key: "order-1"}
	lower := post
	lower.method = "post"
	for _, front := range identityFronts {
		t.Run(front, func(t *testing.T) {
			g := newGuard(t, nil)
			first := sendIdentity(t, g, front, identityOpts{}, lower)
			if first.status != 405 || first.replayed {
				t.Fatalf("post: %+v, want a fresh 405", first)
			}
			if got := sendIdentity(t, g, front, identityOpts{}, post); got.status != 201 || got.replayed || got.exec == "" {
				t.Fatalf("POST after post with the same key: %+v, want a fresh 201", got)
			}
			if got := sendIdentity(t, g, front, identityOpts{}, post); got.status != 201 || !got.replayed {
				t.Fatalf("POST retried: %+v, want a replayed 201", got)
			}
			if front == "httpmw/pattern" {
				return // the ServeMux answered the post itself, unguarded
			}
			if got := sendIdentity(t, g, front, identityOpts{}, lower); got.status != 405 || !got.replayed {
				t.Fatalf("post retried: %+v, want its own 405 replayed", got)
			}
			aw := newGuard(t, func(c *idemkit.Config) { c.AccountWide = true })
			sendIdentity(t, aw, front, identityOpts{}, lower)
			if got := sendIdentity(t, aw, front, identityOpts{}, post); got.status != 422 || got.exec != "" {
				t.Fatalf("account-wide POST after post: %+v, want a 422 operation mismatch", got)
			}
		})
	}
}

// TestExecutionIDPerResource: through every front, ExecutionID differs
// wherever the request's identity does (tenant, operation, key, and the
// concrete resource: the path, which a route template does not name, and
// the query when it is fingerprinted), so a key reused once its record is
// gone never gets the identity of another request: /orders/2/capture
// after /orders/1/capture does not find order 1's capture as its own. It
// is the same for the retries of one request, however its query is
// spelled. Each request runs over a store of its own, as after the
// record's expiry.
func TestExecutionIDPerResource(t *testing.T) {
	capture := identityReq{method: "POST", path: "/orders/1/capture", template: "/orders/{id}/capture", tenant: "tenant-a", key: "k"}
	with := func(f func(*identityReq)) identityReq {
		r := capture
		f(&r)
		return r
	}
	orders := identityReq{method: "POST", path: "/orders", query: "order=1&note=a%20b", tenant: "tenant-a", key: "k"}
	withQuery := func(q string) identityReq {
		r := orders
		r.query = q
		return r
	}
	templated := map[string]bool{"v1": true, "v2": true, "httpmw/pattern": true}
	for _, tc := range []struct {
		name string
		o    identityOpts
		a, b identityReq
		same bool
	}{
		{"another resource of the template", identityOpts{template: true}, capture, with(func(r *identityReq) { r.path = "/orders/2/capture" }), false},
		{"another path", identityOpts{}, capture, with(func(r *identityReq) { r.path = "/orders/2/capture" }), false},
		{"another tenant", identityOpts{template: true}, capture, with(func(r *identityReq) { r.tenant = "tenant-b" }), false},
		{"another key", identityOpts{template: true}, capture, with(func(r *identityReq) { r.key = "k2" }), false},
		{"another method", identityOpts{template: true}, capture, with(func(r *identityReq) { r.method = "PATCH" }), false},
		{"the same request", identityOpts{template: true}, capture, capture, true},
		{"another query", identityOpts{}, orders, withQuery("order=2&note=a%20b"), false},
		{"a query with another value", identityOpts{}, orders, withQuery("order=1&note=a%20b&order=2"), false},
		{"the query spelled otherwise", identityOpts{}, orders, withQuery("note=a+b&order=%31"), true},
		{"another query, not fingerprinted", identityOpts{ignoreQuery: true}, orders, withQuery("order=2"), true},
		{"another selected parameter", identityOpts{query: []string{"order"}}, orders, withQuery("order=2&note=a%20b"), false},
		{"another parameter, not selected", identityOpts{query: []string{"order", "page"}}, orders, withQuery("order=1&note=c"), true},
		{"a selected parameter left out", identityOpts{query: []string{"order"}}, orders, withQuery("note=a%20b"), false},
	} {
		for _, front := range identityFronts {
			if tc.o.template && !templated[front] {
				continue // no route templates: the path names the operation
			}
			t.Run(tc.name+"/"+front, func(t *testing.T) {
				a := sendIdentity(t, newGuard(t, nil), front, tc.o, tc.a)
				b := sendIdentity(t, newGuard(t, nil), front, tc.o, tc.b)
				if a.status != 201 || b.status != 201 || a.exec == "" || b.exec == "" {
					t.Fatalf("%+v, %+v: want two runs", a, b)
				}
				if (a.exec == b.exec) != tc.same {
					t.Errorf("ExecutionID %s and %s: want the same %v", a.exec, b.exec, tc.same)
				}
			})
		}
	}
}
