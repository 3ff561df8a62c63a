package adapter_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/alb"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// pathFronts returns, per front, a function that sends a guarded POST to
// path (as the front's event carries it) with key "k" over one guard, and
// returns whether the handler ran.
func pathFronts(t *testing.T) map[string]func(path string) bool {
	cfg := apigw.Config{Tenant: apigw.SingleTenant("t")}
	ran := false
	v1 := apigw.WrapV1(testguard.Mem(t), cfg, func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		ran = true
		return events.APIGatewayProxyResponse{StatusCode: 201}, nil
	})
	v2 := apigw.WrapV2(testguard.Mem(t), cfg, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		ran = true
		return events.APIGatewayV2HTTPResponse{StatusCode: 201}, nil
	})
	url := apigw.WrapFunctionURL(testguard.Mem(t), cfg, func(context.Context, events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		ran = true
		return events.LambdaFunctionURLResponse{StatusCode: 201}, nil
	})
	lb := alb.Wrap(testguard.Mem(t), alb.Config{Tenant: alb.SingleTenant("t")}, func(context.Context, events.ALBTargetGroupRequest) (events.ALBTargetGroupResponse, error) {
		ran = true
		return events.ALBTargetGroupResponse{StatusCode: 201}, nil
	})
	mw := httpmw.New(testguard.Mem(t), httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return "t", nil }})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran = true
		w.WriteHeader(201)
	}))
	run := func(f func() int) bool {
		ran = false
		if st := f(); st != 201 {
			t.Fatalf("status %d", st)
		}
		return ran
	}
	return map[string]func(string) bool{
		"v1": func(p string) bool {
			return run(func() int {
				r, _ := v1(context.Background(), events.APIGatewayProxyRequest{HTTPMethod: "POST", Path: p, Resource: "/{proxy+}",
					Headers: map[string]string{"Idempotency-Key": "k"}})
				return r.StatusCode
			})
		},
		"v2": func(p string) bool {
			ev := v2Post("$default", p, "", map[string]string{"idempotency-key": "k"}, "")
			return run(func() int { r, _ := v2(context.Background(), ev); return r.StatusCode })
		},
		"url": func(p string) bool {
			ev := urlPost(p, "", map[string]string{"idempotency-key": "k"}, "")
			return run(func() int { r, _ := url(context.Background(), ev); return r.StatusCode })
		},
		"alb": func(p string) bool {
			return run(func() int {
				r, _ := lb(context.Background(), events.ALBTargetGroupRequest{HTTPMethod: "POST", Path: p,
					Headers: map[string]string{"idempotency-key": "k"}})
				return r.StatusCode
			})
		},
		"httpmw": func(p string) bool {
			return run(func() int {
				r := httptest.NewRequest(http.MethodPost, p, nil)
				r.Header.Set("Idempotency-Key", "k")
				w := httptest.NewRecorder()
				mw.ServeHTTP(w, r)
				return w.Code
			})
		},
	}
}

// TestPathSpellingsOneOperation: a front that delivers the path as sent
// (REST API, function URLs, ALB, net/http) names the operation by its
// normalized form (RFC 3986 6.2.2: escapes of unreserved characters
// decoded, hex digits upper case), so a retry whose path a client or proxy
// encoded another way is replayed. An escaped reserved character (%2F)
// stays another resource. HTTP API delivers the path decoded already: it
// is taken as it is, a literal %41 in it never made an A.
func TestPathSpellingsOneOperation(t *testing.T) {
	for _, tc := range []struct {
		first, retry string
		same         map[string]bool // per front; absent: the value of "*"
	}{
		{"/orders/%7Eann/%31", "/orders/~ann/1", map[string]bool{"*": true, "v2": false}},
		{"/orders/~ann/1", "/orders/%7eann/%31", map[string]bool{"*": true, "v2": false}},
		{"/orders/a%2fb", "/orders/a%2Fb", map[string]bool{"*": true, "v2": false}},
		{"/orders/a%2Fb", "/orders/a/b", map[string]bool{"*": false}},
		{"/orders/%C3%A9", "/orders/%c3%a9", map[string]bool{"*": true, "v2": false}},
		{"/orders/1", "/orders/1/", map[string]bool{"*": false}},
		{"/orders/1", "/Orders/1", map[string]bool{"*": false}},
		// What HTTP API would deliver for /a%2541 (decoded once) and /aA.
		{"/a%41", "/aA", map[string]bool{"*": true, "v2": false}},
	} {
		for name, send := range pathFronts(t) {
			t.Run(name+" "+tc.first+" "+tc.retry, func(t *testing.T) {
				want, ok := tc.same[name]
				if !ok {
					want = tc.same["*"]
				}
				if !send(tc.first) {
					t.Fatal("first did not run")
				}
				if ran := send(tc.retry); ran == want {
					t.Errorf("retry ran=%v, want one operation=%v", ran, want)
				}
			})
		}
	}
}
