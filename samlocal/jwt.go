package samlocal

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrToken is wrapped by every error of Authorizer.Verify: the token is
// missing, malformed, badly signed, expired, or not for this API.
var ErrToken = errors.New("samlocal: token refused")

// Authorizer checks bearer tokens as an HTTP API's JWT authorizer does
// (a JwtConfiguration of the template): an RS256-signed JWT whose signature a
// known key verifies, whose iss is Issuer, whose aud (or client_id)
// names one of Audience, within exp and nbf. Verify returns its claims,
// which API Gateway passes in requestContext.authorizer.jwt.
type Authorizer struct {
	// Issuer is the JwtIssuer parameter: the iss every token must carry.
	Issuer string
	// Audience is the JwtAudience parameter.
	Audience []string
	// Keys are the issuer's public keys by kid (its JWKS).
	Keys map[string]*rsa.PublicKey
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
}

// Claims is what the authorizer passes on: the claims as strings, as
// API Gateway's payload 2.0 carries them, and the scopes.
type Claims struct {
	Claims map[string]string
	Scopes []string
}

// Verify checks token and returns its claims, or an error wrapping
// ErrToken that says why it was refused.
func (a *Authorizer) Verify(token string) (Claims, error) {
	raw, err := a.signed(token)
	if err != nil {
		return Claims{}, err
	}
	if err := a.check(raw); err != nil {
		return Claims{}, err
	}
	return claimsOf(raw), nil
}

// signed returns the claims of token, a compact JWS whose RS256 signature
// a key of Keys (by its kid) verifies, or an error wrapping ErrToken.
func (a *Authorizer) signed(token string) (map[string]any, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: not a compact JWS", ErrToken)
	}
	key, err := a.key(parts[0])
	if err != nil {
		return nil, err
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrToken, err)
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig); err != nil {
		return nil, fmt.Errorf("%w: bad signature", ErrToken)
	}
	var raw map[string]any
	if err := decodeSegment(parts[1], &raw); err != nil {
		return nil, fmt.Errorf("%w: claims: %v", ErrToken, err)
	}
	return raw, nil
}

// key returns the key of Keys that the JOSE header seg names by its kid,
// for alg RS256 only, or an error wrapping ErrToken.
func (a *Authorizer) key(seg string) (*rsa.PublicKey, error) {
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := decodeSegment(seg, &header); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrToken, err)
	}
	if header.Alg != "RS256" {
		return nil, fmt.Errorf("%w: alg %q, want RS256", ErrToken, header.Alg)
	}
	key := a.Keys[header.Kid]
	if key == nil {
		return nil, fmt.Errorf("%w: unknown kid %q", ErrToken, header.Kid)
	}
	return key, nil
}

// check refuses, with an error wrapping ErrToken, claims whose iss is not
// Issuer, whose aud names none of Audience, that have expired or have no
// exp, or whose nbf is still to come.
func (a *Authorizer) check(raw map[string]any) error {
	if iss, _ := raw["iss"].(string); iss != a.Issuer {
		return fmt.Errorf("%w: iss %q, want %q", ErrToken, iss, a.Issuer)
	}
	if !a.audienceOK(raw) {
		return fmt.Errorf("%w: aud names none of %v", ErrToken, a.Audience)
	}
	t := a.now().Unix()
	if exp, ok := raw["exp"].(float64); !ok || int64(exp) <= t {
		return fmt.Errorf("%w: expired or no exp", ErrToken)
	}
	if nbf, ok := raw["nbf"].(float64); ok && int64(nbf) > t {
		return fmt.Errorf("%w: not valid yet", ErrToken)
	}
	return nil
}

// now is the time by the authorizer's clock.
func (a *Authorizer) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// claimsOf is what the authorizer passes on of claims raw: each as a
// string (claimString), and the scopes of its scope claim.
func claimsOf(raw map[string]any) Claims {
	c := Claims{Claims: make(map[string]string, len(raw)), Scopes: nil}
	for k, v := range raw {
		c.Claims[k] = claimString(v)
	}
	if s, ok := raw["scope"].(string); ok {
		c.Scopes = strings.Fields(s)
	}
	return c
}

// audienceOK reports whether the aud of claims raw (a string or a list;
// client_id when it has none) names one of Audience.
func (a *Authorizer) audienceOK(raw map[string]any) bool {
	var auds []string
	switch v := raw["aud"].(type) {
	case string:
		auds = []string{v}
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				auds = append(auds, s)
			}
		}
	}
	if cid, ok := raw["client_id"].(string); ok && len(auds) == 0 {
		auds = []string{cid}
	}
	for _, got := range auds {
		for _, want := range a.Audience {
			if got == want {
				return true
			}
		}
	}
	return false
}

// claimString is a claim as API Gateway passes it: a string as is, a
// number in its shortest form, an array as "[a b]", anything else as JSON.
func claimString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case []any:
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = claimString(x)
		}
		return "[" + strings.Join(s, " ") + "]"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// decodeSegment decodes the JSON of seg, a base64url segment of a JWS,
// into v.
func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Issuer mints tokens the Authorizer it describes accepts: a local RSA
// key standing for the identity provider a JWT authorizer names.
type Issuer struct {
	URL      string // the iss claim
	Audience string // the aud claim
	kid      string
	key      *rsa.PrivateKey
}

// NewIssuer generates an RSA key standing for the issuer at url (the iss
// of its tokens), whose tokens are for audience.
func NewIssuer(url, audience string) (*Issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &Issuer{URL: url, Audience: audience, kid: "local-1", key: key}, nil
}

// Authorizer returns the authorizer that accepts this issuer's tokens.
func (is *Issuer) Authorizer() *Authorizer {
	return &Authorizer{Issuer: is.URL, Audience: []string{is.Audience},
		Keys: map[string]*rsa.PublicKey{is.kid: &is.key.PublicKey}}
}

// Token returns a token for subject sub, valid from now for ttl, with
// extra claims added (they may replace iss, aud or exp, to make a token
// the authorizer refuses).
func (is *Issuer) Token(sub string, ttl time.Duration, extra map[string]any) string {
	now := time.Now()
	claims := map[string]any{"iss": is.URL, "aud": is.Audience, "sub": sub,
		"iat": now.Unix(), "exp": now.Add(ttl).Unix()}
	for k, v := range extra {
		claims[k] = v
	}
	return is.sign(map[string]any{"alg": "RS256", "typ": "JWT", "kid": is.kid}, claims)
}

func (is *Issuer) sign(header, claims map[string]any) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	signing := base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, is.key, crypto.SHA256, sum[:])
	if err != nil {
		panic(err) // a 2048-bit key signs any digest
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}
