package alb_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit/lambda/alb"
)

// TestOIDCIdentity: the tenant is the one identity the load balancer's
// authenticate action set. A request carrying several (a client that
// added its own beside the load balancer's, or two spellings of the name)
// names no tenant and fails closed, rather than trusting whichever came
// first.
func TestOIDCIdentity(t *testing.T) {
	for _, tc := range []struct {
		name   string
		single map[string]string
		multi  map[string][]string
		want   string
	}{
		{"single-value", map[string]string{"x-amzn-oidc-identity": "user-1"}, nil, "user-1"},
		{"multi-value", nil, map[string][]string{"x-amzn-oidc-identity": {"user-1"}}, "user-1"},
		{"any case", nil, map[string][]string{"X-Amzn-Oidc-Identity": {"user-1"}}, "user-1"},
		{"none", map[string]string{"x-forwarded-for": "10.0.0.1"}, nil, ""},
		{"two lines", nil, map[string][]string{"x-amzn-oidc-identity": {"user-1", "user-2"}}, ""},
		{"two lines, one value", nil, map[string][]string{"x-amzn-oidc-identity": {"user-1", "user-1"}}, ""},
		{"two spellings", map[string]string{"x-amzn-oidc-identity": "user-1", "X-Amzn-Oidc-Identity": "user-2"}, nil, ""},
	} {
		got, err := alb.OIDCIdentity()(context.Background(), &events.ALBTargetGroupRequest{Headers: tc.single, MultiValueHeaders: tc.multi})
		if got != tc.want || err != nil {
			t.Errorf("%s: OIDCIdentity = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}
