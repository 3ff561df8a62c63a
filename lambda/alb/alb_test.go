package alb_test

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/alb"
)

//go:embed testdata/*.json
var testdata embed.FS

func load(t testing.TB, name string) events.ALBTargetGroupRequest {
	t.Helper()
	b, err := testdata.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.ALBTargetGroupRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

type orders struct {
	runs   int
	status int
}

func (o *orders) handle(_ context.Context, ev events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
	o.runs++
	tenant := ""
	for k, v := range ev.Headers {
		if k == "x-amzn-oidc-identity" {
			tenant = v
		}
	}
	for k, v := range ev.MultiValueHeaders {
		if k == "x-amzn-oidc-identity" {
			tenant = v[0]
		}
	}
	h := map[string]string{"Content-Type": "application/json", "Set-Cookie": "AWSALB=abc", "Location": fmt.Sprintf("/orders/ord_%d", o.runs)}
	r := events.ALBTargetGroupResponse{StatusCode: o.status, StatusDescription: fmt.Sprint(o.status), Body: fmt.Sprintf(`{"id":"ord_%d","tenant":%q}`, o.runs, tenant)}
	if ev.MultiValueHeaders != nil {
		r.MultiValueHeaders = map[string][]string{}
		for k, v := range h {
			r.MultiValueHeaders[k] = []string{v}
		}
	} else {
		r.Headers = h
	}
	return r, nil
}

func TestALB(t *testing.T) {
	for _, tc := range []struct {
		name        string
		file        string
		mod         func(*events.ALBTargetGroupRequest)
		cfg         alb.Config
		status      int
		wantRuns    int
		wantStatus  int
		wantProblem string
	}{
		{name: "multi-value target group replays", file: "alb-multivalue.json", cfg: alb.Config{Tenant: alb.OIDCIdentity()}, status: 201, wantRuns: 1, wantStatus: 201},
		{name: "single-value target group replays", file: "alb-headers.json", cfg: alb.Config{Tenant: alb.OIDCIdentity()}, status: 201, wantRuns: 1, wantStatus: 201},
		{name: "402 decline replayed", file: "alb-headers.json", cfg: alb.Config{Tenant: alb.OIDCIdentity()}, status: 402, wantRuns: 1, wantStatus: 402},
		{name: "503 not replayed", file: "alb-multivalue.json", cfg: alb.Config{Tenant: alb.OIDCIdentity()}, status: 503, wantRuns: 2, wantStatus: 503},
		{name: "GET passes through", file: "alb-multivalue.json", cfg: alb.Config{Tenant: alb.OIDCIdentity()}, status: 200, wantRuns: 2, wantStatus: 200,
			mod: func(ev *events.ALBTargetGroupRequest) { ev.HTTPMethod = "GET" }},
		{name: "no authenticate action: tenant missing", file: "alb-multivalue.json", cfg: alb.Config{Tenant: alb.OIDCIdentity()}, status: 201,
			mod:        func(ev *events.ALBTargetGroupRequest) { delete(ev.MultiValueHeaders, "x-amzn-oidc-identity") },
			wantStatus: 500, wantProblem: "tenant-missing"},
		{name: "single tenant", file: "alb-headers.json", cfg: alb.Config{Tenant: alb.SingleTenant("internal")}, status: 201, wantRuns: 1, wantStatus: 201},
		{name: "two different key values", file: "alb-multivalue.json", cfg: alb.Config{Tenant: alb.OIDCIdentity()}, status: 201,
			mod: func(ev *events.ALBTargetGroupRequest) {
				ev.MultiValueHeaders["idempotency-key"] = []string{"k1", "k2"}
			},
			wantStatus: 400, wantProblem: "key-invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &orders{status: tc.status}
			h := alb.Wrap(testguard.Mem(t), tc.cfg, o.handle)
			ev := load(t, tc.file)
			if tc.mod != nil {
				tc.mod(&ev)
			}
			first := testkit.Call(t, h, ev)
			second := testkit.Call(t, h, ev)
			multi := ev.MultiValueHeaders != nil
			get := func(r events.ALBTargetGroupResponse, name string) string {
				if multi {
					if r.Headers != nil {
						t.Errorf("headers set for a multi-value target group: %v", r.Headers)
					}
					if v := r.MultiValueHeaders[name]; len(v) > 0 {
						return v[0]
					}
					return ""
				}
				if r.MultiValueHeaders != nil {
					t.Errorf("multiValueHeaders set for a single-value target group: %v", r.MultiValueHeaders)
				}
				return r.Headers[name]
			}
			if second.StatusCode != tc.wantStatus || o.runs != tc.wantRuns {
				t.Fatalf("second %d after %d runs, want %d after %d: %s", second.StatusCode, o.runs, tc.wantStatus, tc.wantRuns, second.Body)
			}
			if tc.wantProblem != "" {
				var p struct{ Type string }
				json.Unmarshal([]byte(second.Body), &p)
				if get(second, "Content-Type") != "application/problem+json" || get(second, "X-Content-Type-Options") != "nosniff" ||
					p.Type != "https://idemkit.dev/problems/"+tc.wantProblem {
					t.Errorf("problem %s %s", get(second, "Content-Type"), second.Body)
				}
				return
			}
			wantReplay := tc.wantRuns == 1
			if got := get(second, "Idempotent-Replayed") == "true"; got != wantReplay {
				t.Errorf("replayed = %v, want %v", got, wantReplay)
			}
			if wantReplay {
				if second.Body != first.Body || get(second, "Set-Cookie") != "" || get(second, "Location") != "/orders/ord_1" || second.StatusDescription == "" {
					t.Errorf("replay %+v", second)
				}
			}
		})
	}
}

