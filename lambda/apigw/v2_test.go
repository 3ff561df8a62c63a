package apigw_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/idemkey"
	"github.com/idemkit/idemkit/internal/policydefault"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/uuidv7"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/observe"
)

type v2Handler = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// orders is an HTTP API handler that counts its runs and answers status
// with a body naming the run, the tenant's order and every kind of header.
type orders struct {
	runs   atomic.Int32
	status int
	err    error
	panic  bool
}

func (o *orders) handle(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	n := o.runs.Add(1)
	if o.panic {
		panic("order service crashed")
	}
	if o.err != nil {
		return events.APIGatewayV2HTTPResponse{}, o.err
	}
	status := o.status
	if status == 0 {
		status = 201
	}
	sub := ""
	if a := ev.RequestContext.Authorizer; a != nil && a.JWT != nil {
		sub = a.JWT.Claims["sub"]
	}
	return events.APIGatewayV2HTTPResponse{
		StatusCode: status,
		Headers: map[string]string{
			"content-type":              "application/json",
			"Location":                  fmt.Sprintf("/orders/ord_%d", n),
			"X-Order-Id":                fmt.Sprintf("ord_%d", n),
			"Date":                      "Tue, 10 Mar 2020 05:16:23 GMT",
			"Set-Cookie":                "seen=1; Secure; HttpOnly",
			"X-Request-Id":              ev.RequestContext.RequestID,
			"RateLimit-Remaining":       "99",
			"Retry-After":               "30",
			"Content-Encoding":          "identity",
			"Strict-Transport-Security": "max-age=63072000",
		},
		Cookies: []string{"session=fresh; Secure"},
		Body:    fmt.Sprintf(`{"id":"ord_%d","tenant":%q,"amount":1000}`, n, sub),
	}, nil
}

func withKey(ev events.APIGatewayV2HTTPRequest, key string) events.APIGatewayV2HTTPRequest {
	h := make(map[string]string, len(ev.Headers))
	for k, v := range ev.Headers {
		if !strings.EqualFold(k, "idempotency-key") {
			h[k] = v
		}
	}
	if key != "" {
		h["idempotency-key"] = key
	}
	ev.Headers = h
	return ev
}

func withTenant(ev events.APIGatewayV2HTTPRequest, sub string) events.APIGatewayV2HTTPRequest {
	claims := map[string]string{}
	for k, v := range ev.RequestContext.Authorizer.JWT.Claims {
		claims[k] = v
	}
	claims["sub"] = sub
	ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims},
	}
	return ev
}

func withMethod(ev events.APIGatewayV2HTTPRequest, m string) events.APIGatewayV2HTTPRequest {
	ev.RequestContext.HTTP.Method = m
	_, path, _ := strings.Cut(ev.RouteKey, " ")
	ev.RouteKey = m + " " + path
	ev.RequestContext.RouteKey = ev.RouteKey
	return ev
}

var jwt = apigw.Config{Tenant: apigw.JWTClaim("")}

// newV2 wraps the orders handler, over a fresh env, for HTTP API events
// with the JWT sub as tenant and the changes mod makes to that Config;
// ev is the captured JWT-authorized event.
func newV2(t *testing.T, mod func(*apigw.Config)) (*env, *orders, v2Handler, events.APIGatewayV2HTTPRequest) {
	t.Helper()
	e, o, cfg := newEnv(t, nil), &orders{}, jwt
	if mod != nil {
		mod(&cfg)
	}
	return e, o, apigw.WrapV2(e.g, cfg, o.handle), testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
}

func replayed(r events.APIGatewayV2HTTPResponse) bool {
	return r.Headers["Idempotent-Replayed"] == "true"
}

