package samlocal

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

// Stack is a template run locally: its tables, K sandboxes of each
// function with the template's environment, and its APIs' routes in front.
type Stack struct {
	Plan  *Plan
	Front *Front
	// Issuers mint the tokens each JWT authorizer accepts, by
	// Route.Authorizer.
	Issuers map[string]*Issuer
}

// Config says what to run.
type Config struct {
	// Plan is the resolved template.
	Plan *Plan
	// RIE is the aws-lambda-rie binary (BuildRIE).
	RIE string
	// Bootstraps are the functions' bootstraps, built for this machine
	// (Bootstraps), by function name.
	Bootstraps map[string]string
	// Sandboxes is K, how many sandboxes run each function that has
	// routes. Zero: 4. A function without routes runs in one.
	Sandboxes int
	// Endpoint is the DynamoDB endpoint (DynamoDB Local, dynalite).
	Endpoint string
	// Region is the functions' AWS_REGION. Empty: us-east-1.
	Region string
	// Env adds to or replaces variables of a function's environment, by
	// function name; the name "Parameters" applies to every function (the
	// shape of sam local's --env-vars file).
	Env map[string]map[string]string
	// Output receives every sandbox's output. Nil: none.
	Output io.Writer
}

// FunctionEnv is the whole environment of one sandbox of fn: PATH, the
// template's variables (with env's replacements), what Lambda sets
// (function name, timeout, memory, region, credentials) and the DynamoDB
// endpoint. Nothing else of this process's environment reaches the
// function.
func FunctionEnv(fn *Function, endpoint, region string, env map[string]map[string]string) []string {
	vars := maps.Clone(fn.Env)
	maps.Copy(vars, env["Parameters"])
	maps.Copy(vars, env[fn.Name])
	out := []string{"PATH=" + os.Getenv("PATH")}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		out = append(out, k+"="+vars[k])
	}
	return append(out,
		"AWS_LAMBDA_FUNCTION_NAME="+fn.Name,
		"AWS_LAMBDA_FUNCTION_TIMEOUT="+strconv.Itoa(fn.Timeout),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(fn.MemorySize),
		"AWS_REGION="+region,
		"AWS_DEFAULT_REGION="+region,
		"AWS_ACCESS_KEY_ID=local",
		"AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_EC2_METADATA_DISABLED=true",
	)
}

// Start creates the template's tables (those missing) and starts the
// sandboxes and the front. Stop ends the sandboxes.
func Start(ctx context.Context, cfg Config) (*Stack, error) {
	if cfg.Sandboxes <= 0 {
		cfg.Sandboxes = 4
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if err := CreateTables(ctx, cfg.Endpoint, cfg.Region, cfg.Plan.Tables); err != nil {
		return nil, err
	}
	logOut := cfg.Output
	if logOut == nil {
		logOut = io.Discard
	}
	st := &Stack{Plan: cfg.Plan, Issuers: map[string]*Issuer{}, Front: &Front{Pools: map[string]*Pool{},
		Authorizers: map[string]*Authorizer{}, Logger: slog.New(slog.NewTextHandler(logOut, nil))}}
	for _, key := range slices.Sorted(maps.Keys(cfg.Plan.Authorizers)) {
		jc := cfg.Plan.Authorizers[key]
		is, err := NewIssuer(jc.Issuer, jc.Audience[0])
		if err != nil {
			return nil, err
		}
		a := is.Authorizer()
		a.Audience = jc.Audience
		st.Issuers[key], st.Front.Authorizers[key] = is, a
	}
	for _, fn := range cfg.Plan.Functions {
		bootstrap := cfg.Bootstraps[fn.Name]
		if bootstrap == "" {
			st.Stop()
			return nil, fmt.Errorf("samlocal: function %s: no bootstrap", fn.Name)
		}
		k := cfg.Sandboxes
		if len(fn.Routes) == 0 {
			k = 1
		}
		pool := &Pool{Function: fn}
		st.Front.Pools[fn.Name] = pool
		env := FunctionEnv(fn, cfg.Endpoint, cfg.Region, cfg.Env)
		for range k {
			sb, err := StartSandbox(ctx, SandboxConfig{RIE: cfg.RIE, Bootstrap: bootstrap, Env: env, Output: cfg.Output})
			if err != nil {
				st.Stop()
				return nil, fmt.Errorf("function %s: %w", fn.Name, err)
			}
			pool.Sandboxes = append(pool.Sandboxes, sb)
		}
		st.Front.Routes = append(st.Front.Routes, fn.Routes...)
	}
	return st, nil
}

// Token returns a token for subject sub, valid for ttl, that the first
// JWT authorizer (in name order) accepts; extra claims are added. It is
// empty when no route has one.
func (st *Stack) Token(sub string, ttl time.Duration, extra map[string]any) string {
	for _, key := range slices.Sorted(maps.Keys(st.Issuers)) {
		return st.Issuers[key].Token(sub, ttl, extra)
	}
	return ""
}

// Invoke runs event in a sandbox of the function named name and returns
// what it answered, as `sam local invoke` prints it: the function's
// result, or its error object.
func (st *Stack) Invoke(ctx context.Context, name string, event []byte) ([]byte, error) {
	pool := st.Front.Pools[name]
	if pool == nil {
		return nil, fmt.Errorf("samlocal: no function %s in the template", name)
	}
	status, out, err := pool.Invoke(ctx, event)
	if err != nil {
		return nil, err
	}
	if status != 200 {
		return out, &FunctionError{Status: status, Body: string(out[:min(len(out), 500)])}
	}
	return out, nil
}

// Stop ends every sandbox.
func (st *Stack) Stop() {
	for _, p := range st.Front.Pools {
		for _, sb := range p.Sandboxes {
			sb.Stop()
		}
	}
}

// CreateTables creates the tables that are missing at endpoint, and turns
// on the TTL the template asks for where the server can.
func CreateTables(ctx context.Context, endpoint, region string, tables []*Table) error {
	c := dynamodb.New(dynamodb.Options{Region: region, BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	for _, tb := range tables {
		_, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: tb.Input.TableName})
		var nf *types.ResourceNotFoundException
		switch {
		case err == nil:
			continue
		case !errors.As(err, &nf):
			return fmt.Errorf("samlocal: table %s at %s: %w", *tb.Input.TableName, endpoint, err)
		}
		if _, err := c.CreateTable(ctx, tb.Input); err != nil {
			return fmt.Errorf("samlocal: create table %s (%s): %w", *tb.Input.TableName, tb.LogicalID, err)
		}
		if err := dynalite.WaitActive(ctx, c, *tb.Input.TableName); err != nil {
			return err
		}
		if tb.TTL != "" {
			// dynalite has no TTL: the records then simply stay.
			_, _ = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: tb.Input.TableName,
				TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(tb.TTL), Enabled: aws.Bool(true)}})
		}
	}
	return nil
}

func newRequestID() string {
	b := make([]byte, 11)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
