package adapter_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/alb"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/tenant"
)

// answer is a response as the client gets it, whatever the front.
type answer struct {
	status int
	header http.Header
	body   string
}

// nestedBody makes the handler send the same request again while it runs,
// so that the inner one is answered 409 in-flight.
const nestedBody = `{"nested":true}`

// hookFronts returns every front configured with s, each over a guard of
// its own, around a handler that answers 201 with a JSON body and a
// Location; send posts /orders with the key "order-1" (none when key is
// false) and body. For nestedBody, inner receives the answer to the
// request the handler sends again while it runs.
func hookFronts(t *testing.T, s httpconfig.Settings, inner *answer) map[string]func(key bool, body string) answer {
	hdr := func(key bool) http.Header {
		h := http.Header{"Content-Type": {"application/json"}}
		if key {
			h.Set("Idempotency-Key", "order-1")
		}
		return h
	}
	single := func(h http.Header) map[string]string {
		out := map[string]string{}
		for k, vs := range h {
			out[k] = vs[0]
		}
		return out
	}
	lambdaBody := func(body string, b64 bool) string {
		if !b64 {
			return body
		}
		b, err := base64.StdEncoding.DecodeString(body)
		if err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
		return string(b)
	}
	merged := func(s map[string]string, m map[string][]string) http.Header {
		h := http.Header{}
		for k, v := range s {
			h.Set(k, v)
		}
		for k, vs := range m {
			h[http.CanonicalHeaderKey(k)] = vs
		}
		return h
	}
	fronts := map[string]func(key bool, body string) answer{}
	var again func(key bool, body string) answer
	run := func(body string) {
		if body == nestedBody {
			*inner = again(true, body)
		}
	}
	apiTenant := apigw.SingleTenant("tenant-a")
	created := map[string]string{"Content-Type": "application/json", "Location": "/orders/1"}

	v1 := apigw.WrapV1(testguard.Mem(t), apigw.Config{Tenant: apiTenant, Settings: s}, func(_ context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		run(ev.Body)
		return events.APIGatewayProxyResponse{StatusCode: 201, Headers: created, Body: `{"id":"ord_1"}`}, nil
	})
	fronts["v1"] = func(key bool, body string) answer {
		h := hdr(key)
		r, err := v1(context.Background(), events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/orders", Resource: "/orders",
			Headers: single(h), MultiValueHeaders: h, Body: body})
		if err != nil {
			t.Fatal(err)
		}
		return answer{r.StatusCode, merged(r.Headers, r.MultiValueHeaders), lambdaBody(r.Body, r.IsBase64Encoded)}
	}
	v2 := apigw.WrapV2(testguard.Mem(t), apigw.Config{Tenant: apiTenant, Settings: s}, func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		run(ev.Body)
		return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: created, Body: `{"id":"ord_1"}`}, nil
	})
	fronts["v2"] = func(key bool, body string) answer {
		ev := v2Post("POST /orders", "/orders", "", lowered(single(hdr(key))), body)
		r := testkit.Call(t, v2, ev)
		return answer{r.StatusCode, merged(r.Headers, nil), lambdaBody(r.Body, r.IsBase64Encoded)}
	}
	url := apigw.WrapFunctionURL(testguard.Mem(t), apigw.Config{Tenant: apiTenant, Settings: s}, func(_ context.Context, ev events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		run(ev.Body)
		return events.LambdaFunctionURLResponse{StatusCode: 201, Headers: created, Body: `{"id":"ord_1"}`}, nil
	})
	fronts["url"] = func(key bool, body string) answer {
		ev := urlPost("/orders", "", lowered(single(hdr(key))), body)
		r := testkit.Call(t, url, ev)
		return answer{r.StatusCode, merged(r.Headers, nil), lambdaBody(r.Body, r.IsBase64Encoded)}
	}
	for _, mode := range []string{"alb", "alb-multi"} {
		multi := mode == "alb-multi"
		lb := alb.Wrap(testguard.Mem(t), alb.Config{Tenant: alb.SingleTenant("tenant-a"), Settings: s}, func(_ context.Context, ev events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
			run(ev.Body)
			r := events.ALBTargetGroupResponse{StatusCode: 201, StatusDescription: "201 Created", Body: `{"id":"ord_1"}`}
			if multi {
				r.MultiValueHeaders = merged(created, nil)
			} else {
				r.Headers = created
			}
			return r, nil
		})
		fronts[mode] = func(key bool, body string) answer {
			ev := events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: "/orders", Body: body}
			if multi {
				ev.MultiValueHeaders = hdr(key)
			} else {
				ev.Headers = lowered(single(hdr(key)))
			}
			r := testkit.Call(t, lb, ev)
			return answer{r.StatusCode, merged(r.Headers, r.MultiValueHeaders), lambdaBody(r.Body, r.IsBase64Encoded)}
		}
	}
	mw := httpmw.New(testguard.Mem(t), httpmw.Config{Tenant: tenant.Single[*http.Request]("tenant-a"), Settings: s})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			run(string(b))
			for k, v := range created {
				w.Header().Set(k, v)
			}
			w.WriteHeader(201)
			io.WriteString(w, `{"id":"ord_1"}`)
		}))
	fronts["httpmw"] = func(key bool, body string) answer {
		r := httptest.NewRequest(http.MethodPost, "/orders", bytes.NewReader([]byte(body)))
		r.Header = hdr(key)
		w := httptest.NewRecorder()
		mw.ServeHTTP(w, r)
		h := w.Header().Clone()
		h.Del("Content-Length") // net/http's framing, not the answer's
		return answer{w.Code, h, w.Body.String()}
	}
	// again sends through the front being tested: one test runs one
	// front at a time.
	for name, f := range fronts {
		fronts[name] = func(key bool, body string) answer {
			again = f
			return f(key, body)
		}
	}
	return fronts
}