// TestV2Methods: only POST and PATCH (or the configured methods) are
// guarded; the others pass through untouched even with a key.
func TestV2Methods(t *testing.T) {
	for _, tc := range []struct {
		name    string
		method  string
		methods []string
		guarded bool
	}{
		{"POST guarded", "POST", nil, true},
		{"PATCH guarded", "PATCH", nil, true},
		{"PUT not guarded by default", "PUT", nil, false},
		{"PUT guarded when configured", "PUT", []string{"POST", "PUT"}, true},
		{"GET passes through", "GET", nil, false},
		{"HEAD passes through", "HEAD", nil, false},
		{"OPTIONS passes through", "OPTIONS", nil, false},
		{"DELETE passes through", "DELETE", nil, false},
		{"PATCH not guarded when only POST is", "PATCH", []string{"POST"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			o := &orders{}
			cfg := jwt
			cfg.Methods = tc.methods
			h := apigw.WrapV2(e.g, cfg, o.handle)
			ev := withMethod(testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json"), tc.method)
			first, second := testkit.Call(t, h, ev), testkit.Call(t, h, ev)
			if replayed(first) {
				t.Error("first response marked replayed")
			}
			if got := replayed(second); got != tc.guarded {
				t.Errorf("second replayed = %v, want %v", got, tc.guarded)
			}
			want := int32(2)
			if tc.guarded {
				want = 1
			}
			if n := o.runs.Load(); n != want {
				t.Errorf("handler ran %d times, want %d", n, want)
			}
			if !tc.guarded && len(e.Events()) != 0 {
				t.Errorf("unguarded request reached the guard: %v", e.Events())
			}
		})
	}
}

// TestV2MethodCase: a method that differs from a guarded one only in case
// ("post") is another method (RFC 9110), with a record of its own, and it
// is guarded: a handler that folds the case of methods runs it at most once
// per key, and a POST with the same key is not its replay.
func TestV2MethodCase(t *testing.T) {
	e := newEnv(t, nil)
	o := &orders{}
	h := apigw.WrapV2(e.g, jwt, o.handle) // handle reads no method: it folds every case alike
	ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
	lower := withMethod(ev, "post")
	if first, retry := testkit.Call(t, h, lower), testkit.Call(t, h, lower); replayed(first) || !replayed(retry) || o.runs.Load() != 1 {
		t.Fatalf("post twice: replayed %v, %v after %d runs; want one run, then a replay", replayed(first), replayed(retry), o.runs.Load())
	}
	if r := testkit.Call(t, h, withMethod(ev, "POST")); replayed(r) || o.runs.Load() != 2 {
		t.Fatalf("POST after post: replayed %v after %d runs; want a run of its own", replayed(r), o.runs.Load())
	}
	ops := map[string]bool{}
	for _, ev := range e.Events() {
		ops[ev.Operation] = true
	}
	if !ops["post /orders"] || !ops["POST /orders"] || len(ops) != 2 {
		t.Errorf("operations %v, want post /orders and POST /orders", ops)
	}
}

// TestV2MethodsUpperCase: a configured method must be an upper-case token,
// in Methods or a Routes key: "post" would name another method than POST,
// so it is refused at wrap time rather than leaving POST unguarded.
func TestV2MethodsUpperCase(t *testing.T) {
	for name, cfg := range map[string]httpconfig.Settings{
		"Methods post":      {Methods: []string{"post"}},
		"Methods Patch":     {Methods: []string{"POST", "Patch"}},
		"Routes post":       {Routes: map[string]httpconfig.Route{"post /orders": {KeyOptional: true}}},
		"Routes no method":  {Routes: map[string]httpconfig.Route{"/orders": {KeyOptional: true}}},
		"Methods not token": {Methods: []string{"POST "}},
	} {
		t.Run(name, func(t *testing.T) {
			if p := wrapV2Panic(t, cfg); !strings.Contains(p, "invalid Config") {
				t.Errorf("Config %+v: panic %q, want invalid Config", cfg, p)
			}
		})
	}
}

// wrapV2Panic returns what wrapping an HTTP API handler with settings s
// panics with, or "" when the wrap accepts them.
func wrapV2Panic(t *testing.T, s httpconfig.Settings) string {
	g := newEnv(t, nil).g
	return testkit.PanicOf(func() { apigw.WrapV2(g, apigw.Config{Tenant: apigw.JWTClaim(""), Settings: s}, (&orders{}).handle) })
}

// TestV2SafeMethodsCannotBeGuarded: listing GET or HEAD is refused at wrap time.
func TestV2SafeMethodsCannotBeGuarded(t *testing.T) {
	for _, m := range []string{"GET", "head", "OPTIONS"} {
		t.Run(m, func(t *testing.T) {
			if wrapV2Panic(t, httpconfig.Settings{Methods: []string{m}}) == "" {
				t.Errorf("Methods %q accepted", m)
			}
		})
	}
}

// TestV2Keys covers how the key header is read and refused.
func TestV2Keys(t *testing.T) {
	long := strings.Repeat("k", 256)
	for _, tc := range []struct {
		name       string
		first      string // key of the first request
		second     string // key of the second request
		cfg        func(*apigw.Config)
		wantStatus int    // status of the second response
		wantType   string // problem type of the second response
		replay     bool
	}{
		{name: "same key replays", first: "order-1", second: "order-1", wantStatus: 201, replay: true},
		{name: "quoted and unquoted keys replay the same record", first: `"order-1"`, second: "order-1", wantStatus: 201, replay: true},
		{name: "unquoted then quoted", first: "order-1", second: `"order-1"`, wantStatus: 201, replay: true},
		{name: "comma-joined equal values are one key", first: "order-1", second: "order-1,order-1", wantStatus: 201, replay: true},
		// Two header lines, bare and quoted, arrive joined by a comma; a UUID
		// is no structured-field token, and is still one key (as in v1).
		{name: "uuid bare and quoted on two lines", first: "0190a1b2-40d5-43e8-bc93-6894a57f9324",
			second: `0190a1b2-40d5-43e8-bc93-6894a57f9324,"0190a1b2-40d5-43e8-bc93-6894a57f9324"`, wantStatus: 201, replay: true},
		{name: "uuid quoted and bare on two lines", first: "8e03978e-40d5-43e8-bc93-6894a57f9324",
			second: `"8e03978e-40d5-43e8-bc93-6894a57f9324", 8e03978e-40d5-43e8-bc93-6894a57f9324`, wantStatus: 201, replay: true},
		{name: "two different values", first: "order-1", second: "order-1, order-2", wantStatus: 400, wantType: "key-invalid"},
		{name: "different key runs again", first: "order-1", second: "order-2", wantStatus: 201},
		{name: "empty key", first: "order-1", second: `""`, wantStatus: 400, wantType: "key-invalid"},
		{name: "non-printable key", first: "order-1", second: "ord\x01er", wantStatus: 400, wantType: "key-invalid"},
		{name: "key over 255 bytes", first: "order-1", second: long, wantStatus: 400, wantType: "key-invalid"},
		{name: "longer cap configured", first: long, second: long, wantStatus: 201, replay: true,
			cfg: func(c *apigw.Config) { c.MaxKeyLen = 300 }},
		{name: "shorter cap configured", first: "order-1", second: "order-12345", wantStatus: 400, wantType: "key-invalid",
			cfg: func(c *apigw.Config) { c.MaxKeyLen = 8 }},
		{name: "missing key on a required route", first: "order-1", second: "", wantStatus: 400, wantType: "key-missing"},
		{name: "missing key on an optional route runs unguarded", first: "order-1", second: "", wantStatus: 201,
			cfg: func(c *apigw.Config) { c.Routes = map[string]httpconfig.Route{"POST /orders": {KeyOptional: true}} }},
		{name: "missing key with KeyOptional runs unguarded", first: "order-1", second: "", wantStatus: 201,
			cfg: func(c *apigw.Config) { c.KeyOptional = true }},
		{name: "empty key on an optional route is still refused", first: "order-1", second: `""`, wantStatus: 400, wantType: "key-invalid",
			cfg: func(c *apigw.Config) { c.KeyOptional = true }},
		{name: "custom header name", first: "order-1", second: "order-1", wantStatus: 201, replay: true,
			cfg: func(c *apigw.Config) { c.Header = "IDEMPOTENCY-KEY" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			o := &orders{}
			cfg := jwt
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			h := apigw.WrapV2(e.g, cfg, o.handle)
			ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
			first := testkit.Call(t, h, withKey(ev, tc.first))
			if first.StatusCode != 201 {
				t.Fatalf("first: %d %s", first.StatusCode, first.Body)
			}
			second := testkit.Call(t, h, withKey(ev, tc.second))
			if tc.wantType != "" {
				p := checkProblem(t, second.StatusCode, second.Headers, second.Body, tc.wantStatus, tc.wantType)
				if tc.wantType == "key-invalid" && p.Reason == "" {
					t.Error("key-invalid problem without a reason")
				}
				return
			}
			if second.StatusCode != tc.wantStatus || replayed(second) != tc.replay {
				t.Fatalf("second: %d replayed=%v, want %d replayed=%v", second.StatusCode, replayed(second), tc.wantStatus, tc.replay)
			}
			if tc.replay && second.Body != first.Body {
				t.Errorf("replayed body %q, want %q", second.Body, first.Body)
			}
		})
	}
}

// TestV2HeaderNameAnyCase: the key header is found whatever its case.
func TestV2HeaderNameAnyCase(t *testing.T) {
	e := newEnv(t, nil)
	o := &orders{}
	h := apigw.WrapV2(e.g, jwt, o.handle)
	ev := withKey(testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json"), "")
	for _, name := range []string{"Idempotency-Key", "IDEMPOTENCY-KEY", "idempotency-key"} {
		ev.Headers = map[string]string{"content-type": "application/json", name: "k-1"}
		if r := testkit.Call(t, h, ev); r.StatusCode != 201 {
			t.Fatalf("%s: %d %s", name, r.StatusCode, r.Body)
		}
	}
	if n := o.runs.Load(); n != 1 {
		t.Errorf("ran %d times, want 1", n)
	}
}

// TestV2Tenants: two tenants with one key get independent executions and
// never each other's body.
func TestV2Tenants(t *testing.T) {
	_, o, h, ev := newV2(t, nil)
	a1 := testkit.Call(t, h, withTenant(ev, "tenant-a"))
	b1 := testkit.Call(t, h, withTenant(ev, "tenant-b"))
	a2 := testkit.Call(t, h, withTenant(ev, "tenant-a"))
	b2 := testkit.Call(t, h, withTenant(ev, "tenant-b"))
	if o.runs.Load() != 2 {
		t.Fatalf("ran %d times, want 2", o.runs.Load())
	}
	if a1.Body == b1.Body || !strings.Contains(a1.Body, `"tenant-a"`) || !strings.Contains(b1.Body, `"tenant-b"`) {
		t.Fatalf("bodies a=%s b=%s", a1.Body, b1.Body)
	}
	if a2.Body != a1.Body || b2.Body != b1.Body || !replayed(a2) || !replayed(b2) {
		t.Errorf("replays crossed tenants: a2=%s b2=%s", a2.Body, b2.Body)
	}
}

// TestV2TenantMissing: no tenant fails closed with a 500 problem; the
// handler does not run and nothing is stored.
func TestV2TenantMissing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tenant apigw.Tenant
		ev     func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest
	}{
		{"claim absent", apigw.JWTClaim("org_unit"), nil},
		{"no authorizer", apigw.JWTClaim(""), func(ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
			ev.RequestContext.Authorizer = nil
			return ev
		}},
		{"wrong extractor for the event", apigw.CognitoClaim(""), nil},
		{"extractor error", func(context.Context, apigw.Request) (string, error) { return "t", errDirectoryDown }, nil},
		{"missing key too: tenant first", apigw.JWTClaim("org_unit"), func(ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
			return withKey(ev, "")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			o := &orders{}
			h := apigw.WrapV2(e.g, apigw.Config{Tenant: tc.tenant}, o.handle)
			ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
			if tc.ev != nil {
				ev = tc.ev(ev)
			}
			r := testkit.Call(t, h, ev)
			p := checkProblem(t, r.StatusCode, r.Headers, r.Body, 500, "tenant-missing")
			if !strings.Contains(p.Detail, "misconfigured") {
				t.Errorf("detail %q does not name the misconfiguration", p.Detail)
			}
			if o.runs.Load() != 0 {
				t.Error("handler ran without a tenant")
			}
			evs := e.Events()
			if len(evs) != 1 || evs[0].Kind != observe.EventRefused || !errors.Is(evs[0].Err, idemkit.ErrTenantMissing) {
				t.Fatalf("events %+v, want one refused ErrTenantMissing", evs)
			}
			if tc.name == "extractor error" && !errors.Is(evs[0].Err, errDirectoryDown) {
				t.Errorf("event error %v does not keep the Tenant's error", evs[0].Err)
			}
			if strings.Contains(r.Body, errDirectoryDown.Error()) {
				t.Errorf("the Tenant's error reached the caller: %s", r.Body)
			}
		})
	}
}

