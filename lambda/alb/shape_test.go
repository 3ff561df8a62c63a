package alb_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/eventlog"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/alb"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
)

// TestWrongEventShape: an event without an HTTP method (an HTTP API event,
// payload format 2.0, given to the ALB wrapper) is refused closed with a
// 500 guard-failure problem, reported as ErrNoMethod, never run unguarded.
func TestWrongEventShape(t *testing.T) {
	obs := &eventlog.Log{}
	g := testguard.New(t, idemkit.Config{Store: memstore.New(), Observer: obs})
	o := &orders{status: 201}
	h := alb.Wrap(g, alb.Config{Tenant: alb.SingleTenant("internal")}, o.handle)
	var ev events.ALBTargetGroupRequest
	if err := json.Unmarshal([]byte(`{"version":"2.0","routeKey":"POST /orders","rawPath":"/orders",
		"headers":{"idempotency-key":"k-1","content-type":"application/json"},
		"requestContext":{"http":{"method":"POST","path":"/orders"}},"body":"{\"amount\":1}"}`), &ev); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		r := testkit.Call(t, h, ev)
		var p struct{ Type string }
		json.Unmarshal([]byte(r.Body), &p)
		if r.StatusCode != 500 || r.Headers["Content-Type"] != "application/problem+json" || p.Type != "https://idemkit.dev/problems/guard-failure" {
			t.Errorf("response %+v, want a 500 guard-failure problem", r)
		}
	}
	if o.runs != 0 {
		t.Errorf("handler ran %d times", o.runs)
	}
	if evs := obs.Events(); len(evs) != 2 || evs[0].Kind != observe.EventRefused || !errors.Is(evs[0].Err, alb.ErrNoMethod) {
		t.Errorf("events %+v, want two refusals with ErrNoMethod", evs)
	}
}
