package lambdarie

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/examples/orders"
)

// Stack is template.yaml run locally: the tables, K sandboxes of the
// function with the template's environment, and the HTTP API in front.
type Stack struct {
	Front  *Front
	Issuer *Issuer
	Tables [2]string // the idempotency table and the orders table
}

// StackConfig says what to run.
type StackConfig struct {
	RIE, Bootstrap string
	// Sandboxes is K, how many sandboxes run the function. Zero: 4.
	Sandboxes int
	// Endpoint is the DynamoDB endpoint (DynamoDB Local, dynalite).
	Endpoint string
	// Region is the function's AWS_REGION. Empty: us-east-1.
	Region string
	// Tables names the idempotency and orders tables. Empty: the
	// function's defaults. They are created when missing.
	Tables [2]string
	// ExtraEnv is added to the function's environment (last wins).
	ExtraEnv []string
	// Output receives every sandbox's output. Nil: none.
	Output io.Writer
}

// FunctionTimeout is template.yaml's Timeout for OrdersFunction, in seconds.
const FunctionTimeout = 29

// FunctionEnv is the environment of one sandbox: template.yaml's
// variables for OrdersFunction (IDEMKIT_STORE, IDEMKIT_TABLE,
// ORDERS_TABLE, IDEMKIT_REPLAY_HOURS and IDEMKIT_RETENTION_HOURS at the
// parameters' defaults; SHIPPING_QUEUE_URL empty, as there is no queue
// here, so no ship request is sent), what Lambda sets (function name, timeout, memory,
// region, credentials) and the DynamoDB endpoint. Nothing of this
// process's environment but PATH reaches the function.
func FunctionEnv(endpoint, region string, tables [2]string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"IDEMKIT_STORE=dynamodb",
		"IDEMKIT_TABLE=" + tables[0],
		"ORDERS_TABLE=" + tables[1],
		"IDEMKIT_REPLAY_HOURS=24",
		"IDEMKIT_RETENTION_HOURS=168",
		"SHIPPING_QUEUE_URL=",
		"AWS_LAMBDA_FUNCTION_NAME=OrdersFunction",
		fmt.Sprintf("AWS_LAMBDA_FUNCTION_TIMEOUT=%d", FunctionTimeout),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=256",
		"AWS_REGION=" + region,
		"AWS_ACCESS_KEY_ID=local",
		"AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_DYNAMODB=" + endpoint,
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// StartStack creates the tables (as template.yaml lays them out: dynamo's
// and the orders repository's layouts, which examples/orders checks
// against the template) and starts the sandboxes and the front. Stop ends
// the sandboxes.
func StartStack(ctx context.Context, cfg StackConfig) (*Stack, error) {
	if cfg.Sandboxes <= 0 {
		cfg.Sandboxes = 4
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Tables[0] == "" {
		cfg.Tables[0] = orders.DefaultTable
	}
	if cfg.Tables[1] == "" {
		cfg.Tables[1] = orders.DefaultOrdersTable
	}
	client := dynamodb.New(dynamodb.Options{
		Region:       cfg.Region,
		BaseEndpoint: aws.String(cfg.Endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	if err := createTables(ctx, client, cfg.Tables); err != nil {
		return nil, err
	}
	issuer, err := NewIssuer("https://issuer.idemkit.local", "idemkit-orders")
	if err != nil {
		return nil, err
	}
	env := append(FunctionEnv(cfg.Endpoint, cfg.Region, cfg.Tables), cfg.ExtraEnv...)
	logOut := cfg.Output
	if logOut == nil {
		logOut = io.Discard
	}
	st := &Stack{Issuer: issuer, Tables: cfg.Tables,
		Front: &Front{Authorizer: issuer.Authorizer(), Logger: slog.New(slog.NewTextHandler(logOut, nil))}}
	for range cfg.Sandboxes {
		sb, err := StartSandbox(ctx, SandboxConfig{RIE: cfg.RIE, Bootstrap: cfg.Bootstrap, Env: env, Output: cfg.Output})
		if err != nil {
			st.Stop()
			return nil, err
		}
		st.Front.Sandboxes = append(st.Front.Sandboxes, sb)
	}
	return st, nil
}

// Stop ends every sandbox.
func (st *Stack) Stop() {
	for _, sb := range st.Front.Sandboxes {
		sb.Stop()
	}
}

func createTables(ctx context.Context, c *dynamodb.Client, tables [2]string) error {
	if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tables[0])}); err != nil {
		if err := dynamo.CreateTable(ctx, c, tables[0]); err != nil {
			return err
		}
	}
	if err := orders.CreateOrdersTable(ctx, c, tables[1]); err != nil {
		return err
	}
	return nil
}

// BuildBootstrap runs `make build-api` (the orders API's half of `make build`) in the repository at root for the
// host's architecture, writing the bootstrap to out.
func BuildBootstrap(ctx context.Context, root, out string) error {
	cmd := exec.CommandContext(ctx, "make", "-s", "-C", root, "build-api", "BUILD_ARCH="+runtime.GOARCH, "BOOTSTRAP="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("lambdarie: make build-api: %v: %s", err, strings.TrimSpace(string(b)))
	}
	return nil
}

// BuildRIE builds aws-lambda-rie, at the version this module's go.mod
// pins, into out.
func BuildRIE(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie")
	cmd.Dir = moduleDir()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("lambdarie: build aws-lambda-rie: %v: %s", err, strings.TrimSpace(string(b)))
	}
	return nil
}

// moduleDir is this module's directory, found from this source file.
func moduleDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// RepoRoot is the repository's root, two levels above this module.
func RepoRoot() string { return filepath.Join(moduleDir(), "..", "..") }

func newRequestID() string {
	b := make([]byte, 11)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