var errDirectoryDown = errors.New("directory down")

// TestV2TenantExtractors: each built-in reads the authenticated caller
// from its captured-shape event.
func TestV2TenantExtractors(t *testing.T) {
	checkTenants(t, []tenantCase{
		{"JWT sub by default", "v2-jwt.json", apigw.JWTClaim(""), "tenant-a"},
		{"JWT custom claim", "v2-jwt.json", apigw.JWTClaim("org_id"), "org-acme"},
		{"Lambda authorizer context", "v2-capture-lambda-authorizer.json", apigw.AuthorizerContext("accountId"), "acct-acme"},
		{"Lambda authorizer integer", "v2-capture-lambda-authorizer.json", apigw.AuthorizerContext("seats"), "42"},
		{"IAM caller", "v2-iam.json", apigw.IAMUserARN(), "arn:aws:sts::123456789012:assumed-role/billing-worker/billing-worker"},
		{"single tenant", "v2-iam.json", apigw.SingleTenant("internal"), "internal"},
	}, func(t *testing.T, e *env, tc tenantCase) (int, string) {
		h := apigw.WrapV2(e.g, apigw.Config{Tenant: tc.tenant}, (&orders{}).handle)
		r := testkit.Call(t, h, testkit.Load[events.APIGatewayV2HTTPRequest](t, tc.file))
		return r.StatusCode, r.Body
	})
}

