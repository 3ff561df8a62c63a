package orders_test

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit/examples/orders"
)

// The local server hands the handler the event API Gateway would.
func TestLocalEventIsWhatAPIGatewaySends(t *testing.T) {
	var got events.APIGatewayV2HTTPRequest
	var deadline bool
	h := func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		got = ev
		_, deadline = ctx.Deadline()
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "{}"}, nil
	}
	srv := httptest.NewServer(&orders.Local{Handler: h})
	defer srv.Close()

	req, _ := http.NewRequest("GET", srv.URL+"/orders/abc%20d?x=1&x=2&y=3", nil)
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Add("X-Multi", "a")
	req.Header.Add("X-Multi", "b")
	req.Header.Set("User-Agent", "test-agent")
	req.Header.Add("Cookie", "a=1; b=2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	rc := got.RequestContext
	checks := []struct {
		name      string
		got, want any
	}{
		{"version", got.Version, "2.0"},
		{"routeKey", got.RouteKey, "GET /orders/{id}"},
		{"requestContext.routeKey", rc.RouteKey, "GET /orders/{id}"},
		{"rawPath, decoded as an HTTP API does", got.RawPath, "/orders/abc d"},
		{"rawQueryString", got.RawQueryString, "x=1&x=2&y=3"},
		{"queryStringParameters.x", got.QueryStringParameters["x"], "1,2"},
		{"pathParameters.id", got.PathParameters["id"], "abc d"},
		{"headers.x-multi", got.Headers["x-multi"], "a,b"},
		{"headers.authorization", got.Headers["authorization"], "Bearer alice"},
		{"headers.host", got.Headers["host"], strings.TrimPrefix(srv.URL, "http://")},
		{"no cookie header", got.Headers["cookie"], ""},
		{"cookies", strings.Join(got.Cookies, "|"), "a=1|b=2"},
		{"stage", rc.Stage, "$default"},
		{"accountId", rc.AccountID, orders.LocalAccountID},
		{"apiId", rc.APIID, orders.LocalAPIID},
		{"http.method", rc.HTTP.Method, "GET"},
		{"http.path, decoded", rc.HTTP.Path, "/orders/abc d"},
		{"http.protocol", rc.HTTP.Protocol, "HTTP/1.1"},
		{"http.sourceIp", rc.HTTP.SourceIP, "127.0.0.1"},
		{"http.userAgent", rc.HTTP.UserAgent, "test-agent"},
		{"jwt sub", rc.Authorizer.JWT.Claims["sub"], "alice"},
		{"deadline", deadline, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if rc.RequestID == "" || rc.TimeEpoch == 0 || rc.Time == "" || rc.DomainName == "" {
		t.Errorf("requestContext incomplete: %+v", rc)
	}
	if resp.Header.Get("X-Request-Id") != "" {
		t.Errorf("the local server itself set X-Request-Id; the handler does")
	}
}

func TestLocalBodyEncoding(t *testing.T) {
	for _, tc := range []struct {
		contentType string
		base64      bool
	}{
		{"application/json", false},
		{"application/merge-patch+json; charset=utf-8", false},
		{"text/plain", false},
		{"application/x-www-form-urlencoded", true},
		{"application/octet-stream", true},
		{"", true},
	} {
		r := httptest.NewRequest("POST", "/orders", strings.NewReader("a=1"))
		if tc.contentType != "" {
			r.Header.Set("Content-Type", tc.contentType)
		}
		body, err := orders.ReadBody(r)
		if err != nil {
			t.Fatal(err)
		}
		ev := orders.Event(r, body, "POST /orders", nil, "id", fixedNow)
		want := "a=1"
		if tc.base64 {
			want = base64.StdEncoding.EncodeToString([]byte("a=1"))
		}
		if ev.IsBase64Encoded != tc.base64 || ev.Body != want {
			t.Errorf("%q: body %q base64 %v, want %q %v", tc.contentType, ev.Body, ev.IsBase64Encoded, want, tc.base64)
		}
	}
}

func TestWriteResponse(t *testing.T) {
	w := httptest.NewRecorder()
	orders.WriteResponse(w, events.APIGatewayV2HTTPResponse{
		StatusCode:        202,
		Headers:           map[string]string{"Content-Type": "application/octet-stream"},
		MultiValueHeaders: map[string][]string{"X-Multi": {"a", "b"}},
		Cookies:           []string{"a=1; Path=/", "b=2"},
		Body:              base64.StdEncoding.EncodeToString([]byte{0, 1, 2}),
		IsBase64Encoded:   true,
	}, nil)
	// HTTP API payload 2.0 has no multiValueHeaders: API Gateway drops them.
	if w.Code != 202 || w.Header().Values("X-Multi") != nil || len(w.Header().Values("Set-Cookie")) != 2 || w.Body.String() != "\x00\x01\x02" {
		t.Errorf("got %d %v %q", w.Code, w.Header(), w.Body.Bytes())
	}
	w = httptest.NewRecorder()
	orders.WriteResponse(w, events.APIGatewayV2HTTPResponse{}, slog.New(slog.DiscardHandler))
	if w.Code != 500 {
		t.Errorf("a response without status: %d, want API Gateway's 500", w.Code)
	}
}

func TestMatchRoute(t *testing.T) {
	for _, tc := range []struct {
		method, path, key, id string
		ok                    bool
	}{
		{"POST", "/orders", "POST /orders", "", true},
		{"GET", "/orders/42", "GET /orders/{id}", "42", true},
		{"POST", "/payments", "POST /payments", "", true},
		{"GET", "/orders", "", "", false},
		{"GET", "/orders/", "", "", false},
		{"POST", "/orders/", "", "", false},
		{"GET", "/orders/1/2", "", "", false},
		{"PUT", "/orders/1", "", "", false},
		{"post", "/orders", "", "", false},
		{"Get", "/orders/42", "", "", false},
	} {
		key, p, ok := orders.MatchRoute(tc.method, tc.path)
		if key != tc.key || ok != tc.ok || p["id"] != tc.id {
			t.Errorf("%s %s: %q %v %v", tc.method, tc.path, key, p, ok)
		}
	}
}

// The local server adds to a function's response only what API Gateway
// adds (Content-Length, Date): a header API Gateway does not add, seen
// locally, would be missing once deployed.
func TestLocalAddsNoHeaders(t *testing.T) {
	h := func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: "{}"}, nil
	}
	srv := httptest.NewServer(&orders.Local{Handler: h})
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/orders", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for name := range resp.Header {
		switch name {
		case "Content-Type", "Content-Length", "Date":
		default:
			t.Errorf("the local server added %s: %q; API Gateway does not", name, resp.Header.Get(name))
		}
	}
}

