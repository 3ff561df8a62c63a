package apigw_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// TestV2LargeBodyMemory: a guarded request with a 6 MB JSON body of many
// small values (Lambda's payload limit) allocates less than the body's
// size in the wrapper: the body string is fingerprinted in place and the
// canonicalizer keeps no node per value. (It allocated about 150x before.)
func TestV2LargeBodyMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds large bodies")
	}
	for _, tc := range []struct{ name, body string }{
		{"small ints", "[" + strings.Repeat("1,", largeBody/2-1) + "1]"},
		{"objects", "[" + strings.Repeat(`{"b":1,"a":2},`, largeBody/14-1) + `{"b":1,"a":2}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			resp := events.APIGatewayV2HTTPResponse{StatusCode: 201, Body: `{"id":"ord_1"}`}
			h := apigw.WrapV2(e.g, jwt, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				return resp, nil
			})
			ev := testkit.Load[events.APIGatewayV2HTTPRequest](t, "v2-jwt.json")
			ev.Body = tc.body
			runtime.GC()
			var r events.APIGatewayV2HTTPResponse
			var err error
			_, alloc := testkit.Allocated(func() { r, err = h(context.Background(), ev) })
			if err != nil || r.StatusCode != 201 {
				t.Fatalf("%d %v %s", r.StatusCode, err, r.Body)
			}
			t.Logf("%d-byte body: %d bytes allocated (%.3fx)", len(tc.body), alloc, float64(alloc)/float64(len(tc.body)))
			if alloc > uint64(len(tc.body)) {
				t.Errorf("allocated %d bytes for a %d-byte body", alloc, len(tc.body))
			}
		})
	}
}