// TestV2Operations: records are scoped by method and concrete path unless
// configured otherwise.
func TestV2Operations(t *testing.T) {
	capture := func(t *testing.T, id string) events.APIGatewayV2HTTPRequest {
		ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-capture-lambda-authorizer.json")
		ev.RawPath = "/orders/" + id + "/capture"
		ev.RequestContext.HTTP.Path = ev.RawPath
		ev.PathParameters = map[string]string{"id": id}
		return ev
	}
	tenant := apigw.AuthorizerContext("accountId")
	t.Run("concrete paths never share a record", func(t *testing.T) {
		e := newEnv(t, nil)
		o := &orders{}
		h := apigw.WrapV2(e.g, apigw.Config{Tenant: tenant}, o.handle)
		testkit.Call(t, h, capture(t, "1"))
		if r := testkit.Call(t, h, capture(t, "2")); replayed(r) || o.runs.Load() != 2 {
			t.Fatalf("capture of order 2 replayed order 1's")
		}
		if op := e.Events()[1].Operation; op != "POST /orders/2/capture" {
			t.Errorf("operation %q", op)
		}
	})
	t.Run("route template: a key reused for another resource is a mismatch", func(t *testing.T) {
		e := newEnv(t, nil)
		o := &orders{}
		h := apigw.WrapV2(e.g, apigw.Config{Tenant: tenant, Settings: httpconfig.Settings{RouteTemplate: true}}, o.handle)
		testkit.Call(t, h, capture(t, "1"))
		r := testkit.Call(t, h, capture(t, "2"))
		checkProblem(t, r.StatusCode, r.Headers, r.Body, 422, "fingerprint-mismatch")
		if o.runs.Load() != 1 {
			t.Fatalf("capture of order 2 ran with order 1's key")
		}
		if r := testkit.Call(t, h, capture(t, "1")); !replayed(r) || o.runs.Load() != 1 {
			t.Fatalf("retry of order 1's capture: %d replayed=%v", r.StatusCode, replayed(r))
		}
		if op := e.Events()[0].Operation; op != "POST /orders/{id}/capture" {
			t.Errorf("operation %q", op)
		}
	})
	for _, tc := range []struct{ name, path string }{
		{"trailing slash", "/orders/1/capture/"},
		{"case", "/Orders/1/capture"},
	} {
		t.Run(tc.name+" names another operation", func(t *testing.T) {
			e := newEnv(t, nil)
			o := &orders{}
			h := apigw.WrapV2(e.g, apigw.Config{Tenant: tenant}, o.handle)
			testkit.Call(t, h, capture(t, "1"))
			ev := capture(t, "1")
			ev.RawPath = tc.path
			if r := testkit.Call(t, h, ev); replayed(r) {
				t.Fatalf("%s replayed the response for /orders/1/capture", tc.path)
			}
			if op := e.Events()[len(e.Events())-1].Operation; op != "POST "+tc.path {
				t.Errorf("operation %q", op)
			}
		})
		t.Run(tc.name+" with account-wide keys is an operation mismatch", func(t *testing.T) {
			e := newEnv(t, func(c *idemkit.Config) { c.AccountWide = true })
			o := &orders{}
			h := apigw.WrapV2(e.g, apigw.Config{Tenant: tenant}, o.handle)
			testkit.Call(t, h, capture(t, "1"))
			ev := capture(t, "1")
			ev.RawPath = tc.path
			r := testkit.Call(t, h, ev)
			checkProblem(t, r.StatusCode, r.Headers, r.Body, 422, "operation-mismatch")
			if o.runs.Load() != 1 {
				t.Error("handler ran for the reused key")
			}
		})
	}
	t.Run("greedy route template falls back to the path", func(t *testing.T) {
		e := newEnv(t, nil)
		h := apigw.WrapV2(e.g, apigw.Config{Tenant: apigw.IAMUserARN(), Settings: httpconfig.Settings{RouteTemplate: true}}, (&orders{}).handle)
		testkit.Call(t, h, testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-iam.json"))
		if op := e.Events()[0].Operation; op != "POST /internal/refunds" {
			t.Errorf("operation %q for a $default route", op)
		}
	})
	t.Run("account-wide key reused on another operation", func(t *testing.T) {
		e := newEnv(t, func(c *idemkit.Config) { c.AccountWide = true })
		o := &orders{}
		h := apigw.WrapV2(e.g, apigw.Config{Tenant: tenant}, o.handle)
		testkit.Call(t, h, capture(t, "1"))
		r := testkit.Call(t, h, capture(t, "2"))
		checkProblem(t, r.StatusCode, r.Headers, r.Body, 422, "operation-mismatch")
		if o.runs.Load() != 1 {
			t.Error("handler ran for the reused key")
		}
	})
}

// TestV2Fingerprint: same key with a different body is refused; bodies
// that cannot be fingerprinted are refused before the handler.
func TestV2Fingerprint(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fp          fingerprint.Options
		first, body string
		wantStatus  int
		wantType    string
	}{
		{name: "key order and spacing do not matter", body: "{ \"customer\":\"cus_42\", \"currency\":\"eur\", \"amount\":1000.0 }", wantStatus: 201},
		{name: "different amount", body: `{"amount":2000,"currency":"eur","customer":"cus_42"}`, wantStatus: 422, wantType: "fingerprint-mismatch"},
		{name: "selected fields only", fp: fingerprint.Options{Include: []string{"/amount", "/currency"}},
			body: `{"amount":1000,"currency":"eur","customer":"cus_43","client_ts":"2024-01-01T00:00:00Z"}`, wantStatus: 201},
		{name: "excluded volatile field", fp: fingerprint.Options{Exclude: []string{"/client_ts"}},
			first: `{"amount":1000,"client_ts":"1"}`, body: `{"amount":1000,"client_ts":"2"}`, wantStatus: 201},
		{name: "invalid JSON", body: `{"amount":`, wantStatus: 400, wantType: "body-invalid"},
		{name: "duplicate keys", body: `{"amount":1000,"amount":1}`, wantStatus: 400, wantType: "body-invalid"},
		{name: "too deep", fp: fingerprint.Options{MaxDepth: 3}, body: `{"a":{"b":{"c":{"d":1}}}}`, wantStatus: 400, wantType: "body-invalid"},
		{name: "integer beyond float64", body: `{"amount":1` + strings.Repeat("0", 400) + `}`, wantStatus: 400, wantType: "body-invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, o, h, ev := newV2(t, func(c *apigw.Config) { c.Fingerprint = tc.fp })
			if tc.first != "" {
				ev.Body = tc.first
			}
			if r := testkit.Call(t, h, ev); r.StatusCode != 201 {
				t.Fatalf("first: %d %s", r.StatusCode, r.Body)
			}
			ev.Body = tc.body
			r := testkit.Call(t, h, ev)
			if tc.wantType != "" {
				checkProblem(t, r.StatusCode, r.Headers, r.Body, tc.wantStatus, tc.wantType)
				if o.runs.Load() != 1 {
					t.Error("handler ran")
				}
				return
			}
			if r.StatusCode != tc.wantStatus || !replayed(r) {
				t.Errorf("got %d replayed=%v, want a replay", r.StatusCode, replayed(r))
			}
		})
	}
}

// TestV2FingerprintPerRoute: a route's Fingerprint replaces the Config's.
func TestV2FingerprintPerRoute(t *testing.T) {
	e := newEnv(t, nil)
	cfg := jwt
	cfg.Routes = map[string]httpconfig.Route{"POST /orders": {Fingerprint: &fingerprint.Options{Include: []string{"/amount"}}}}
	h := apigw.WrapV2(e.g, cfg, (&orders{}).handle)
	ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
	testkit.Call(t, h, ev)
	ev.Body = `{"amount":1000,"note":"retry"}`
	if r := testkit.Call(t, h, ev); !replayed(r) {
		t.Fatalf("route fingerprint not used: %d %s", r.StatusCode, r.Body)
	}
}

