package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// TestValidationIsNotTransient: DynamoDB refuses a partition key over 2048
// bytes with a ValidationException. Sent again it is refused again, so the
// store reports ErrRecordInvalid, never ErrStoreUnavailable (a 503 telling
// the client to retry with the same key).
func TestValidationIsNotTransient(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	now := time.Now()
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k"}
	rec := &idemkit.Record{ID: "o1|" + strings.Repeat("x", 3000), Scope: sc, State: idemkit.StateInFlight, Owner: "a", Version: "v1",
		LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour), CreatedAt: now}
	_, err := s.Create(context.Background(), rec)
	if !errors.Is(err, idemkit.ErrRecordInvalid) || errors.Is(err, idemkit.ErrStoreUnavailable) {
		t.Fatalf("Create with a 3 KB partition key: %v, want ErrRecordInvalid and not ErrStoreUnavailable", err)
	}
}

// TestLongScopeThroughAdapter: an HTTP API request whose tenant, route and
// key make a scope over DynamoDB's key limit runs once and is replayed,
// instead of a permanent 503 store-unavailable.
func TestLongScopeThroughAdapter(t *testing.T) {
	s, _, _ := newStore(t, dynamo.Options{})
	var runs atomic.Int32
	h := apigw.WrapV2(guard(t, s), apigw.Config{Tenant: apigw.JWTClaim("")},
		func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			runs.Add(1)
			return events.APIGatewayV2HTTPResponse{StatusCode: 201, Body: `{"id":"ord_1"}`}, nil
		})
	var ev events.APIGatewayV2HTTPRequest
	ev.RequestContext.HTTP.Method = "POST"
	ev.RawPath = "/orders/" + strings.Repeat("segment/", 200)
	ev.RouteKey = "POST " + ev.RawPath
	ev.Headers = map[string]string{"idempotency-key": strings.Repeat("k", 255), "content-type": "application/json"}
	ev.Body = `{"amount":1}`
	ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": strings.Repeat("u", 900)}},
	}
	for i := 0; i < 2; i++ {
		r, err := h(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode != 201 || (r.Headers["Idempotent-Replayed"] == "true") != (i == 1) {
			b, _ := json.Marshal(r)
			t.Fatalf("call %d: %s", i, b)
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("ran %d times", runs.Load())
	}
}
