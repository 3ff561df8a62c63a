package adapter_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/alb"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// front sends one guarded POST /orders?expand=items, with the given key
// header lines, content type and body, to one adapter over a shared guard,
// and returns the response's status, whether it was replayed, and its
// problem type (if any). b64 asks a Lambda front to deliver the body
// base64-encoded, as API Gateway does for binary media types.
type front func(t *testing.T, key []string, contentType string, body []byte, b64 bool) (status int, replayed bool, problem string)

// fronts returns every adapter wrapped around one handler over g, all in
// tenant "tenant-a" and operation "POST /orders".
func fronts(g *idemkit.Guard, runs *int) map[string]front {
	const tenant = "tenant-a"
	enc := func(body []byte, b64 bool) string {
		if b64 {
			return base64.StdEncoding.EncodeToString(body)
		}
		return string(body)
	}
	out := func(h http.Header) (bool, string) {
		p := ""
		if h.Get("Content-Type") == "application/problem+json" {
			p = "problem"
		}
		return h.Get("Idempotent-Replayed") == "true", p
	}
	single := func(m map[string]string) http.Header {
		h := http.Header{}
		for k, v := range m {
			h.Set(k, v)
		}
		return h
	}
	v1 := apigw.WrapV1(g, apigw.Config{Tenant: apigw.SingleTenant(tenant)}, func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		*runs++
		return events.APIGatewayProxyResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"id":"ord_1"}`}, nil
	})
	v2 := apigw.WrapV2(g, apigw.Config{Tenant: apigw.SingleTenant(tenant)}, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		*runs++
		return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"id":"ord_1"}`}, nil
	})
	url := apigw.WrapFunctionURL(g, apigw.Config{Tenant: apigw.SingleTenant(tenant)}, func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		*runs++
		return events.LambdaFunctionURLResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"id":"ord_1"}`}, nil
	})
	lb := alb.Wrap(g, alb.Config{Tenant: alb.SingleTenant(tenant)}, func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
		*runs++
		return events.ALBTargetGroupResponse{StatusCode: 201, MultiValueHeaders: map[string][]string{"Content-Type": {"application/json"}}, Body: `{"id":"ord_1"}`}, nil
	})
	mw := httpmw.New(g, httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return tenant, nil }})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*runs++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		io.WriteString(w, `{"id":"ord_1"}`)
	}))
	return map[string]front{
		"v1": func(t *testing.T, key []string, ct string, body []byte, b64 bool) (int, bool, string) {
			// REST APIs give the last line in headers, all in multiValueHeaders.
			ev := events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/orders", Resource: "/orders",
				Headers:                         map[string]string{"Content-Type": ct},
				MultiValueHeaders:               map[string][]string{"Content-Type": {ct}},
				QueryStringParameters:           map[string]string{"expand": "items"},
				MultiValueQueryStringParameters: map[string][]string{"expand": {"items"}},
				Body:                            enc(body, b64), IsBase64Encoded: b64}
			if len(key) > 0 {
				ev.Headers["Idempotency-Key"], ev.MultiValueHeaders["Idempotency-Key"] = key[len(key)-1], key
			}
			r := testkit.Call(t, v1, ev)
			rep, p := out(single(r.Headers))
			return r.StatusCode, rep, p
		},
		"v2": func(t *testing.T, key []string, ct string, body []byte, b64 bool) (int, bool, string) {
			ev := v2Post("POST /orders", "/orders", "expand=items", joined(key, ct), enc(body, b64))
			ev.IsBase64Encoded = b64
			r := testkit.Call(t, v2, ev)
			rep, p := out(single(r.Headers))
			return r.StatusCode, rep, p
		},
		"url": func(t *testing.T, key []string, ct string, body []byte, b64 bool) (int, bool, string) {
			ev := urlPost("/orders", "expand=items", joined(key, ct), enc(body, b64))
			ev.IsBase64Encoded = b64
			r := testkit.Call(t, url, ev)
			rep, p := out(single(r.Headers))
			return r.StatusCode, rep, p
		},
		"alb": func(t *testing.T, key []string, ct string, body []byte, b64 bool) (int, bool, string) {
			ev := events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: "/orders",
				MultiValueHeaders:               map[string][]string{"content-type": {ct}},
				MultiValueQueryStringParameters: map[string][]string{"expand": {"items"}},
				Body:                            enc(body, b64), IsBase64Encoded: b64}
			if len(key) > 0 {
				ev.MultiValueHeaders["idempotency-key"] = key
			}
			r := testkit.Call(t, lb, ev)
			rep, p := out(r.MultiValueHeaders)
			return r.StatusCode, rep, p
		},
		"httpmw": func(t *testing.T, key []string, ct string, body []byte, _ bool) (int, bool, string) {
			r := httptest.NewRequest(http.MethodPost, "/orders?expand=items", bytes.NewReader(body))
			for _, k := range key {
				r.Header.Add("Idempotency-Key", k)
			}
			r.Header.Set("Content-Type", ct)
			w := httptest.NewRecorder()
			mw.ServeHTTP(w, r)
			rep, p := out(w.Header())
			return w.Code, rep, p
		},
	}
}

// TestFrontsAgree: one request reaches the same record through every
// adapter, whatever the encoding its front uses: a body delivered base64
// encoded is fingerprinted as its decoded bytes, a key quoted or bare, so
// the first front runs the handler and every other front replays. The same
// key with another body is a 422 through every front.
func TestFrontsAgree(t *testing.T) {
	names := []string{"v2", "v1", "url", "alb", "httpmw"}
	for _, tc := range []struct {
		name, contentType string
		body, other       []byte
	}{
		{"JSON", "application/json", []byte(`{"amount":1000,"currency":"eur"}`), []byte(`{"amount":1001,"currency":"eur"}`)},
		{"binary", "application/octet-stream", []byte{0x00, 0xff, 0xfe, 0x80, '{'}, []byte{0x00, 0xff, 0xfe, 0x80, '}'}},
		{"form", "application/x-www-form-urlencoded", []byte("amount=1000&currency=eur"), []byte("amount=1000&currency=usd")},
		{"empty", "application/json", []byte{}, []byte(`{}`)},
	} {
		for _, first := range names {
			t.Run(tc.name+"/first "+first, func(t *testing.T) {
				g := testguard.Mem(t)
				runs := 0
				fs := fronts(g, &runs)
				// Binary bodies reach a Lambda front only base64 encoded.
				binary := tc.name == "binary"
				if st, rep, p := fs[first](t, []string{"order-1"}, tc.contentType, tc.body, binary); st != 201 || rep || p != "" {
					t.Fatalf("first through %s: %d replayed=%v %s", first, st, rep, p)
				}
				for _, name := range names {
					for _, b64 := range []bool{false, true} {
						if !b64 && binary || b64 && name == "httpmw" {
							continue
						}
						for _, key := range [][]string{{"order-1"}, {`"order-1"`}} {
							what := fmt.Sprintf("%s base64=%v key %s", name, b64, key)
							if st, rep, p := fs[name](t, key, tc.contentType, tc.body, b64); st != 201 || !rep || p != "" {
								t.Errorf("%s: %d replayed=%v %s, want a replay", what, st, rep, p)
							}
							if st, _, p := fs[name](t, key, tc.contentType, tc.other, b64 || binary); st != 422 || p == "" {
								t.Errorf("%s, other body: %d %s, want a 422 problem", what, st, p)
							}
						}
					}
				}
				if runs != 1 {
					t.Errorf("handler ran %d times, want 1", runs)
				}
			})
		}
	}
}

// joined returns an HTTP API event's headers: lines of one field joined by
// commas, as API Gateway joins them.
func joined(key []string, contentType string) map[string]string {
	h := map[string]string{"content-type": contentType}
	if len(key) > 0 {
		h["idempotency-key"] = strings.Join(key, ",")
	}
	return h
}

// TestFrontsAgreeOnKeys: every front reads the key header alike: the same
// key however it is spelled (quoted, padded, repeated on several lines)
// replays the record the first request made; an invalid one is the same
// 400 problem through every front, and the handler never runs for it.
func TestFrontsAgreeOnKeys(t *testing.T) {
	names := []string{"v2", "v1", "url", "alb", "httpmw"}
	for _, tc := range []struct {
		name   string
		lines  []string
		status int // 201: a replay of "order-1"
	}{
		{"bare", []string{"order-1"}, 201},
		{"quoted", []string{`"order-1"`}, 201},
		{"padded", []string{" \torder-1 "}, 201},
		{"quoted and padded", []string{` "order-1"` + "\t"}, 201},
		{"two lines, bare and quoted", []string{"order-1", `"order-1"`}, 201},
		{"one line listing it twice", []string{`order-1, "order-1"`}, 201},
		{"two lines, two keys", []string{"order-1", "order-2"}, 400},
		{"one line, two keys", []string{"order-1,order-2"}, 400},
		{"empty", []string{""}, 400},
		{"blank", []string{"  "}, 400},
		{"empty quoted", []string{`""`}, 400},
		{"empty list member", []string{"order-1,"}, 400},
		{"non-ASCII", []string{"ordér-1"}, 400},
		{"control byte", []string{"order\x7f1"}, 400},
		{"space inside a bare key", []string{"order 1"}, 400},
		{"unterminated quote", []string{`"order-1`}, 400},
		{"quote inside a bare key", []string{`order"1`}, 400},
		{"parameters", []string{`"order-1";v=1`}, 400},
		{"token, not a string", []string{`"order-1"x`}, 400},
		{"over 255 bytes", []string{strings.Repeat("k", 256)}, 400},
		{"255 bytes quoted", []string{`"` + strings.Repeat("k", 255) + `"`}, 0},
		{"missing", nil, 400},
	} {
		for _, name := range names {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				g := testguard.Mem(t)
				runs := 0
				fs := fronts(g, &runs)
				body := []byte(`{"amount":1000}`)
				if st, _, _ := fs[name](t, []string{"order-1"}, "application/json", body, false); st != 201 {
					t.Fatalf("first: %d", st)
				}
				st, rep, p := fs[name](t, tc.lines, "application/json", body, false)
				switch tc.status {
				case 201:
					if st != 201 || !rep || runs != 1 {
						t.Errorf("%d replayed=%v after %d runs, want a replay", st, rep, runs)
					}
				case 0: // a valid key of its own: it runs
					if st != 201 || rep || runs != 2 {
						t.Errorf("%d replayed=%v after %d runs, want a second run", st, rep, runs)
					}
				default:
					if st != tc.status || p == "" || runs != 1 {
						t.Errorf("%d problem=%q after %d runs, want a %d problem", st, p, runs, tc.status)
					}
				}
			})
		}
	}
}
