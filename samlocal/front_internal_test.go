package samlocal

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestResponse: what the emulator answers becomes what API Gateway makes
// of it, in either payload format.
func TestResponse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version string
		status  int
		out     string
		want    int // 0: a function error
		body    string
		header  string // a header's value wanted, "Name: value"
	}{
		{"response", "2.0", 200, `{"statusCode":201,"headers":{"Location":"/x"},"body":"{}"}`, 201, "{}", "Location: /x"},
		{"simple response", "2.0", 200, `{"hello":"world"}`, 200, `{"hello":"world"}`, "Content-Type: application/json"},
		{"simple JSON value", "2.0", 200, `"text"`, 200, `"text"`, ""},
		{"base64 body", "2.0", 200, `{"statusCode":200,"body":"aGk=","isBase64Encoded":true}`, 200, "hi", ""},
		{"1.0 multi-value headers", "1.0", 200, `{"statusCode":200,"multiValueHeaders":{"X-A":["1","2"]},"body":"ok"}`, 200, "ok", "X-A: 1"},
		{"1.0 simple response is an error", "1.0", 200, `{"hello":"world"}`, 0, "", ""},
		{"function error", "2.0", 200, `{"errorMessage":"boom","errorType":"errorString"}`, 0, "", ""},
		{"timeout", "2.0", 200, `Task timed out after 29.00 seconds`, 0, "", ""},
		{"init failure", "2.0", 502, ``, 0, "", ""},
		{"emulator error", "2.0", 500, `{"statusCode":200}`, 0, "", ""},
		{"bad statusCode", "2.0", 200, `{"statusCode":"two hundred"}`, 0, "", ""},
		{"status out of range", "2.0", 200, `{"statusCode":42}`, 0, "", ""},
		{"statusCode null", "2.0", 200, `{"statusCode":null}`, 0, "", ""},
		{"error members beside a statusCode", "2.0", 200, `{"statusCode":400,"errorMessage":"m","body":"b"}`, 400, "b", ""},
		{"simple JSON list", "2.0", 200, `[1,2]`, 200, `[1,2]`, "Content-Type: application/json"},
		{"simple null", "2.0", 200, `null`, 200, `null`, ""},
		{"1.0 simple list is an error", "1.0", 200, `[1,2]`, 0, "", ""},
		{"1.0 header replaces its multi-value header", "1.0", 200, `{"statusCode":200,"multiValueHeaders":{"X-A":["1","2"]},"headers":{"X-A":"3"},"body":"ok"}`, 200, "ok", "X-A: 3"},
		{"2.0 has no multi-value headers", "2.0", 200, `{"statusCode":200,"multiValueHeaders":{"X-A":["1"]},"body":"ok"}`, 200, "ok", "X-A: "},
		{"cookies", "2.0", 200, `{"statusCode":200,"cookies":["a=1"],"body":"ok"}`, 200, "ok", "Set-Cookie: a=1"},
		{"bad base64 body", "2.0", 200, `{"statusCode":200,"body":"!!","isBase64Encoded":true}`, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp, err := Response(tc.version, tc.status, []byte(tc.out))
			var fe *FunctionError
			if tc.want == 0 {
				if !errors.As(err, &fe) || fe.Status != tc.status {
					t.Fatalf("Response: %+v %v, want a FunctionError", rp, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			rp.write(w)
			if w.Code != tc.want || w.Body.String() != tc.body {
				t.Fatalf("wrote %d %q, want %d %q", w.Code, w.Body.String(), tc.want, tc.body)
			}
			if tc.header != "" {
				name, value := tc.header[:len(tc.header)-len(value(tc.header))-2], value(tc.header)
				if got := w.Header().Get(name); got != value {
					t.Fatalf("header %s: %q, want %q", name, got, value)
				}
			}
		})
	}
}

func value(h string) string {
	for i := range h {
		if h[i] == ':' {
			return h[i+2:]
		}
	}
	return ""
}

// TestMatch: routes are chosen as API Gateway chooses them.
func TestMatch(t *testing.T) {
	f := &Front{Routes: []*Route{
		{Function: "items", Method: "GET", Path: "/items/{id}"},
		{Function: "special", Method: "GET", Path: "/items/special"},
		{Function: "any", Method: "ANY", Path: "/items/{id}"},
		{Function: "files", Method: "GET", Path: "/files/{proxy+}"},
		{Function: "default", Method: "ANY", Path: "$default"},
	}}
	for _, tc := range []struct {
		method, path, fn, param string
	}{
		{"GET", "/items/7", "items", "7"},
		{"GET", "/items/special", "special", ""},
		{"POST", "/items/7", "any", "7"},
		{"GET", "/items/a%2Fb", "items", "a/b"},
		{"GET", "/files/a/b/c", "files", "a/b/c"},
		{"get", "/items/7", "any", "7"},
		{"GET", "/items/", "default", ""},
		{"GET", "/other", "default", ""},
	} {
		rt, params := f.match(tc.method, tc.path)
		if rt == nil || rt.Function != tc.fn {
			t.Errorf("%s %s: %+v, want %s", tc.method, tc.path, rt, tc.fn)
			continue
		}
		var got string
		for _, v := range params {
			got = v
		}
		if got != tc.param {
			t.Errorf("%s %s: parameters %v, want %q", tc.method, tc.path, params, tc.param)
		}
	}
	if rt, _ := (&Front{Routes: f.Routes[:1]}).match("GET", "/items"); rt != nil {
		t.Errorf("GET /items matched %+v, want none", rt)
	}
}

// TestEvents: a request becomes the event of its route's payload format,
// with the token's claims where that format carries them.
func TestEvents(t *testing.T) {
	r := httptest.NewRequest("POST", "http://api.local:3000/v1/accounts/a%2F1/transfers?x=1&x=2", strings.NewReader(`{"a":1}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Add("X-Multi", "1")
	r.Header.Add("X-Multi", "2")
	r.Header.Set("Cookie", "c=1; d=2")
	claims := &Claims{Claims: map[string]string{"sub": "carol"}, Scopes: []string{"s"}}
	for _, rt := range []*Route{
		{Method: "POST", Path: "/v1/accounts/{account}/transfers", Payload: "2.0"},
		{Method: "POST", Path: "/v1/accounts/{account}/transfers", Payload: "1.0"},
		{Method: "POST", Path: "/v1/accounts/{account}/transfers", Payload: "1.0", REST: true},
	} {
		b, err := readBody(r)
		if err != nil {
			t.Fatal(err)
		}
		r.Body = io.NopCloser(strings.NewReader(`{"a":1}`))
		q := &request{r: r, body: b, route: rt, params: map[string]string{"account": "a/1"}, claims: claims, requestID: "id", now: time.Unix(0, 0)}
		if rt.Payload == "2.0" {
			ev := q.eventV2()
			if ev.RouteKey != "POST /v1/accounts/{account}/transfers" || ev.Body != `{"a":1}` || ev.IsBase64Encoded ||
				ev.Headers["x-multi"] != "1,2" || ev.QueryStringParameters["x"] != "1,2" || len(ev.Cookies) != 2 ||
				ev.PathParameters["account"] != "a/1" || ev.RequestContext.Authorizer.JWT.Claims["sub"] != "carol" {
				t.Errorf("2.0 event %+v", ev)
			}
			continue
		}
		ev := q.eventV1()
		auth := ev.RequestContext.Authorizer
		var sub any
		if rt.REST {
			sub = auth["claims"].(map[string]any)["sub"]
		} else {
			sub = auth["jwt"].(map[string]any)["claims"].(map[string]any)["sub"]
		}
		if ev.Resource != rt.Path || ev.HTTPMethod != "POST" || ev.MultiValueHeaders["x-multi"][1] != "2" ||
			ev.QueryStringParameters["x"] != "2" || len(ev.MultiValueQueryStringParameters["x"]) != 2 || sub != "carol" {
			t.Errorf("1.0 event (REST %v) %+v", rt.REST, ev)
		}
	}
	// A body that is not text is passed base64-encoded.
	bin := httptest.NewRequest("POST", "/x", strings.NewReader("\x00\x01"))
	bin.Header.Set("Content-Type", "application/octet-stream")
	if b, err := readBody(bin); err != nil || !b.base64 || b.text != "AAE=" {
		t.Errorf("binary body %+v %v", b, err)
	}
}
