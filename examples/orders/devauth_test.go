package orders_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/internal/testing/testkit"
)

// The Lambda entry point applies the development authorizer under sam
// local only: AWS_SAM_LOCAL=true set by mistake in a deployed function
// (whose template sets IDEMKIT_STORE=dynamodb) stops it at its start, and
// claims a real authorizer set are never replaced by the bearer token.
func TestLambdaHandlerDevAuthorizer(t *testing.T) {
	jwt := func(sub string) *events.APIGatewayV2HTTPRequestContextAuthorizerDescription {
		return &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": sub}}}
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		auth    *events.APIGatewayV2HTTPRequestContextAuthorizerDescription
		wantSub string // "": the handler sees no sub claim
		wantErr error
	}{
		{"deployed, no authorizer", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders", orders.EnvStore: "dynamodb"}, nil, "", nil},
		{"deployed, JWT authorizer", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders", orders.EnvStore: "dynamodb"}, jwt("bob"), "bob", nil},
		{"deployed, AWS_SAM_LOCAL by mistake", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders", orders.EnvStore: "dynamodb", "AWS_SAM_LOCAL": "true"}, nil, "", orders.ErrDevAuthorizerDeployed},
		{"sam local", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders", orders.EnvStore: "memory", "AWS_SAM_LOCAL": "true"}, nil, "alice", nil},
		{"sam local, store unset", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders", "AWS_SAM_LOCAL": "true"}, nil, "alice", nil},
		{"sam local, claims set", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders", orders.EnvStore: "memory", "AWS_SAM_LOCAL": "true"}, jwt("bob"), "bob", nil},
		{"sam local, DynamoDB Local", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders", orders.EnvStore: "dynamodb", "AWS_SAM_LOCAL": "true", "AWS_ENDPOINT_URL_DYNAMODB": "http://host.docker.internal:8000"}, nil, "alice", nil},
		{"sam local, DynamoDB Local, claims set", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders", orders.EnvStore: "dynamodb", "AWS_SAM_LOCAL": "true", "AWS_ENDPOINT_URL_DYNAMODB": "http://host.docker.internal:8000"}, jwt("bob"), "bob", nil},
		{"deployed with an endpoint override, AWS_SAM_LOCAL by mistake", map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders", orders.EnvStore: "dynamodb", "AWS_SAM_LOCAL": "true", "AWS_ENDPOINT_URL_DYNAMODB": "https://dynamodb.us-east-1.amazonaws.com"}, nil, "", orders.ErrDevAuthorizerDeployed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gotSub string
			inner := func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				if a := ev.RequestContext.Authorizer; a != nil && a.JWT != nil {
					gotSub = a.JWT.Claims["sub"]
				}
				return events.APIGatewayV2HTTPResponse{StatusCode: 200}, nil
			}
			h, err := orders.LambdaHandler(inner, func(k string) string { return tc.env[k] })
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			ev := events.APIGatewayV2HTTPRequest{Headers: map[string]string{"authorization": "Bearer alice"}}
			ev.RequestContext.Authorizer = tc.auth
			resp, err := h(context.Background(), ev)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("%d %v, want the handler's 200", resp.StatusCode, err)
			}
			if gotSub != tc.wantSub {
				t.Errorf("handler saw sub %q, want %q", gotSub, tc.wantSub)
			}
		})
	}
}

// TestDevAuthorizerAllowed: the decision table of the development
// authorizer. It runs under sam local only, and with DynamoDB only when the
// endpoint is local, so that AWS_SAM_LOCAL=true in a deployed function
// (DynamoDB, no endpoint or AWS's) stops it.
func TestDevAuthorizerAllowed(t *testing.T) {
	for _, tc := range []struct {
		name      string
		samLocal  string
		store     string
		dynamoURL string // AWS_ENDPOINT_URL_DYNAMODB
		allURL    string // AWS_ENDPOINT_URL
		want      bool
		wantErr   error
	}{
		{"deployed", "", "dynamodb", "", "", false, nil},
		{"deployed, endpoint set", "", "dynamodb", "http://127.0.0.1:8000", "", false, nil},
		{"AWS_SAM_LOCAL not exactly true", "TRUE", "dynamodb", "", "", false, nil},
		{"sam local, memory", "true", "memory", "", "", true, nil},
		{"sam local, store unset", "true", "", "", "", true, nil},
		{"sam local, DynamoDB, no endpoint", "true", "dynamodb", "", "", false, orders.ErrDevAuthorizerDeployed},
		{"sam local, DynamoDB, AWS's endpoint", "true", "dynamodb", "https://dynamodb.us-east-1.amazonaws.com", "", false, orders.ErrDevAuthorizerDeployed},
		{"sam local, DynamoDB Local on the host", "true", "dynamodb", "http://host.docker.internal:8000", "", true, nil},
		{"sam local, LocalStack on the Docker network", "true", "dynamodb", "http://localstack:4566", "", true, nil},
		{"sam local, LocalStack's name", "true", "dynamodb", "http://localhost.localstack.cloud:4566", "", true, nil},
		{"sam local, Docker bridge", "true", "dynamodb", "http://172.17.0.1:8000", "", true, nil},
		{"sam local, host network", "true", "dynamodb", "http://127.0.0.1:8000", "", true, nil},
		{"sam local, AWS_ENDPOINT_URL local", "true", "dynamodb", "", "http://host.docker.internal:4566", true, nil},
		{"sam local, the DynamoDB endpoint wins", "true", "dynamodb", "https://dynamodb.eu-west-1.amazonaws.com", "http://127.0.0.1:4566", false, orders.ErrDevAuthorizerDeployed},
		{"sam local, endpoint unparsable", "true", "dynamodb", "://127.0.0.1", "", false, orders.ErrDevAuthorizerDeployed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"AWS_SAM_LOCAL": tc.samLocal, orders.EnvStore: tc.store,
				"AWS_ENDPOINT_URL_DYNAMODB": tc.dynamoURL, "AWS_ENDPOINT_URL": tc.allURL}
			got, err := orders.DevAuthorizerAllowed(func(k string) string { return env[k] })
			if got != tc.want || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("DevAuthorizerAllowed = %v, %v; want %v, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestLocalEndpoint(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		want     bool
	}{
		{"http://127.0.0.1:8000", true},
		{"http://127.1.2.3:8000", true},
		{"http://[::1]:8000", true},
		{"http://localhost:8000", true},
		{"http://LOCALHOST.:8000", true},
		{"http://ddb.localhost:8000", true},
		{"http://host.docker.internal:8000", true},
		{"https://localhost.localstack.cloud:4566", true},
		{"http://dynamodb.localhost.localstack.cloud:4566", true},
		{"http://localstack:4566", true},
		{"http://dynamodb-local:8000", true},
		{"http://10.0.0.5:8000", true},
		{"http://172.17.0.1:8000", true},
		{"http://192.168.1.10:8000", true},
		{"https://dynamodb.us-east-1.amazonaws.com", false},
		{"https://vpce-1a2b3c4d.dynamodb.us-east-1.vpce.amazonaws.com", false},
		{"http://8.8.8.8:8000", false},
		{"http://172.32.0.1:8000", false},
		{"http://localhost.evil.example:8000", false},
		{"http://host.docker.internal.evil.example", false},
		{"ftp://127.0.0.1", false},
		{"127.0.0.1:8000", false},
		{"http://user:pw@127.0.0.1:8000", false},
		{"", false},
		{"http://", false},
	} {
		if got := orders.LocalEndpoint(tc.endpoint); got != tc.want {
			t.Errorf("LocalEndpoint(%q) = %v, want %v", tc.endpoint, got, tc.want)
		}
	}
}

// TestSamLocalEnvFiles: every sam local environment file the docs name
// starts the function with the development authorizer: memory, or
// DynamoDB at a local endpoint (DynamoDB Local, LocalStack).
func TestSamLocalEnvFiles(t *testing.T) {
	deploy := testkit.Doc(t, "../../docs/DEPLOY.md")
	for _, tc := range []struct {
		file  string
		store string
	}{
		{"sam-local.env.json", "memory"},
		{"sam-local-dynamodb-local.env.json", "dynamodb"},
		{"sam-local-localstack.env.json", "dynamodb"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			var files map[string]map[string]string
			if err := json.Unmarshal(b, &files); err != nil {
				t.Fatal(err)
			}
			vars, ok := files["OrdersFunction"]
			if !ok || len(files) != 1 {
				t.Fatalf("want the variables of OrdersFunction only: %v", files)
			}
			// sam local's own variable, over the template's store.
			env := map[string]string{"AWS_SAM_LOCAL": "true", "AWS_LAMBDA_FUNCTION_NAME": "OrdersFunction", orders.EnvStore: "dynamodb"}
			for k, v := range vars {
				env[k] = v
			}
			if tc.store == "dynamodb" && !strings.Contains(deploy, "examples/orders/"+tc.file) {
				t.Errorf("docs/DEPLOY.md does not name examples/orders/%s", tc.file)
			}
			if env[orders.EnvStore] != tc.store {
				t.Fatalf("%s=%q, want %q", orders.EnvStore, env[orders.EnvStore], tc.store)
			}
			if ok, err := orders.DevAuthorizerAllowed(func(k string) string { return env[k] }); !ok || err != nil {
				t.Fatalf("DevAuthorizerAllowed = %v, %v; want true", ok, err)
			}
		})
	}
}
