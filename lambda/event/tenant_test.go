package event_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/alb"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/lambda/batch"
	"github.com/idemkit/idemkit/lambda/event"
)

// TestInvocationTenant: with every adapter, InvocationTenant scopes a key
// by the invocation's tenant id (Lambda's tenant isolation mode): the same
// key under the same tenant id is replayed, under another one it runs
// apart, and an invocation without a tenant id fails closed, running
// nothing.
func TestInvocationTenant(t *testing.T) {
	type invoke func(ctx context.Context, g *idemkit.Guard, runs *int, key string)
	post := func(key string) map[string]string { return map[string]string{"Idempotency-Key": key} }
	for _, tc := range []struct {
		name   string
		invoke invoke
	}{
		{"apigw", func(ctx context.Context, g *idemkit.Guard, runs *int, key string) {
			h := apigw.WrapV1(g, apigw.Config{Tenant: apigw.InvocationTenant()}, func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				*runs++
				return events.APIGatewayProxyResponse{StatusCode: 201}, nil
			})
			_, _ = h(ctx, events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: "/orders", Resource: "/orders", Headers: post(key)})
		}},
		{"alb", func(ctx context.Context, g *idemkit.Guard, runs *int, key string) {
			h := alb.Wrap(g, alb.Config{Tenant: alb.InvocationTenant()}, func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
				*runs++
				return events.ALBTargetGroupResponse{StatusCode: 201}, nil
			})
			_, _ = h(ctx, events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: "/orders", Headers: post(key)})
		}},
		{"event", func(ctx context.Context, g *idemkit.Guard, runs *int, key string) {
			h := event.Wrap(g, event.Config[transfer]{
				Key:    func(t transfer) (string, error) { return t.TransferID, nil },
				Tenant: event.InvocationTenant[transfer](),
			}, func(context.Context, transfer) (receipt, error) {
				*runs++
				return receipt{}, nil
			})
			_, _ = h(ctx, transfer{TransferID: key})
		}},
		{"batch", func(ctx context.Context, g *idemkit.Guard, runs *int, key string) {
			h := batch.SQS(g, batch.SQSConfig{Config: event.Config[events.SQSMessage]{Operation: "ship", Tenant: event.InvocationTenant[events.SQSMessage]()}},
				func(context.Context, events.SQSMessage) error {
					*runs++
					return nil
				})
			_, _ = h(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: key, Body: "{}", EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:q"}}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := testguard.Mem(t)
			tenant := func(id string) context.Context {
				return lambdacontext.NewContext(t.Context(), &lambdacontext.LambdaContext{AwsRequestID: "req", TenantID: id})
			}
			runs := 0
			for _, step := range []struct {
				name string
				ctx  context.Context
				key  string
				runs int // after the step
			}{
				{"first of tenant blue", tenant("blue"), "k1", 1},
				{"retry of tenant blue", tenant("blue"), "k1", 1},
				{"same key, tenant green", tenant("green"), "k1", 2},
				{"tenant id that differs in case", tenant("Blue"), "k1", 3},
				{"no tenant id", tenant(""), "k2", 3},
				{"not a Lambda invocation", t.Context(), "k3", 3},
			} {
				tc.invoke(step.ctx, g, &runs, step.key)
				if runs != step.runs {
					t.Fatalf("%s: %d runs, want %d", step.name, runs, step.runs)
				}
			}
		})
	}
}