// A request no route matches is answered as API Gateway answers it, 404
// {"message":"Not Found"}, without invoking the function: the function's
// own problems, X-Request-Id and Cache-Control never appear there.
func TestLocalUnmatchedRouteIsAPIGateways404(t *testing.T) {
	invoked := false
	h := func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		invoked = true
		return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
	}
	srv := httptest.NewServer(&orders.Local{Handler: h})
	defer srv.Close()
	for _, tc := range []struct{ method, path string }{{"DELETE", "/orders/x"}, {"GET", "/nope"}, {"GET", "/orders/"}, {"POST", "/orders/x"}} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		req.Header.Set("Authorization", "Bearer alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 404 || string(body) != `{"message":"Not Found"}` || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %d %s %q, want 404 application/json {\"message\":\"Not Found\"}", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
		for _, name := range []string{"X-Request-Id", "Cache-Control", "X-Content-Type-Options"} {
			if v := resp.Header.Get(name); v != "" {
				t.Errorf("%s %s: %s: %q; API Gateway's 404 has none", tc.method, tc.path, name, v)
			}
		}
	}
	if invoked {
		t.Errorf("the function was invoked for an unmatched route")
	}
}

// Without a bearer token the development authorizer answers what API
// Gateway's JWT authorizer answers, 401 {"message":"Unauthorized"} with
// WWW-Authenticate, and nothing API Gateway does not send: the function
// never runs, so neither its problem body nor its X-Request-Id and
// Cache-Control.
func TestDevAuthorizer401IsAPIGateways(t *testing.T) {
	invoked := false
	h := orders.DevAuthorizer(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		invoked = true
		return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
	})
	for _, auth := range []string{"", "Basic YTpi", "Bearer ", "Bearer a b"} {
		ev := events.APIGatewayV2HTTPRequest{Headers: map[string]string{"authorization": auth}}
		resp, err := h(context.Background(), ev)
		if err != nil || resp.StatusCode != 401 || resp.Body != `{"message":"Unauthorized"}` || resp.Headers["Content-Type"] != "application/json" {
			t.Errorf("Authorization %q: %d %v %v %s, want 401 {\"message\":\"Unauthorized\"}", auth, resp.StatusCode, err, resp.Headers, resp.Body)
		}
		if !strings.HasPrefix(resp.Headers["WWW-Authenticate"], "Bearer") {
			t.Errorf("Authorization %q: WWW-Authenticate %q, want a Bearer challenge", auth, resp.Headers["WWW-Authenticate"])
		}
		for k := range resp.Headers {
			if k != "Content-Type" && k != "WWW-Authenticate" {
				t.Errorf("Authorization %q: header %s: %q; API Gateway's 401 has none", auth, k, resp.Headers[k])
			}
		}
	}
	if invoked {
		t.Errorf("the function was invoked without a token")
	}
}

// TestLocalRawPathDecoded: an HTTP API delivers the path decoded, so
// /orders/%31 and /orders/1 are one event, locally as deployed.
func TestLocalRawPathDecoded(t *testing.T) {
	var got []events.APIGatewayV2HTTPRequest
	h := func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		got = append(got, ev)
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "{}"}, nil
	}
	srv := httptest.NewServer(&orders.Local{Handler: h})
	defer srv.Close()
	for _, p := range []string{"/orders/%31", "/orders/1"} {
		req, _ := http.NewRequest("GET", srv.URL+p, nil)
		req.Header.Set("Authorization", "Bearer alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(got) != 2 {
		t.Fatalf("%d invocations, want 2", len(got))
	}
	for i, ev := range got {
		if ev.RawPath != "/orders/1" || ev.RequestContext.HTTP.Path != "/orders/1" || ev.PathParameters["id"] != "1" {
			t.Errorf("request %d: rawPath %q, http.path %q, id %q; want /orders/1 and 1", i, ev.RawPath, ev.RequestContext.HTTP.Path, ev.PathParameters["id"])
		}
	}
}
