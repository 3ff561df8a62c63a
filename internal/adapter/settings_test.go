package adapter_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/alb"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// settings are the shared Config settings the tests below give every front.
type settings struct {
	fp     fingerprint.Options
	routes map[string]httpconfig.Route // keyed "POST /orders"; converted per front
}

// sendFront sends one POST /orders with key "order-1", the extra request
// headers hdr and a JSON body to one front, and returns the status and
// whether the answer was a replay.
type sendFront func(t *testing.T, hdr map[string]string, body string) (status int, replayed bool)

// settingsFronts returns every front configured with s, each over a guard
// of its own, around a handler that answers 201 and counts its runs.
func settingsFronts(t *testing.T, s settings, runs *int) map[string]sendFront {
	const tenant = "tenant-a"
	headers := func(hdr map[string]string) map[string]string {
		h := map[string]string{"Idempotency-Key": "order-1", "Content-Type": "application/json"}
		for k, v := range hdr {
			h[k] = v
		}
		return h
	}
	albRoutes := map[string]httpconfig.Route{}
	mwRoutes := map[string]httpconfig.Route{}
	for k, r := range s.routes {
		albRoutes[k] = httpconfig.Route(r)
		mwRoutes[k] = httpconfig.Route(r)
	}
	cfg := apigw.Config{Tenant: apigw.SingleTenant(tenant), Settings: httpconfig.Settings{Fingerprint: s.fp, Routes: s.routes}}
	v1 := apigw.WrapV1(testguard.Mem(t), cfg, func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		*runs++
		return events.APIGatewayProxyResponse{StatusCode: 201, Body: `{"id":"ord_1"}`}, nil
	})
	v2 := apigw.WrapV2(testguard.Mem(t), cfg, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		*runs++
		return events.APIGatewayV2HTTPResponse{StatusCode: 201, Body: `{"id":"ord_1"}`}, nil
	})
	url := apigw.WrapFunctionURL(testguard.Mem(t), cfg, func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		*runs++
		return events.LambdaFunctionURLResponse{StatusCode: 201, Body: `{"id":"ord_1"}`}, nil
	})
	lb := alb.Wrap(testguard.Mem(t), alb.Config{Tenant: alb.SingleTenant(tenant), Settings: httpconfig.Settings{Fingerprint: s.fp, Routes: albRoutes}},
		func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
			*runs++
			return events.ALBTargetGroupResponse{StatusCode: 201, Body: `{"id":"ord_1"}`}, nil
		})
	mw := httpmw.New(testguard.Mem(t), httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return tenant, nil }, Settings: httpconfig.Settings{Fingerprint: s.fp, Routes: mwRoutes}})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*runs++
		w.WriteHeader(201)
		io.WriteString(w, `{"id":"ord_1"}`)
	}))
	return map[string]sendFront{
		"v1": func(t *testing.T, hdr map[string]string, body string) (int, bool) {
			h := headers(hdr)
			r, err := v1(context.Background(), events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/orders", Resource: "/orders",
				Headers: h, MultiValueHeaders: multiOf(h), Body: body})
			if err != nil {
				t.Fatal(err)
			}
			return r.StatusCode, r.Headers["Idempotent-Replayed"] == "true"
		},
		"v2": func(t *testing.T, hdr map[string]string, body string) (int, bool) {
			ev := v2Post("POST /orders", "/orders", "", lowered(headers(hdr)), body)
			r := testkit.Call(t, v2, ev)
			return r.StatusCode, r.Headers["Idempotent-Replayed"] == "true"
		},
		"url": func(t *testing.T, hdr map[string]string, body string) (int, bool) {
			ev := urlPost("/orders", "", lowered(headers(hdr)), body)
			r := testkit.Call(t, url, ev)
			return r.StatusCode, r.Headers["Idempotent-Replayed"] == "true"
		},
		"alb": func(t *testing.T, hdr map[string]string, body string) (int, bool) {
			r, err := lb(context.Background(), events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: "/orders",
				Headers: lowered(headers(hdr)), Body: body})
			if err != nil {
				t.Fatal(err)
			}
			return r.StatusCode, r.Headers["Idempotent-Replayed"] == "true"
		},
		"httpmw": func(t *testing.T, hdr map[string]string, body string) (int, bool) {
			r := httptest.NewRequest(http.MethodPost, "/orders", bytes.NewReader([]byte(body)))
			for k, v := range headers(hdr) {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			mw.ServeHTTP(w, r)
			return w.Code, w.Header().Get("Idempotent-Replayed") == "true"
		},
	}
}

func multiOf(h map[string]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range h {
		out[k] = []string{v}
	}
	return out
}

// lowered returns h with lower-case names, as HTTP APIs, function URLs
// and load balancers deliver them.
func lowered(h map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		out[toLower(k)] = v
	}
	return out
}

func toLower(s string) string { return string(bytes.ToLower([]byte(s))) }

// TestSettingsReachEveryFront: the fingerprint settings a Config gives
// decide, through every front, which retry is replayed and which is a 422:
// a header the fingerprint names tells two requests apart (in any
// spelling of its name), and a route that overrides only KeyOptional keeps
// the Config's fingerprint, so a retry that differs only outside it is
// still replayed.
func TestSettingsReachEveryFront(t *testing.T) {
	include := &fingerprint.Options{Include: []string{"/amount"}}
	const first = `{"amount":1,"note":"first"}`
	type try struct {
		hdr    map[string]string
		body   string
		status int
		replay bool
	}
	for _, tc := range []struct {
		name string
		s    settings
		then []try
	}{
		{"fingerprinted header", settings{fp: fingerprint.Options{Headers: []string{"X-Currency"}}}, []try{
			{map[string]string{"X-Currency": "eur"}, first, 201, true},
			{map[string]string{"x-currency": " eur "}, first, 201, true},
			{map[string]string{"X-Currency": "usd"}, first, 422, false},
			{nil, first, 422, false},
		}},
		{"route overriding KeyOptional only", settings{fp: *include, routes: map[string]httpconfig.Route{"POST /orders": {KeyOptional: true}}}, []try{
			{map[string]string{"X-Currency": "eur"}, `{"amount":1,"note":"retry"}`, 201, true},
			{map[string]string{"X-Currency": "eur"}, `{"amount":2,"note":"first"}`, 422, false},
		}},
		{"route's own fingerprint", settings{routes: map[string]httpconfig.Route{"POST /orders": {Fingerprint: include}}}, []try{
			{map[string]string{"X-Currency": "eur"}, `{"amount":1,"note":"retry"}`, 201, true},
			{map[string]string{"X-Currency": "eur"}, `{"amount":2,"note":"first"}`, 422, false},
		}},
	} {
		runs := 0
		for name, send := range settingsFronts(t, tc.s, &runs) {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				if st, rep := send(t, map[string]string{"X-Currency": "eur"}, first); st != 201 || rep {
					t.Fatalf("first: %d replayed=%v", st, rep)
				}
				for i, tr := range tc.then {
					if st, rep := send(t, tr.hdr, tr.body); st != tr.status || rep != tr.replay {
						t.Errorf("retry %d (%v %s): %d replayed=%v, want %d replayed=%v", i, tr.hdr, tr.body, st, rep, tr.status, tr.replay)
					}
				}
			})
		}
		if runs != 5 {
			t.Errorf("%s: handlers ran %d times, want 5 (one per front)", tc.name, runs)
		}
	}
}