// TestALBQuotedKeyAndBase64Body: the same key quoted, the same body base64
// encoded: one intent, one record.
func TestALBQuotedKeyAndBase64Body(t *testing.T) {
	o := &orders{status: 201}
	h := alb.Wrap(testguard.Mem(t), alb.Config{Tenant: alb.OIDCIdentity()}, o.handle)
	first, _ := h(context.Background(), load(t, "alb-multivalue.json"))
	second, _ := h(context.Background(), load(t, "alb-headers.json"))
	if o.runs != 1 || second.Body != first.Body || second.Headers["Idempotent-Replayed"] != "true" {
		t.Errorf("runs %d, second %+v", o.runs, second)
	}
}

// TestALBTenants: two tenants, one key: two executions, never crossed.
func TestALBTenants(t *testing.T) {
	o := &orders{status: 201}
	h := alb.Wrap(testguard.Mem(t), alb.Config{Tenant: alb.OIDCIdentity()}, o.handle)
	a := load(t, "alb-headers.json")
	b := load(t, "alb-headers.json")
	b.Headers["x-amzn-oidc-identity"] = "tenant-b"
	ra, _ := h(context.Background(), a)
	rb, _ := h(context.Background(), b)
	rb2, _ := h(context.Background(), b)
	if o.runs != 2 || ra.Body == rb.Body || rb2.Body != rb.Body {
		t.Errorf("runs %d: a=%s b=%s b2=%s", o.runs, ra.Body, rb.Body, rb2.Body)
	}
}

// TestALBQuery: the query string is part of the fingerprint, for single-
// and multi-value target groups alike.
func TestALBQuery(t *testing.T) {
	for _, tc := range []struct {
		file string
		mod  func(*events.ALBTargetGroupRequest)
	}{
		{"alb-headers.json", func(ev *events.ALBTargetGroupRequest) {
			ev.QueryStringParameters = map[string]string{"dryRun": "true"}
		}},
		{"alb-multivalue.json", func(ev *events.ALBTargetGroupRequest) {
			ev.MultiValueQueryStringParameters = map[string][]string{"dryRun": {"true"}}
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			o := &orders{status: 201}
			h := alb.Wrap(testguard.Mem(t), alb.Config{Tenant: alb.OIDCIdentity()}, o.handle)
			ev := load(t, tc.file)
			if r, err := h(context.Background(), ev); err != nil || r.StatusCode != 201 {
				t.Fatalf("first: %d %v", r.StatusCode, err)
			}
			tc.mod(&ev)
			r := testkit.Call(t, h, ev)
			if r.StatusCode != 422 || !strings.Contains(r.Body, "fingerprint-mismatch") || o.runs != 1 {
				t.Errorf("got %d %s after %d runs, want 422 fingerprint-mismatch", r.StatusCode, r.Body, o.runs)
			}
		})
	}
}

