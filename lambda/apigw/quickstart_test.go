package apigw_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/testkit"
)

// envQuickstartChild makes the test binary run Example_quickstart as the
// function's whole program.
const envQuickstartChild = "IDEMKIT_QUICKSTART_CHILD"

// TestQuickstartRuns: the README's quick start, unchanged, starts against
// a table made by dynamo.CreateTable on the test server (dynalite, which
// has no TTL API, or DynamoDB Local with IDEMKIT_TEST_SERVER=dynamodb-local)
// and serves a request and its retry through the Lambda runtime API: the
// first runs the handler, the retry replays it.
func TestQuickstartRuns(t *testing.T) {
	if os.Getenv(envQuickstartChild) == "1" {
		Example_quickstart() // lambda.Start never returns; log.Fatal exits 1
		return
	}
	endpoint := dynalite.Endpoint(t)
	c := dynalite.Client(t)
	table := dynalite.TableName(t)
	if err := dynamo.CreateTable(t.Context(), c, table, dynamo.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.DeleteTable(t.Context(), &dynamodb.DeleteTableInput{TableName: aws.String(table)}) })

	rt := newRuntimeAPI()
	srv := httptest.NewServer(rt)
	t.Cleanup(srv.Close)
	t.Cleanup(rt.stop)

	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestQuickstartRuns$")
	cmd.Env = append(os.Environ(),
		envQuickstartChild+"=1",
		"AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(srv.URL, "http://"),
		"IDEMKIT_TABLE="+table,
		"AWS_ENDPOINT_URL_DYNAMODB="+endpoint,
		"AWS_REGION="+dynalite.Region,
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_SESSION_TOKEN=",
		"AWS_PROFILE=", "AWS_CONFIG_FILE="+filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
	)
	var out testkit.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed when the program has ended, waitErr then says how.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	ev := events.APIGatewayV2HTTPRequest{
		RouteKey: "POST /orders",
		RawPath:  "/orders",
		Headers:  map[string]string{"idempotency-key": "quickstart-1", "content-type": "application/json"},
		Body:     `{"sku":"book"}`,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:   "POST /orders",
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: "/orders"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": "user-1"}}},
		},
	}
	for i, wantReplayed := range []string{"", "true"} {
		select {
		case rt.events <- invocation{id: "req-" + strconv.Itoa(i), event: ev}:
		case <-exited:
			t.Fatalf("the quick start exited (%v) before asking for invocation %d:\n%s", waitErr, i, out.String())
		}
		var res invocationResult
		select {
		case res = <-rt.results:
		case <-exited:
			t.Fatalf("the quick start exited (%v) before answering invocation %d:\n%s", waitErr, i, out.String())
		}
		if res.err != "" {
			t.Fatalf("invocation %d: function error %s\n%s", i, res.err, out.String())
		}
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(res.body, &resp); err != nil {
			t.Fatalf("invocation %d: %v: %s", i, err, res.body)
		}
		if resp.StatusCode != 201 || resp.Body != `{"id":"ord_1","status":"paid"}` || resp.Headers["Idempotent-Replayed"] != wantReplayed {
			t.Errorf("invocation %d: %d %v %s, want 201 with Idempotent-Replayed %q", i, resp.StatusCode, resp.Headers, resp.Body, wantReplayed)
		}
	}
}

type invocation struct {
	id    string
	event any
}

type invocationResult struct {
	body []byte
	err  string // the function error's body, if it failed
}

// runtimeAPI is the part of the Lambda runtime API that aws-lambda-go's
// lambda.Start calls: it hands out events and collects the answers.
type runtimeAPI struct {
	events  chan invocation
	results chan invocationResult
	done    chan struct{}
}

func newRuntimeAPI() *runtimeAPI {
	return &runtimeAPI{events: make(chan invocation), results: make(chan invocationResult, 1), done: make(chan struct{})}
}

func (r *runtimeAPI) stop() { close(r.done) }

func (r *runtimeAPI) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	const base = "/2018-06-01/runtime/"
	path := strings.TrimPrefix(req.URL.Path, base)
	body, _ := io.ReadAll(req.Body)
	switch {
	case req.Method == http.MethodGet && path == "invocation/next":
		var inv invocation
		select {
		case inv = <-r.events:
		case <-r.done:
			http.Error(w, "stopped", http.StatusGone)
			return
		case <-req.Context().Done():
			return
		}
		b, err := json.Marshal(inv.event)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:quickstart")
		_, _ = w.Write(b)
	case req.Method == http.MethodPost && strings.HasSuffix(path, "/response"):
		r.results <- invocationResult{body: body}
		w.WriteHeader(http.StatusAccepted)
	case req.Method == http.MethodPost && strings.HasSuffix(path, "/error"):
		r.results <- invocationResult{err: string(body)}
		w.WriteHeader(http.StatusAccepted)
	default:
		http.Error(w, fmt.Sprintf("%s %s: not part of the runtime API", req.Method, req.URL.Path), http.StatusNotFound)
	}
}
