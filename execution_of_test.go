package idemkit_test

import (
	"context"
	"testing"

	"github.com/idemkit/idemkit"
)

// TestExecutionIDOf: ExecutionIDOf gives, from the scope, resource and
// secret alone, the identity the guarded handler of that request got, so
// an operator's tool can map a record to its handler's writes.
func TestExecutionIDOf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		secret   []byte
		resource string
	}{
		{"no secret, no resource", nil, ""},
		{"no secret", nil, "r1:sha256:0011"},
		{"secret", []byte("0123456789abcdef"), "r1:sha256:0011"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(c *idemkit.Config) { c.ExecutionSecret = tc.secret })
			r := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k"}, Fingerprint: "v2:sha256:aa", Resource: tc.resource}
			var got string
			f.do(t, r, func(ctx context.Context) (*idemkit.Snapshot, error) {
				got = execID(ctx)
				return &idemkit.Snapshot{Status: 201}, nil
			})
			if want := idemkit.ExecutionIDOf(tc.secret, r.Scope, tc.resource); got == "" || got != want {
				t.Errorf("the handler got %q, ExecutionIDOf gives %q", got, want)
			}
			if other := idemkit.ExecutionIDOf(tc.secret, r.Scope, tc.resource+"x"); other == got {
				t.Errorf("another resource gives the same identity %q", got)
			}
		})
	}
}
