package alb_test

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/alb"
)

// FuzzALB: an ALB event in either target group mode (single-value headers,
// multi-value headers, or both with values that disagree), with any
// method, key, content type, body and base64 flag, never panics, never
// answers 500, answers every refusal with a problem body, and runs the
// handler at most once per guarded request.
func FuzzALB(f *testing.F) {
	multi := load(f, "alb-multivalue.json")
	single := load(f, "alb-headers.json")
	f.Add(true, "POST", "idempotency-key", "k-1", "", "application/json", `{"sku":"a"}`, false)
	f.Add(false, "POST", "Idempotency-Key", "k-1", "k-2", "application/json", `{"sku":"a"}`, false)
	f.Add(true, "POST", "IDEMPOTENCY-KEY", `"a", "b"`, "", "application/json", `{"a":1,"a":2}`, false)
	f.Add(false, "PATCH", "idempotency-key", "k\x00", "", "", "not base64", true)
	f.Add(true, "post", "idempotency-key", "k", "", "application/x-www-form-urlencoded", "a=%zz", false)
	f.Add(false, "GET", "idempotency-key", "k", "", "text/plain", "\xff\xfe", false)
	f.Add(true, "", "idempotency-key", "k", "", "application/json", `{}`, false)
	f.Add(false, "POST", "idempotency-key", "", "k", "application/json", `[[[[`, false)
	f.Fuzz(func(t *testing.T, multiValue bool, method, name, key, other, contentType, body string, b64 bool) {
		o := &orders{status: 201}
		h := alb.Wrap(testguard.Mem(t), alb.Config{Tenant: alb.OIDCIdentity()}, o.handle)
		var ev events.ALBTargetGroupRequest
		if multiValue {
			ev = multi
			ev.MultiValueHeaders = map[string][]string{"content-type": {contentType}, name: {key}, "x-amzn-oidc-identity": {"tenant-a"}}
			if other != "" {
				// Both forms present, disagreeing: ALB sends one, a
				// forged or hand-built event may send both.
				ev.Headers = map[string]string{name: other}
			}
		} else {
			ev = single
			ev.Headers = map[string]string{"content-type": contentType, name: key, "x-amzn-oidc-identity": "tenant-a"}
			if other != "" {
				ev.MultiValueHeaders = map[string][]string{name: {other, key}}
			}
		}
		ev.HTTPMethod = method
		ev.Body, ev.IsBase64Encoded = body, b64
		for range 2 {
			r := testkit.Call(t, h, ev)
			switch {
			case r.StatusCode == 201, r.StatusCode == 200:
			case r.StatusCode == 500 && method == "":
				// An event without a method is of another shape: refused.
			case r.StatusCode >= 400 && r.StatusCode < 500:
				var p struct {
					Type   string `json:"type"`
					Status int    `json:"status"`
				}
				ct := r.Headers["Content-Type"]
				if v := r.MultiValueHeaders["Content-Type"]; len(v) > 0 {
					ct = v[0]
				}
				if ct != "application/problem+json" || json.Unmarshal([]byte(r.Body), &p) != nil || p.Status != r.StatusCode || p.Type == "" {
					t.Fatalf("refusal %d without a problem body: %v %v %q", r.StatusCode, r.Headers, r.MultiValueHeaders, r.Body)
				}
			default:
				t.Fatalf("status %d: %s", r.StatusCode, r.Body)
			}
		}
		if o.runs > 2 || method == "" && o.runs != 0 {
			t.Fatalf("%q ran %d times", method, o.runs)
		}
	})
}