// TestV2FingerprintOtherVersion: a record stored under a fingerprint
// version this build cannot compute is a mismatch, never a replay.
func TestV2FingerprintOtherVersion(t *testing.T) {
	e, _, h, ev := newV2(t, nil)
	seed(t, e, ev, "v0:sha256:00", &idemkit.Snapshot{Status: 201, Body: []byte(`{}`)})
	r := testkit.Call(t, h, ev)
	checkProblem(t, r.StatusCode, r.Headers, r.Body, 422, "fingerprint-mismatch")
}

// TestV2FingerprintQuery: the query string counts by default, in canonical
// form (parameters sorted by name, values in order); a route can opt out.
func TestV2FingerprintQuery(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ignore        bool
		first, second string
		replay        bool
	}{
		{name: "dry run added", first: "", second: "dryRun=true"},
		{name: "value changed", first: "expand=items", second: "expand=none"},
		{name: "parameter order", first: "a=1&b=2", second: "b=2&a=1", replay: true},
		{name: "repeated values order", first: "a=1&a=2", second: "a=2&a=1"},
		{name: "same query", first: "expand=items", second: "expand=items", replay: true},
		{name: "ignored for the route", ignore: true, first: "", second: "dryRun=true", replay: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			o := &orders{}
			cfg := jwt
			if tc.ignore {
				cfg.Routes = map[string]httpconfig.Route{"POST /orders": {Fingerprint: &fingerprint.Options{IgnoreQuery: true}}}
			}
			checkV2QueryRetry(t, apigw.WrapV2(e.g, cfg, o.handle), o, tc.first, tc.second, tc.replay)
		})
	}
}