// TestALBQueryDecoded: the load balancer passes query parameters as sent,
// percent-encoded, where API Gateway decodes them; the fingerprint reads
// them decoded, so a retry that encodes the same value another way
// (a%20b, a+b, %61%20b) is a replay, not a false 422, while another value
// (a%2Bb is "a+b") is still a mismatch, in both header modes.
func TestALBQueryDecoded(t *testing.T) {
	for _, file := range []string{"alb-headers.json", "alb-multivalue.json"} {
		set := func(ev *events.ALBTargetGroupRequest, name, value string) {
			if ev.MultiValueHeaders != nil {
				ev.MultiValueQueryStringParameters = map[string][]string{name: {value}}
			} else {
				ev.QueryStringParameters = map[string]string{name: value}
			}
		}
		for _, tc := range []struct {
			name, value string
			status      int
		}{
			{"note", "a+b", 201},
			{"note", "%61%20b", 201},
			{"%6Eote", "a b", 201},
			{"note", "a%2Bb", 422},
			{"note", "a%2520b", 422},
			{"note+", "a b", 422},
		} {
			t.Run(file+"/"+tc.name+"="+tc.value, func(t *testing.T) {
				o := &orders{status: 201}
				h := alb.Wrap(testguard.Mem(t), alb.Config{Tenant: alb.OIDCIdentity()}, o.handle)
				ev := load(t, file)
				set(&ev, "note", "a%20b")
				if r, err := h(context.Background(), ev); err != nil || r.StatusCode != 201 {
					t.Fatalf("first: %d %v", r.StatusCode, err)
				}
				set(&ev, tc.name, tc.value)
				r := testkit.Call(t, h, ev)
				if r.StatusCode != tc.status || o.runs != 1 {
					t.Errorf("retry: %d %s after %d runs, want %d", r.StatusCode, r.Body, o.runs, tc.status)
				}
			})
		}
	}
}

// TestALBQueryInvalidEscape: a parameter with an invalid escape matches
// only the very same parameters, never a valid escape of its text (which
// a handler decodes to "x%zz").
func TestALBQueryInvalidEscape(t *testing.T) {
	for _, file := range []string{"alb-headers.json", "alb-multivalue.json"} {
		for _, tc := range []struct {
			value  string
			status int
		}{{"x%zz", 201}, {"x%25zz", 422}} {
			t.Run(file+"/"+tc.value, func(t *testing.T) {
				o := &orders{status: 201}
				h := alb.Wrap(testguard.Mem(t), alb.Config{Tenant: alb.OIDCIdentity()}, o.handle)
				ev := load(t, file)
				set := func(v string) {
					if ev.MultiValueHeaders != nil {
						ev.MultiValueQueryStringParameters = map[string][]string{"note": {v}}
					} else {
						ev.QueryStringParameters = map[string]string{"note": v}
					}
				}
				set("x%zz")
				if r, err := h(context.Background(), ev); err != nil || r.StatusCode != 201 {
					t.Fatalf("first: %d %v", r.StatusCode, err)
				}
				set(tc.value)
				r, err := h(context.Background(), ev)
				if err != nil || r.StatusCode != tc.status || o.runs != 1 {
					t.Errorf("retry: %d %s %v after %d runs, want %d", r.StatusCode, r.Body, err, o.runs, tc.status)
				}
			})
		}
	}
}
