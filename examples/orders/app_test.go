package orders_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/memstore"
)

func newHandler(t *testing.T) orders.HandlerFunc {
	t.Helper()
	h, err := orders.Handler(orders.Options{Store: memstore.New(), Repo: &orders.MemRepo{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return orders.DevAuthorizer(h)
}

func event(method, routeKey, path, body string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: routeKey, RawPath: path, Body: body,
		Headers: map[string]string{"authorization": "Bearer alice", "content-type": "application/json", "idempotency-key": fmt.Sprintf("k-%x", sha256.Sum256([]byte(routeKey+body)))},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
		},
	}
}

// Each invalid body names what is wrong, in a fixed order, so a replay
// and a re-execution say the same.
func TestValidation(t *testing.T) {
	h := newHandler(t)
	for _, tc := range []struct {
		route, body string
		status      int
		params      string
	}{
		{"POST /orders", `{"sku":"a","quantity":1,"amount_cents":1,"currency":"EUR"}`, 201, ""},
		{"POST /orders", `{}`, 400, "sku,quantity,amount_cents,currency"},
		{"POST /orders", `{"sku":"a","quantity":-1,"amount_cents":0,"currency":"eur"}`, 400, "quantity,amount_cents,currency"},
		{"POST /orders", `{"sku":"a","quantity":1.5,"amount_cents":1,"currency":"EUR"}`, 400, "quantity"},
		{"POST /orders", `{"sku":"a","quantity":1,"amount_cents":1,"currency":"EUR","x":1}`, 400, "body"},
		{"POST /orders", `{"sku":"` + strings.Repeat("s", 65) + `","quantity":1,"amount_cents":1,"currency":"EUR"}`, 400, "sku"},
		{"POST /orders", `[1]`, 400, "body"},
		{"POST /payments", `{"order_id":"x","amount_cents":1,"card":"4242424242424241","delay_ms":10001}`, 400, "order_id,card,delay_ms"},
		{"POST /payments", `{"order_id":"0194a1b2-0000-7000-8000-000000000000","amount_cents":1,"card":"4242424242424242"}`, 404, ""},
	} {
		ev := event("POST", tc.route, strings.TrimPrefix(tc.route, "POST "), tc.body)
		resp, err := h(context.Background(), ev)
		if err != nil || resp.StatusCode != tc.status {
			t.Errorf("%s %s: %d %v %s, want %d", tc.route, tc.body, resp.StatusCode, err, resp.Body, tc.status)
			continue
		}
		if tc.params == "" {
			continue
		}
		var p orders.Problem
		if err := json.Unmarshal([]byte(resp.Body), &p); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ip := range p.InvalidParams {
			names = append(names, ip.Name)
		}
		if strings.Join(names, ",") != tc.params || p.Type != orders.TypeValidation {
			t.Errorf("%s: invalidParams %v (%s), want %s", tc.body, names, p.Type, tc.params)
		}
	}
}

// A form post (curl -d without a Content-Type) is refused with 415.
func TestNonJSONBodyRefused(t *testing.T) {
	h := newHandler(t)
	ev := event("POST", "POST /orders", "/orders", "c2t1PWE=")
	ev.IsBase64Encoded = true
	ev.Headers["content-type"] = "application/x-www-form-urlencoded"
	resp, _ := h(context.Background(), ev)
	if resp.StatusCode != 415 || resp.Headers["Content-Type"] != "application/problem+json" {
		t.Errorf("form body: %d %v", resp.StatusCode, resp.Headers)
	}
}

// A handler error (a slow processor past the deadline) releases the key:
// the caller gets 503 and a retry runs again.
func TestDeadlineReleasesTheKey(t *testing.T) {
	h := newHandler(t)
	create := event("POST", "POST /orders", "/orders", `{"sku":"a","quantity":1,"amount_cents":1,"currency":"EUR"}`)
	resp, _ := h(context.Background(), create)
	var o orders.Order
	if err := json.Unmarshal([]byte(resp.Body), &o); err != nil {
		t.Fatal(err)
	}
	// The processor takes 1.5 s; the invocation has 0.5 s: the handler
	// runs and fails at its deadline (a cancelled context would fail the
	// claim instead, before the handler).
	pay := event("POST", "POST /payments", "/payments", `{"order_id":"`+o.ID+`","amount_cents":1,"card":"4242424242424242","delay_ms":1500}`)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	resp, err := h(ctx, pay)
	if err != nil || resp.StatusCode != 503 || resp.Headers["Retry-After"] == "" || !strings.Contains(resp.Body, orders.TypeTemporarilyDown) {
		t.Fatalf("payment past its deadline: %d %v %s, want 503 %s", resp.StatusCode, err, resp.Body, orders.TypeTemporarilyDown)
	}
	resp, _ = h(context.Background(), event("GET", "GET /orders/{id}", "/orders/"+o.ID, ""))
	if !strings.Contains(resp.Body, `"payments":[]`) {
		t.Errorf("a payment past its deadline was recorded: %s", resp.Body)
	}
	// The key was released: the retry runs, and pays once.
	resp, _ = h(context.Background(), pay)
	if resp.StatusCode != 201 || resp.Headers["Idempotent-Replayed"] != "" {
		t.Fatalf("retry: %d %v %s, want a fresh 201", resp.StatusCode, resp.Headers, resp.Body)
	}
	resp, _ = h(context.Background(), event("GET", "GET /orders/{id}", "/orders/"+o.ID, ""))
	if !strings.Contains(resp.Body, `"paid_cents":1,`) {
		t.Errorf("after the retry: %s, want one payment of 1", resp.Body)
	}
}

func TestFromEnvRefusesMemoryInLambda(t *testing.T) {
	env := map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders"}
	if _, _, err := orders.FromEnv(context.Background(), func(k string) string { return env[k] }, nil); err == nil {
		t.Errorf("memory store accepted in a deployed Lambda")
	}
	env["AWS_SAM_LOCAL"] = "true"
	if _, _, err := orders.FromEnv(context.Background(), func(k string) string { return env[k] }, nil); err != nil {
		t.Errorf("sam local: %v", err)
	}
	env = map[string]string{orders.EnvReplayHours: "48", orders.EnvRetentionHours: "24"}
	if _, _, err := orders.FromEnv(context.Background(), func(k string) string { return env[k] }, nil); err == nil {
		t.Errorf("retention under the replay window accepted")
	}
}

// The replay window and retention are refused unless they are a positive,
// finite number of hours a time.Duration can hold: a NaN, an infinity or
// an overflow would otherwise become a policy that depends on the CPU
// (float-to-int conversion of such values is implementation-defined: the
// minimum int64 on amd64, 0 or the maximum on arm64) and is silently
// replaced by a default or set to centuries.
func TestFromEnvRefusesBadHours(t *testing.T) {
	for _, env := range []string{orders.EnvReplayHours, orders.EnvRetentionHours} {
		for _, v := range []string{"0", "-1", "x", "NaN", "nan", "Inf", "+Inf", "-Inf", "1e300", "3000000", "1e-30"} {
			getenv := func(k string) string {
				if k == env {
					return v
				}
				return ""
			}
			if o, _, err := orders.FromEnv(context.Background(), getenv, nil); err == nil {
				t.Errorf("%s=%s accepted: policy %+v", env, v, o.Policy)
			}
		}
		for v, want := range map[string]time.Duration{"1": time.Hour, "0.5": 30 * time.Minute, "168": 168 * time.Hour, "2562047": 2562047 * time.Hour} {
			getenv := func(k string) string {
				if k == env {
					return v
				}
				return ""
			}
			o, _, err := orders.FromEnv(context.Background(), getenv, nil)
			got := o.Policy.ReplayWindow
			if env == orders.EnvRetentionHours {
				got = o.Policy.RecordRetention
			}
			if err != nil || got != want {
				t.Errorf("%s=%s: %v, %v; want %v", env, v, got, err, want)
			}
		}
	}
}

// Every answer of the function says nosniff, its own JSON included, so
// that what the local server shows is what API Gateway delivers.
func TestHandlerSaysNosniff(t *testing.T) {
	h := newHandler(t)
	create := event("POST", "POST /orders", "/orders", orderBody)
	for _, tc := range []struct {
		what   string
		ev     events.APIGatewayV2HTTPRequest
		status int
	}{
		{"created", create, 201},
		{"replayed", create, 201},
		{"unknown order", event("GET", "GET /orders/{id}", "/orders/x", ""), 404},
	} {
		resp, err := h(context.Background(), tc.ev)
		if err != nil || resp.StatusCode != tc.status || resp.Headers["X-Content-Type-Options"] != "nosniff" {
			t.Errorf("%s: %d %v %v, want %d with X-Content-Type-Options: nosniff", tc.what, resp.StatusCode, err, resp.Headers, tc.status)
		}
	}
}