// TestProblemResponseHook: through every front, Settings.ProblemResponse
// answers each problem in the API's own format, from the problem's type,
// status, detail and Retry-After; what it may not send is held to the
// rules (a status outside 200-599, hop-by-hop and framing fields, the
// replay mark); a binary body reaches the client intact.
func TestProblemResponseHook(t *testing.T) {
	own := func(_ context.Context, p httpproblem.Details) httpproblem.Response {
		h := http.Header{"Content-Type": {"application/vnd.api+json"}, "X-Error-Type": {p.Type}}
		if p.RetryAfter > 0 {
			h.Set("Retry-After", "7")
		}
		return httpproblem.Response{Status: p.Status, Header: h, Body: []byte(`{"errors":[{"status":` + strconv.Itoa(p.Status) + `}]}`)}
	}
	for _, tc := range []struct {
		name   string
		hook   func(context.Context, httpproblem.Details) httpproblem.Response
		key    bool
		body   string
		nested bool // the answer is the inner request's
		want   answer
	}{
		{name: "key missing, own format", hook: own, body: `{}`,
			want: answer{400, http.Header{"Content-Type": {"application/vnd.api+json"}, "X-Error-Type": {httpproblem.TypeKeyMissing}}, `{"errors":[{"status":400}]}`}},
		{name: "in flight, Retry-After", hook: own, key: true, body: nestedBody, nested: true,
			want: answer{409, http.Header{"Content-Type": {"application/vnd.api+json"}, "X-Error-Type": {httpproblem.TypeInFlight}, "Retry-After": {"7"}}, `{"errors":[{"status":409}]}`}},
		{name: "in flight becomes 503, on purpose", key: true, body: nestedBody, nested: true,
			hook: func(_ context.Context, p httpproblem.Details) httpproblem.Response {
				r := p.Response()
				if p.Type == httpproblem.TypeInFlight {
					r.Status = 503
				}
				r.Body = []byte(p.Detail)
				return r
			},
			want: answer{503, http.Header{"Content-Type": {"application/problem+json"}, "Cache-Control": {"no-store"}, "X-Content-Type-Options": {"nosniff"}, "Retry-After": {"lease"}},
				"A request with this key is being processed. Retry after the delay given in Retry-After."}},
		{name: "invalid status and fields dropped", body: `{}`,
			hook: func(context.Context, httpproblem.Details) httpproblem.Response {
				return httpproblem.Response{Status: 102, Header: http.Header{"Connection": {"close"}, "Transfer-Encoding": {"chunked"},
					"Content-Length": {"1"}, "Idempotent-Replayed": {"true"}, "X-Bad": {"a\nb"}, "Bad Name": {"x"}, "X-Ok": {"1"}}, Body: []byte("no key")}
			},
			want: answer{400, http.Header{"X-Ok": {"1"}}, "no key"}},
		{name: "binary body", body: `{}`,
			hook: func(context.Context, httpproblem.Details) httpproblem.Response {
				return httpproblem.Response{Status: 400, Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: []byte{0xff, 0x00, 0xfe}}
			},
			want: answer{400, http.Header{"Content-Type": {"application/octet-stream"}}, "\xff\x00\xfe"}},
	} {
		var inner answer
		for name, send := range hookFronts(t, httpconfig.Settings{ProblemResponse: tc.hook}, &inner) {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				got := send(tc.key, tc.body)
				if tc.nested {
					if got.status != 201 {
						t.Fatalf("outer request: %d %s", got.status, got.body)
					}
					got = inner
				}
				if tc.want.header.Get("Retry-After") == "lease" {
					// The lease left, in whole seconds: more than 0.
					if n, err := strconv.Atoi(got.header.Get("Retry-After")); err == nil && n > 0 {
						got.header.Set("Retry-After", "lease")
					}
				}
				if got.status != tc.want.status || !reflect.DeepEqual(got.header, tc.want.header) || got.body != tc.want.body {
					t.Errorf("got %d %v %q\nwant %d %v %q", got.status, got.header, got.body, tc.want.status, tc.want.header, tc.want.body)
				}
			})
		}
	}
}

