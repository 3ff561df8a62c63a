package alb_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/alb"
)

// TestALBReplayAsDelivered: a replay follows the target group's header
// mode, keeps only the headers the load balancer delivered (it reads
// multiValueHeaders or headers, by that mode), every value of an
// allow-listed multi-value header, never the cookies, and replays binary
// and empty bodies, 204 and a status description, as they were.
func TestALBReplayAsDelivered(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		resp       events.ALBTargetGroupResponse
		want       string // the replay's headers, without Idempotent-Replayed
	}{
		{"multi-value: several values stay several", "alb-multivalue.json", events.ALBTargetGroupResponse{StatusCode: 201,
			MultiValueHeaders: map[string][]string{"Content-Type": {"application/json"}, "Link": {"</orders/ord_1>; rel=self", "</customers/cus_42>; rel=customer"},
				"Set-Cookie": {"AWSALB=abc", "s=1"}},
			Body: `{"id":"ord_1"}`},
			"map[Content-Type:[application/json] Link:[</orders/ord_1>; rel=self </customers/cus_42>; rel=customer]]"},
		{"single-value", "alb-headers.json", events.ALBTargetGroupResponse{StatusCode: 201,
			Headers: map[string]string{"content-type": "application/json", "link": "</orders/ord_1>; rel=self", "set-cookie": "AWSALB=abc"},
			Body:    `{"id":"ord_1"}`},
			"map[Content-Type:application/json Link:</orders/ord_1>; rel=self]"},
		// The load balancer reads one field, by the target group's mode, and
		// ignores the other: what it never delivered is never replayed.
		{"multi-value: headers are not delivered, not replayed", "alb-multivalue.json", events.ALBTargetGroupResponse{StatusCode: 201,
			Headers:           map[string]string{"Location": "/never-sent", "Content-Type": "text/plain"},
			MultiValueHeaders: map[string][]string{"Content-Type": {"application/json"}},
			Body:              `{"id":"ord_1"}`},
			"map[Content-Type:[application/json]]"},
		{"single-value: multiValueHeaders are not delivered, not replayed", "alb-headers.json", events.ALBTargetGroupResponse{StatusCode: 201,
			Headers:           map[string]string{"Content-Type": "application/json"},
			MultiValueHeaders: map[string][]string{"Content-Type": {"text/plain"}, "Location": {"/never-sent"}},
			Body:              `{"id":"ord_1"}`},
			"map[Content-Type:application/json]"},
		{"multi-value: binary body", "alb-multivalue.json", events.ALBTargetGroupResponse{StatusCode: 200,
			MultiValueHeaders: map[string][]string{"Content-Type": {"application/pdf"}}, Body: "JVBERi0xLjcKJcfsj6IK", IsBase64Encoded: true},
			"map[Content-Type:[application/pdf]]"},
		{"single-value: 204", "alb-headers.json", events.ALBTargetGroupResponse{StatusCode: 204}, "map[]"},
		{"multi-value: 204", "alb-multivalue.json", events.ALBTargetGroupResponse{StatusCode: 204}, "map[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := 0
			h := alb.Wrap(testguard.Mem(t), alb.Config{Tenant: alb.OIDCIdentity(), Settings: httpconfig.Settings{ReplayHeaders: []string{"Link"}}},
				func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
					runs++
					r := tc.resp
					r.StatusDescription = fmt.Sprintf("%d Whatever", r.StatusCode)
					return r, nil
				})
			ev := load(t, tc.file)
			if _, err := h(context.Background(), ev); err != nil {
				t.Fatal(err)
			}
			r, err := h(context.Background(), ev)
			if err != nil || runs != 1 {
				t.Fatalf("%d runs, %v", runs, err)
			}
			var got string
			if ev.MultiValueHeaders != nil {
				if r.Headers != nil || r.MultiValueHeaders["Idempotent-Replayed"][0] != "true" {
					t.Fatalf("multi-value replay %+v", r)
				}
				delete(r.MultiValueHeaders, "Idempotent-Replayed")
				got = fmt.Sprint(r.MultiValueHeaders)
			} else {
				if r.MultiValueHeaders != nil || r.Headers["Idempotent-Replayed"] != "true" {
					t.Fatalf("single-value replay %+v", r)
				}
				delete(r.Headers, "Idempotent-Replayed")
				got = fmt.Sprint(r.Headers)
			}
			if got != tc.want {
				t.Errorf("replayed headers %s, want %s", got, tc.want)
			}
			if r.StatusCode != tc.resp.StatusCode || r.Body != tc.resp.Body || r.IsBase64Encoded != tc.resp.IsBase64Encoded ||
				r.StatusDescription != fmt.Sprint(tc.resp.StatusCode, " ", statusText[tc.resp.StatusCode]) {
				t.Errorf("replay %+v, want %+v", r, tc.resp)
			}
		})
	}
}

var statusText = map[int]string{200: "OK", 201: "Created", 204: "No Content"}