// TestV2FingerprintV1Record: a record stored with a v1 fingerprint is
// still replayed to a retry with the same intent, and still refused for a
// different body. A request whose query string or concrete path v1 did not
// hash cannot be shown to be the same, so it is a mismatch, never a replay.
func TestV2FingerprintV1Record(t *testing.T) {
	v1 := func(t *testing.T, body string) string {
		fp, err := fingerprint.ComputeVersion("v1", fingerprint.Input{ContentType: "application/json", Body: []byte(body)}, fingerprint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	const stored = `{"amount":1000,"currency":"eur","customer":"cus_42"}`
	for _, tc := range []struct {
		name, query, body string
		template          bool
		replay            bool
	}{
		{name: "same intent", body: `{ "currency":"eur", "amount":1000.0, "customer":"cus_42" }`, replay: true},
		{name: "other body", body: `{"amount":2000,"currency":"eur","customer":"cus_42"}`},
		{name: "query string v1 did not hash", query: "dryRun=true", body: stored},
		{name: "route template: path v1 did not hash", template: true, body: stored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, o, h, ev := newV2(t, func(c *apigw.Config) { c.RouteTemplate = tc.template })
			ev.RawQueryString = ""
			ev.Body = stored
			s := scopeOf(ev)
			if tc.template {
				ev.RouteKey = "POST /{collection}"
				s.Operation = "POST /{collection}"
			}
			seedScope(t, e, s, v1(t, stored), &idemkit.Snapshot{Status: 201, Body: []byte(`{"id":"ord_1"}`)})
			ev.RawQueryString = tc.query
			ev.Body = tc.body
			r := testkit.Call(t, h, ev)
			if tc.replay {
				if !replayed(r) || r.Body != `{"id":"ord_1"}` {
					t.Errorf("got %d %s replayed=%v, want the v1 record's response", r.StatusCode, r.Body, replayed(r))
				}
			} else {
				checkProblem(t, r.StatusCode, r.Headers, r.Body, 422, "fingerprint-mismatch")
			}
			if o.runs.Load() != 0 {
				t.Error("handler ran")
			}
		})
	}
}

// TestV2NoContentTypeInvalidJSON: without a Content-Type, a body that looks
// like JSON but is not I-JSON is refused, never hashed as raw bytes.
func TestV2NoContentTypeInvalidJSON(t *testing.T) {
	for _, body := range []string{
		`{"amount":1000,"amount":1}`,
		`{"note":"\ud800"}`,
		`{"amount":1e400}`,
		strings.Repeat("[", 100) + strings.Repeat("]", 100),
	} {
		_, o, h, ev := newV2(t, nil)
		delete(ev.Headers, "content-type")
		ev.Body = body
		r := testkit.Call(t, h, ev)
		checkProblem(t, r.StatusCode, r.Headers, r.Body, 400, "body-invalid")
		if o.runs.Load() != 0 {
			t.Errorf("%.30s: handler ran", body)
		}
	}
}

// scopeOf returns the scope the v2-jwt.json event is stored under.
func scopeOf(ev events.APIGatewayV2HTTPRequest) idemkit.Scope {
	key, _ := idemkey.Parse([]string{ev.Headers["idempotency-key"]}, idemkey.Options{})
	return idemkit.Scope{Tenant: ev.RequestContext.Authorizer.JWT.Claims["sub"], Operation: "POST " + ev.RawPath, Key: key}
}

func fingerprintOf(t testing.TB, ev events.APIGatewayV2HTTPRequest) string {
	q, _ := url.ParseQuery(ev.RawQueryString)
	fp, err := fingerprint.Compute(fingerprint.Input{ContentType: ev.Headers["content-type"], Body: []byte(ev.Body), Query: q}, fingerprint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// seed stores a record for ev: completed with snap, or, with snap nil, in
// flight with an expired lease.
func seed(t testing.TB, e *env, ev events.APIGatewayV2HTTPRequest, fp string, snap *idemkit.Snapshot) {
	t.Helper()
	seedScope(t, e, scopeOf(ev), fp, snap)
}

// seedScope stores a record for scope s, as seed does.
func seedScope(t testing.TB, e *env, s idemkit.Scope, fp string, snap *idemkit.Snapshot) {
	t.Helper()
	now := e.clock.Now()
	rec := &idemkit.Record{ID: s.ID(false), Scope: s, State: idemkit.StateInFlight, Fingerprint: fp, Owner: "seed", Version: "seed",
		LeaseUntil: now.Add(-time.Second), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now.Add(-time.Minute)}
	ctx := context.Background()
	if met, err := e.store.Create(ctx, rec); err != nil || met != nil {
		t.Fatalf("seed: %+v %v", met, err)
	}
	if snap == nil {
		return
	}
	done := rec.Clone()
	done.State, done.Snapshot, done.CompletedAt, done.Version = idemkit.StateCompleted, snap, now.Add(-30*time.Second), "seed.1"
	if met, err := e.store.Replace(ctx, done, rec); err != nil || met != nil {
		t.Fatalf("seed: %+v %v", met, err)
	}
}

// corruptStore answers every claim with a completed record of the claim's
// scope that has no snapshot: a record no store would write, read back
// from a damaged item. It is no faultstore.Store: a fault of that store
// fails a call or loses its answer, and never makes up a record.
type corruptStore struct{ idemkit.Store }

func (corruptStore) Create(_ context.Context, rec *idemkit.Record) (*idemkit.Record, error) {
	c := rec.Clone()
	c.State, c.Owner, c.CompletedAt, c.Version = idemkit.StateCompleted, "another", rec.CreatedAt, "another"
	return c, nil
}

// TestV2Refusals: each guard error has its problem.
func TestV2Refusals(t *testing.T) {
	for _, tc := range []struct {
		name       string
		setup      func(t *testing.T, e *env, ev *events.APIGatewayV2HTTPRequest)
		mod        func(*idemkit.Config)
		wantStatus int
		wantType   string
		check      func(t *testing.T, p problem)
	}{
		{name: "indeterminate record", wantStatus: 409, wantType: "indeterminate-operator-required",
			setup: func(t *testing.T, e *env, ev *events.APIGatewayV2HTTPRequest) {
				// The run said its outcome is unknown.
				seed(t, e, *ev, fingerprintOf(t, *ev), nil)
				cur, err := e.store.Get(context.Background(), scopeOf(*ev).ID(false))
				if err != nil {
					t.Fatal(err)
				}
				marked := cur.Clone()
				marked.State, marked.Cause, marked.LeaseUntil, marked.Version = idemkit.StateIndeterminate, idemkit.CauseOutcomeUnknown, e.clock.Now(), "seed.1"
				if met, err := e.store.Replace(context.Background(), marked, cur); err != nil || met != nil {
					t.Fatalf("mark unknown: %+v %v", met, err)
				}
			}},
		{name: "lease ended moments ago", wantStatus: 409, wantType: "outcome-pending",
			setup: func(t *testing.T, e *env, ev *events.APIGatewayV2HTTPRequest) {
				// The run may still complete: the client is told to come
				// back, not to wait for an operator.
				seed(t, e, *ev, fingerprintOf(t, *ev), nil)
			},
			check: func(t *testing.T, p problem) {
				if p.RetryAfter < 1 {
					t.Errorf("Retry-After %d, want a wait", p.RetryAfter)
				}
			}},
		{name: "store unavailable", wantStatus: 503, wantType: "store-unavailable",
			mod: func(c *idemkit.Config) {
				// A store that cannot be reached.
				fs := faultstore.New(c.Store.(idemkit.OperatorStore))
				fs.OnOp(faultstore.OpClaim, faultstore.Fail(errors.New("dial tcp 10.0.0.1:443: i/o timeout")))
				c.Store = fs
			},
			check: func(t *testing.T, p problem) {
				if p.RetryAfter != 1 || strings.Contains(p.Detail, "10.0.0.1") {
					t.Errorf("problem %+v: want Retry-After 1 and no internal detail", p)
				}
			}},
		{name: "response too large to store", wantStatus: 410, wantType: "response-not-stored",
			setup: func(t *testing.T, e *env, ev *events.APIGatewayV2HTTPRequest) {
				seed(t, e, *ev, fingerprintOf(t, *ev), &idemkit.Snapshot{Status: 201, Omitted: true,
					Header: map[string][]string{"Location": {"/orders/ord_9"}}})
			},
			check: func(t *testing.T, p problem) {
				if p.OriginalStatus != 201 || p.Location != "/orders/ord_9" || p.CompletedAt == "" {
					t.Errorf("problem %+v does not name the outcome", p)
				}
			}},
		{name: "corrupt record", wantStatus: 500, wantType: "record-corrupt",
			mod: func(c *idemkit.Config) { c.Store = corruptStore{c.Store} }},
		{name: "expired UUIDv7 key", wantStatus: 400, wantType: "key-expired",
			setup: func(t *testing.T, e *env, ev *events.APIGatewayV2HTTPRequest) {
				*ev = withKey(*ev, uuidv7.At(e.clock.Now().Add(-8*24*time.Hour)))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.mod)
			o := &orders{}
			h := apigw.WrapV2(e.g, jwt, o.handle)
			ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
			if tc.setup != nil {
				tc.setup(t, e, &ev)
			}
			r := testkit.Call(t, h, ev)
			p := checkProblem(t, r.StatusCode, r.Headers, r.Body, tc.wantStatus, tc.wantType)
			if tc.check != nil {
				tc.check(t, p)
			}
			if o.runs.Load() != 0 {
				t.Error("handler ran")
			}
		})
	}
}

// TestV2ReplayWindowPassed: after the replay window the problem names the
// original status, Location and completion time.
func TestV2ReplayWindowPassed(t *testing.T) {
	e, o, h, ev := newV2(t, nil)
	testkit.Call(t, h, ev)
	done := e.clock.Now()
	e.clock.Advance(25 * time.Hour)
	r := testkit.Call(t, h, ev)
	p := checkProblem(t, r.StatusCode, r.Headers, r.Body, 410, "replay-window-passed")
	if p.OriginalStatus != 201 || p.Location != "/orders/ord_1" || p.CompletedAt != done.UTC().Format(time.RFC3339) {
		t.Errorf("problem %+v does not name the outcome", p)
	}
	if o.runs.Load() != 1 {
		t.Error("handler ran again after the replay window")
	}
}

// TestV2Replay: a replay has the stored status, the allow-listed headers,
// the body byte for byte and the marker; the fresh response is untouched;
// the snapshot keeps only allow-listed headers.
func TestV2Replay(t *testing.T) {
	e, o, h, ev := newV2(t, func(c *apigw.Config) { c.ReplayHeaders = []string{"x-order-id"} })

	fresh := testkit.Call(t, h, ev)
	want, _ := o.handle(context.Background(), ev)
	o.runs.Store(1)
	want.Headers["Location"], want.Headers["X-Order-Id"] = "/orders/ord_1", "ord_1"
	want.Body = strings.Replace(want.Body, "ord_2", "ord_1", 1)
	if fmt.Sprint(fresh) != fmt.Sprint(want) {
		t.Errorf("fresh response changed:\n got %v\nwant %v", fresh, want)
	}

	ev.RequestContext.RequestID = "retry-request-id"
	again := testkit.Call(t, h, ev)
	wantHeaders := map[string]string{
		"Content-Type": "application/json", "Location": "/orders/ord_1", "X-Order-Id": "ord_1",
		"Content-Encoding": "identity", "Idempotent-Replayed": "true",
	}
	if fmt.Sprint(again.Headers) != fmt.Sprint(wantHeaders) {
		t.Errorf("replayed headers %v, want %v", again.Headers, wantHeaders)
	}
	if again.StatusCode != 201 || again.Body != fresh.Body || again.IsBase64Encoded || again.Cookies != nil || again.MultiValueHeaders != nil {
		t.Errorf("replay %+v", again)
	}
	rec := e.record(t, scopeOf(ev))
	if got := fmt.Sprint(rec.Snapshot.Header); got != "map[Content-Encoding:[identity] Content-Type:[application/json] Location:[/orders/ord_1] X-Order-Id:[ord_1]]" {
		t.Errorf("snapshot headers %s", got)
	}
}

// TestV2ReplayBase64: a base64 body is stored and replayed as it was.
func TestV2ReplayBase64(t *testing.T) {
	e := newEnv(t, nil)
	pdf := "JVBERi0xLjcKJcfsj6IK"
	runs := 0
	h := apigw.WrapV2(e.g, apigw.Config{Tenant: apigw.IAMUserARN()}, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		runs++
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "application/pdf"}, Body: pdf, IsBase64Encoded: true}, nil
	})
	ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-iam.json")
	testkit.Call(t, h, ev)
	r := testkit.Call(t, h, ev)
	if runs != 1 || !replayed(r) || r.Body != pdf || !r.IsBase64Encoded {
		t.Errorf("replay %+v after %d runs", r, runs)
	}
}

