package samlocal_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit/samlocal"
)

func TestAuthorizer(t *testing.T) {
	is, err := samlocal.NewIssuer("https://issuer.test", "api")
	if err != nil {
		t.Fatal(err)
	}
	other, err := samlocal.NewIssuer("https://issuer.test", "api")
	if err != nil {
		t.Fatal(err)
	}
	a := is.Authorizer()
	valid := is.Token("alice", time.Hour, map[string]any{"groups": []any{"a", "b"}, "n": 7})
	parts := strings.Split(valid, ".")
	for _, tc := range []struct {
		name, token string
		ok          bool
	}{
		{"valid", valid, true},
		{"audience in a list", is.Token("alice", time.Hour, map[string]any{"aud": []any{"x", "api"}}), true},
		{"client_id when no aud", is.Token("alice", time.Hour, map[string]any{"aud": nil, "client_id": "api"}), true},
		{"other key", other.Token("alice", time.Hour, nil), false},
		{"expired", is.Token("alice", -time.Second, nil), false},
		{"no exp", is.Token("alice", time.Hour, map[string]any{"exp": nil}), false},
		{"not yet valid", is.Token("alice", time.Hour, map[string]any{"nbf": time.Now().Add(time.Hour).Unix()}), false},
		{"wrong issuer", is.Token("alice", time.Hour, map[string]any{"iss": "https://other.test"}), false},
		{"wrong audience", is.Token("alice", time.Hour, map[string]any{"aud": "other"}), false},
		{"claims changed", parts[0] + "." + strings.Split(is.Token("mallory", time.Hour, nil), ".")[1] + "." + parts[2], false},
		{"alg none", "eyJhbGciOiJub25lIn0." + parts[1] + ".", false},
		{"two parts", parts[0] + "." + parts[1], false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := a.Verify(tc.token)
			if tc.ok != (err == nil) {
				t.Fatalf("Verify: %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, samlocal.ErrToken) {
				t.Fatalf("error %v does not wrap ErrToken", err)
			}
			if tc.ok && (c.Claims["sub"] != "alice" || c.Claims["iss"] != "https://issuer.test") {
				t.Fatalf("claims %+v", c)
			}
		})
	}
	c, _ := a.Verify(valid)
	if c.Claims["groups"] != "[a b]" || c.Claims["n"] != "7" {
		t.Errorf("claims as API Gateway passes them: groups %q, n %q; want \"[a b]\" and \"7\"", c.Claims["groups"], c.Claims["n"])
	}
}
