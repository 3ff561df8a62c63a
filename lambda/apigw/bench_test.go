package apigw_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// BenchmarkV2 measures a guarded HTTP API request over the in-memory store:
// a fresh execution (new key each time) and a replay, for response bodies
// of 200 B, 4 KB and 64 KB.
func BenchmarkV2(b *testing.B) {
	for _, size := range []int{200, 4 << 10, 64 << 10} {
		body := testkit.OrderBody(size)
		resp := events.APIGatewayV2HTTPResponse{StatusCode: 201,
			Headers: map[string]string{"Content-Type": "application/json", "Location": "/orders/ord_1", "X-Request-Id": "r"}, Body: body}
		next := func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			return resp, nil
		}
		name := strconv.Itoa(size) + "B"
		b.Run("fresh/"+name, func(b *testing.B) {
			e := newEnv(b, nil)
			h := apigw.WrapV2(e.g, jwt, next)
			ev := testkit.Load[events.APIGatewayV2HTTPRequest](b, "v2-jwt.json")
			keys := testkit.Keys(b.N)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ev.Headers["idempotency-key"] = keys[i]
				if r, err := h(ctx, ev); err != nil || r.StatusCode != 201 {
					b.Fatal(r.StatusCode, err)
				}
			}
		})
		b.Run("replay/"+name, func(b *testing.B) {
			e := newEnv(b, nil)
			h := apigw.WrapV2(e.g, jwt, next)
			ev := testkit.Load[events.APIGatewayV2HTTPRequest](b, "v2-jwt.json")
			ctx := context.Background()
			h(ctx, ev)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if r, err := h(ctx, ev); err != nil || r.Headers["Idempotent-Replayed"] != "true" {
					b.Fatal(r.StatusCode, err)
				}
			}
		})
	}
}