// TestV2ReplayHeadersRefused: headers describing one exchange cannot be
// allow-listed.
func TestV2ReplayHeadersRefused(t *testing.T) {
	for _, name := range []string{"Set-Cookie", "date", "Retry-After", "RateLimit-Remaining", "RateLimit", "X-Request-Id", "X-Amzn-Trace-Id", "traceparent", ""} {
		t.Run(name, func(t *testing.T) {
			if wrapV2Panic(t, httpconfig.Settings{ReplayHeaders: []string{name}}) == "" {
				t.Errorf("ReplayHeaders %q accepted", name)
			}
		})
	}
}

// TestV2Outcomes: deterministic business outcomes are replayed; transient
// ones, handler errors and panics are not.
func TestV2Outcomes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		o      *orders
		replay bool
	}{
		{"201 created", &orders{status: 201}, true},
		{"402 decline", &orders{status: 402}, true},
		{"404", &orders{status: 404}, true},
		{"422 business validation", &orders{status: 422}, true},
		{"500 returned by the handler", &orders{status: 500}, true},
		{"401", &orders{status: 401}, false},
		{"403", &orders{status: 403}, false},
		{"408", &orders{status: 408}, false},
		{"429", &orders{status: 429}, false},
		{"502", &orders{status: 502}, false},
		{"503", &orders{status: 503}, false},
		{"504", &orders{status: 504}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			h := apigw.WrapV2(e.g, jwt, tc.o.handle)
			ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
			first, second := testkit.Call(t, h, ev), testkit.Call(t, h, ev)
			if first.StatusCode != tc.o.status || replayed(first) {
				t.Fatalf("first %d replayed=%v", first.StatusCode, replayed(first))
			}
			if replayed(second) != tc.replay || (tc.replay && second.Body != first.Body) {
				t.Errorf("second replayed=%v body %s, want replayed=%v", replayed(second), second.Body, tc.replay)
			}
			if want := map[bool]int32{true: 1, false: 2}[tc.replay]; tc.o.runs.Load() != want {
				t.Errorf("ran %d times, want %d", tc.o.runs.Load(), want)
			}
		})
	}
}

// TestV2HandlerError: a Go error is returned to Lambda after the claim was
// released, so the retry runs.
func TestV2HandlerError(t *testing.T) {
	e := newEnv(t, nil)
	o := &orders{err: errors.New("payment provider timeout")}
	h := apigw.WrapV2(e.g, jwt, o.handle)
	ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
	if _, err := h(context.Background(), ev); !errors.Is(err, o.err) {
		t.Fatalf("error %v, want the handler's", err)
	}
	if e.record(t, scopeOf(ev)) != nil {
		t.Fatal("claim not released")
	}
	o.err = nil
	if r := testkit.Call(t, h, ev); r.StatusCode != 201 || replayed(r) || o.runs.Load() != 2 {
		t.Errorf("retry: %d replayed=%v runs=%d", r.StatusCode, replayed(r), o.runs.Load())
	}
}

// TestV2OutcomeUnknown: a handler error wrapping ErrOutcomeUnknown keeps
// the key: the client gets 503 outcome-unknown (not a runtime error), the
// retry gets 409 indeterminate, and the handler never runs again.
func TestV2OutcomeUnknown(t *testing.T) {
	e := newEnv(t, nil)
	o := &orders{err: fmt.Errorf("put order: %w", idemkit.ErrOutcomeUnknown)}
	h := apigw.WrapV2(e.g, jwt, o.handle)
	ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
	r := testkit.Call(t, h, ev)
	checkProblem(t, r.StatusCode, r.Headers, r.Body, 503, "outcome-unknown")
	o.err = nil
	r = testkit.Call(t, h, ev)
	checkProblem(t, r.StatusCode, r.Headers, r.Body, 409, "indeterminate-operator-required")
	if got := o.runs.Load(); got != 1 {
		t.Fatalf("handler ran %d times, want 1", got)
	}
	if rec := e.record(t, scopeOf(ev)); rec == nil || rec.State != idemkit.StateIndeterminate {
		t.Fatalf("record %+v, want indeterminate", rec)
	}
}

// TestV2Panic: a panic is released and re-raised; the retry runs.
func TestV2Panic(t *testing.T) {
	e := newEnv(t, nil)
	o := &orders{panic: true}
	h := apigw.WrapV2(e.g, jwt, o.handle)
	ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
	if testkit.PanicOf(func() { h(context.Background(), ev) }) == "" {
		t.Fatal("panic swallowed")
	}
	o.panic = false
	if r := testkit.Call(t, h, ev); r.StatusCode != 201 || replayed(r) {
		t.Errorf("retry after panic: %d replayed=%v", r.StatusCode, replayed(r))
	}
}