// TestAdjustReplayHook: through every front, Settings.AdjustReplay adds,
// changes and removes fields of a replay, and sees its stored status; the
// status, the body, what describes the body (Content-Type,
// Content-Encoding) and the replay mark stay the stored answer's, and
// hop-by-hop and framing fields are dropped. A field never stored
// (X-Request-Id) is sent as the hook sets it. A fresh response is not
// adjusted.
func TestAdjustReplayHook(t *testing.T) {
	for _, tc := range []struct {
		name string
		hook func(ctx context.Context, status int, h http.Header)
		want http.Header
	}{
		{name: "add and change", hook: func(_ context.Context, status int, h http.Header) {
			h.Set("X-Request-Id", "req-2")
			h.Set("Location", "/orders/1?replayed")
			h.Set("X-Stored-Status", strconv.Itoa(status))
		}, want: http.Header{"Content-Type": {"application/json"}, "Location": {"/orders/1?replayed"}, "X-Request-Id": {"req-2"},
			"X-Stored-Status": {"201"}, "Idempotent-Replayed": {"true"}}},
		{name: "remove", hook: func(_ context.Context, _ int, h http.Header) { h.Del("Location") },
			want: http.Header{"Content-Type": {"application/json"}, "Idempotent-Replayed": {"true"}}},
		{name: "what may not change", hook: func(_ context.Context, _ int, h http.Header) {
			h.Set("Content-Type", "text/plain")
			h.Set("Content-Encoding", "gzip")
			h["idempotent-replayed"] = []string{"false"}
			h.Set("Connection", "close")
			h.Set("Content-Length", "1")
			h.Set("X-Bad", "a\r\nb")
		}, want: http.Header{"Content-Type": {"application/json"}, "Location": {"/orders/1"}, "Idempotent-Replayed": {"true"}}},
	} {
		var inner answer
		for name, send := range hookFronts(t, httpconfig.Settings{AdjustReplay: tc.hook}, &inner) {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				first := send(true, `{}`)
				if first.status != 201 || first.header.Get("X-Request-Id") != "" || first.header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("first: %d %v", first.status, first.header)
				}
				got := send(true, `{}`)
				if got.status != 201 || got.body != `{"id":"ord_1"}` || !reflect.DeepEqual(got.header, tc.want) {
					t.Errorf("replay %d %v %q\nwant 201 %v", got.status, got.header, got.body, tc.want)
				}
			})
		}
	}
}
