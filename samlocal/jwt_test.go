package samlocal_test

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
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
		{"unknown kid", base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","kid":"other"}`)) + "." + parts[1] + "." + parts[2], false},
		{"header not base64", "!." + parts[1] + "." + parts[2], false},
		{"signature not base64", parts[0] + "." + parts[1] + ".!", false},
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

// TestVerifyClaims: a token signed by a known key is refused for each
// claim that is wrong, by the authorizer's clock, with the reason; its
// claims pass as API Gateway passes them, its scope as scopes.
func TestVerifyClaims(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_000_000, 0)
	a := &samlocal.Authorizer{Issuer: "i", Audience: []string{"api"}, Keys: map[string]*rsa.PublicKey{"k": &key.PublicKey},
		Now: func() time.Time { return now }}
	sign := func(header, claims string) string {
		s := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString([]byte(claims))
		sum := sha256.Sum256([]byte(s))
		sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		return s + "." + base64.RawURLEncoding.EncodeToString(sig)
	}
	const rs256 = `{"alg":"RS256","kid":"k"}`
	for _, tc := range []struct {
		name, header, claims string
		want                 string // the refusal's reason, or the claims and scopes passed on
	}{
		{"accepted", rs256, `{"iss":"i","aud":"api","exp":1000001,"nbf":1000000,"b":true,"o":{"x":1},"l":["a",2],"f":1.5,"scope":"r w"}`,
			"map[aud:api b:true exp:1000001 f:1.5 iss:i l:[a 2] nbf:1000000 o:{\"x\":1} scope:r w] [\"r\" \"w\"]"},
		{"client_id, no aud", rs256, `{"iss":"i","client_id":"api","exp":1000001}`, "map[client_id:api exp:1000001 iss:i] []"},
		{"client_id beside aud", rs256, `{"iss":"i","aud":"x","client_id":"api","exp":1000001}`, "aud names none"},
		{"aud of no strings, client_id", rs256, `{"iss":"i","aud":[7],"client_id":"api","exp":1000001}`, "map[aud:[7] client_id:api exp:1000001 iss:i] []"},
		{"expires now", rs256, `{"iss":"i","aud":"api","exp":1000000}`, "expired or no exp"},
		{"exp not a number", rs256, `{"iss":"i","aud":"api","exp":"1000001"}`, "expired or no exp"},
		{"valid a second later", rs256, `{"iss":"i","aud":"api","exp":1000002,"nbf":1000001}`, "not valid yet"},
		{"claims not JSON", rs256, `{"iss"`, "claims"},
		{"header not JSON", `{"alg"`, `{}`, "header"},
		{"alg HS256", `{"alg":"HS256","kid":"k"}`, `{}`, "alg \"HS256\", want RS256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := a.Verify(sign(tc.header, tc.claims))
			got := fmt.Sprintf("%v %q", c.Claims, c.Scopes)
			if err != nil {
				got = err.Error()
				if !errors.Is(err, samlocal.ErrToken) {
					t.Fatalf("error %v does not wrap ErrToken", err)
				}
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("Verify: %s, want %s", got, tc.want)
			}
		})
	}
}