// TestV2ConcurrentDuplicate: while a slow first request runs, a duplicate
// gets 409 with Retry-After at once; it does not wait.
func TestV2ConcurrentDuplicate(t *testing.T) {
	e := newEnv(t, nil)
	entered, release := make(chan struct{}), make(chan struct{})
	o := &orders{}
	h := apigw.WrapV2(e.g, jwt, func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		close(entered)
		<-release // a 5-second payment call, finished only after the duplicate was answered
		return o.handle(ctx, ev)
	})
	ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
	ctx, cancel := context.WithDeadline(context.Background(), e.clock.Now().Add(5*time.Second))
	defer cancel()
	done := make(chan events.APIGatewayV2HTTPResponse)
	go func() {
		r, _ := h(ctx, ev)
		done <- r
	}()
	<-entered
	dup := testkit.Call(t, h, ev)
	p := checkProblem(t, dup.StatusCode, dup.Headers, dup.Body, 409, "in-flight")
	if p.RetryAfter < 1 || dup.Headers["Retry-After"] == "" {
		t.Errorf("no Retry-After: %+v", p)
	}
	close(release)
	if first := <-done; first.StatusCode != 201 || replayed(first) {
		t.Errorf("first: %d", first.StatusCode)
	}
	if r := testkit.Call(t, h, ev); !replayed(r) || o.runs.Load() != 1 {
		t.Errorf("after completion: replayed=%v runs=%d", replayed(r), o.runs.Load())
	}
}

// TestV2LeaseFromDeadline: the Lambda context reaches the guard, whose
// lease ends at the deadline plus the margin.
func TestV2LeaseFromDeadline(t *testing.T) {
	e := newEnv(t, nil)
	ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
	deadline := e.clock.Now().Add(15 * time.Second)
	var lease time.Time
	h := apigw.WrapV2(e.g, jwt, func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		if d, ok := ctx.Deadline(); !ok || !d.Equal(deadline) {
			t.Errorf("handler context deadline %v, want %v", d, deadline)
		}
		lease = e.record(t, scopeOf(ev)).LeaseUntil
		return events.APIGatewayV2HTTPResponse{StatusCode: 201}, nil
	})
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if _, err := h(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if want := deadline.Add(policydefault.LeaseMargin); !lease.Equal(want) {
		t.Errorf("lease until %v, want %v", lease, want)
	}
}

// TestV2RefusalsAreObserved: refusals made before the guard runs (missing
// or invalid key, a body that cannot be fingerprinted) reach the observer.
func TestV2RefusalsAreObserved(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   func(events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest
		want error
	}{
		{"missing key", func(ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest { return withKey(ev, "") }, idemkey.ErrMissing},
		{"invalid key", func(ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest { return withKey(ev, `"abc`) }, idemkey.ErrMalformed},
		{"invalid body", func(ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
			ev.Body = `{"sku":`
			return ev
		}, fingerprint.ErrInvalidJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			o := &orders{}
			h := apigw.WrapV2(e.g, apigw.Config{Tenant: apigw.JWTClaim("")}, o.handle)
			r := testkit.Call(t, h, tc.ev(testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")))
			if r.StatusCode != 400 || o.runs.Load() != 0 {
				t.Fatalf("status %d, runs %d; want 400 and no run", r.StatusCode, o.runs.Load())
			}
			evs := e.Events()
			if len(evs) != 1 || evs[0].Kind != observe.EventRefused || !errors.Is(evs[0].Err, tc.want) || evs[0].Tenant == "" {
				t.Fatalf("events %+v, want one refused %v with the tenant", evs, tc.want)
			}
		})
	}
}

// TestV2ProblemDetailBounded: a body-invalid problem for a huge body (a
// duplicate member named by a 1 MB key) echoes at most a bounded fragment
// of it, in every Lambda adapter.
func TestV2ProblemDetailBounded(t *testing.T) {
	name := strings.Repeat("k", 1<<20)
	body := `{"` + name + `":1,"` + name + `":2}`
	e := newEnv(t, nil)
	o := &orders{}
	ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
	ev.Body = body
	r := testkit.Call(t, apigw.WrapV2(e.g, jwt, o.handle), ev)
	p := checkProblem(t, r.StatusCode, r.Headers, r.Body, 400, "body-invalid")
	if len(p.Detail) > 400 || len(r.Body) > 1024 {
		t.Errorf("detail %d bytes, body %d bytes: want a bounded echo", len(p.Detail), len(r.Body))
	}
	if o.runs.Load() != 0 {
		t.Error("handler ran")
	}
}

// delivered returns the body bytes a caller receives for a v2 response:
// the Lambda runtime encodes the response as JSON (a string with invalid
// UTF-8 gets U+FFFD per bad byte) and API Gateway decodes a base64 body.
func delivered(t *testing.T, r events.APIGatewayV2HTTPResponse) []byte {
	t.Helper()
	wire, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(wire, &got); err != nil {
		t.Fatal(err)
	}
	if !got.IsBase64Encoded {
		return []byte(got.Body)
	}
	b, err := base64.StdEncoding.DecodeString(got.Body)
	if err != nil {
		t.Fatalf("base64 body %q: %v", got.Body, err)
	}
	return b
}

// TestV2ReplayInvalidUTF8: a body with invalid UTF-8 and no base64 flag
// reaches the first caller with U+FFFD replacements; its replay is the
// same bytes, not the raw bytes base64-encoded.
func TestV2ReplayInvalidUTF8(t *testing.T) {
	for _, body := range []string{
		"caf\xe9 \xff\xfe ok",         // Latin-1 and stray bytes
		"\xed\xa0\x80 surrogate half", // UTF-8 of a surrogate: three bad bytes
		"truncated \xe2\x82",          // a rune cut short at the end
		"valid \u20ac text",           // valid UTF-8 is kept as it is
	} {
		t.Run(fmt.Sprintf("%q", body), func(t *testing.T) {
			e := newEnv(t, nil)
			runs := 0
			h := apigw.WrapV2(e.g, jwt, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				runs++
				return events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"Content-Type": "text/plain"}, Body: body}, nil
			})
			ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
			first := delivered(t, testkit.Call(t, h, ev))
			again := testkit.Call(t, h, ev)
			if runs != 1 || !replayed(again) {
				t.Fatalf("runs %d, replayed %v", runs, replayed(again))
			}
			if got := delivered(t, again); !bytes.Equal(got, first) {
				t.Errorf("replay delivers %q, first caller got %q", got, first)
			}
		})
	}
}
