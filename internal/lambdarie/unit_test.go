package lambdarie_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/awslabs/goformation/v7"

	"github.com/idemkit/idemkit/internal/lambdarie"
)

func TestAuthorizer(t *testing.T) {
	is, err := lambdarie.NewIssuer("https://issuer.test", "api")
	if err != nil {
		t.Fatal(err)
	}
	other, err := lambdarie.NewIssuer("https://issuer.test", "api")
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
			if err != nil && !errors.Is(err, lambdarie.ErrToken) {
				t.Fatalf("error %v does not wrap ErrToken", err)
			}
			if tc.ok && (c.Claims["sub"] != "alice" || c.Claims["iss"] != "https://issuer.test" || len(c.Scopes) != 1 || c.Scopes[0] != "orders") {
				t.Fatalf("claims %+v", c)
			}
		})
	}
	c, _ := a.Verify(valid)
	if c.Claims["groups"] != "[a b]" || c.Claims["n"] != "7" {
		t.Errorf("claims as API Gateway passes them: groups %q, n %q; want \"[a b]\" and \"7\"", c.Claims["groups"], c.Claims["n"])
	}
}

// TestResponse: what the emulator answers becomes what API Gateway makes
// of it.
func TestResponse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		out    string
		want   int // 0: a function error
		body   string
	}{
		{"response", 200, `{"statusCode":201,"headers":{"Location":"/x"},"body":"{}"}`, 201, "{}"},
		{"simple response", 200, `{"hello":"world"}`, 200, `{"hello":"world"}`},
		{"simple JSON value", 200, `"text"`, 200, `"text"`},
		{"function error", 200, `{"errorMessage":"boom","errorType":"errorString"}`, 0, ""},
		{"timeout", 200, `Task timed out after 29.00 seconds`, 0, ""},
		{"init failure", 502, ``, 0, ""},
		{"emulator error", 500, `{"statusCode":200}`, 0, ""},
		{"bad statusCode", 200, `{"statusCode":"two hundred"}`, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := lambdarie.Response(tc.status, []byte(tc.out))
			var fe *lambdarie.FunctionError
			if tc.want == 0 {
				if !errors.As(err, &fe) || fe.Status != tc.status {
					t.Fatalf("Response: %+v %v, want a FunctionError", resp, err)
				}
				return
			}
			if err != nil || resp.StatusCode != tc.want || resp.Body != tc.body {
				t.Fatalf("Response: %d %q %v, want %d %q", resp.StatusCode, resp.Body, err, tc.want, tc.body)
			}
		})
	}
}

// TestFunctionEnvIsTemplates: a sandbox gets template.yaml's variables,
// Timeout and MemorySize for OrdersFunction, and nothing of this process.
func TestFunctionEnvIsTemplates(t *testing.T) {
	tpl, err := goformation.Open(lambdarie.RepoRoot() + "/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fn, err := tpl.GetServerlessFunctionWithName("OrdersFunction")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("IDEMKIT_SECRET_OF_THIS_PROCESS", "x")
	env := map[string]string{}
	for _, kv := range lambdarie.FunctionEnv("http://127.0.0.1:1", "us-east-1", [2]string{"a", "b"}) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for k := range fn.Environment.Variables {
		if _, ok := env[k]; !ok {
			t.Errorf("template variable %s is not in the sandbox's environment", k)
		}
	}
	for k := range env {
		if strings.HasPrefix(k, "IDEMKIT_") || strings.HasPrefix(k, "ORDERS_") {
			if _, ok := fn.Environment.Variables[k]; !ok {
				t.Errorf("sandbox variable %s is not the template's", k)
			}
		}
	}
	if env["IDEMKIT_STORE"] != "dynamodb" || env["AWS_LAMBDA_FUNCTION_TIMEOUT"] != "29" || fn.Timeout == nil || *fn.Timeout != lambdarie.FunctionTimeout {
		t.Errorf("store %q, timeout %q; template Timeout %v", env["IDEMKIT_STORE"], env["AWS_LAMBDA_FUNCTION_TIMEOUT"], fn.Timeout)
	}
	if fn.MemorySize == nil || env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] != "256" || *fn.MemorySize != 256 {
		t.Errorf("memory: sandbox %q, template %v", env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"], fn.MemorySize)
	}
	if _, ok := env["IDEMKIT_SECRET_OF_THIS_PROCESS"]; ok || env["PATH"] != os.Getenv("PATH") {
		t.Error("the sandbox's environment is not its own")
	}
}
