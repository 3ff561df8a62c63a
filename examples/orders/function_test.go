package orders_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
)

// sqsCall is one SQS request: the operation and the queue it names.
type sqsCall struct{ Op, QueueURL string }

// dynamoCall is one DynamoDB request as it went over the wire.
type dynamoCall struct{ Op, Table, Index string }

// callRecorder notes every DynamoDB request it passes on: the operation
// (from X-Amz-Target) and the table and index it names.
type callRecorder struct {
	next  http.RoundTripper
	mu    sync.Mutex
	calls []dynamoCall
}

func (r *callRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	_, op, _ := strings.Cut(req.Header.Get("X-Amz-Target"), ".")
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	var in struct{ TableName, IndexName string }
	_ = json.Unmarshal(body, &in)
	r.mu.Lock()
	r.calls = append(r.calls, dynamoCall{op, in.TableName, in.IndexName})
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

func (r *callRecorder) recorded() []dynamoCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// grants returns the actions the function's inline policies allow, by
// resource ARN (resolved as templateOptions resolves them).
func grants(t *testing.T, raw map[string]any) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	pols, _ := props(t, raw, "OrdersFunction")["Policies"].([]any)
	for _, p := range pols {
		doc, _ := p.(map[string]any)
		stmts, _ := doc["Statement"].([]any)
		for _, s := range stmts {
			st, _ := s.(map[string]any)
			if st["Effect"] != "Allow" {
				continue
			}
			for _, res := range list(st["Resource"]) {
				out[res] = append(out[res], list(st["Action"])...)
			}
		}
	}
	return out
}

// The function as template.yaml configures it, built by orders.FromEnv
// from the template's environment, makes only DynamoDB calls its role
// allows, and reads no environment variable the template does not set
// (other than the optional ones below). Every call is recorded on the
// wire, on a real server, along the paths that use the store's and the
// repository's calls: claim, replay, completion, release (503 from the
// processor), an unknown outcome (the order's write loses every answer),
// and reads. A store or repository that starts to make a new call (a
// Query on an index, a transaction) fails here, not in production with
// AccessDenied.
func TestFunctionCallsAreGrantedByTemplate(t *testing.T) {
	tpl, raw := loadTemplate(t)
	fn := function(t, tpl, "OrdersFunction")
	server := dynalite.Client(t)
	records := dynalite.CreateTable(t, server, dynamo.TableDefinition("records", dynamo.Options{}))
	ordersTable := dynalite.CreateTable(t, server, orders.OrdersTableDefinition("orders"))

	// The function's DynamoDB endpoint: a proxy to the test server that
	// records each call and can lose the answers of the orders table's
	// writes.
	target, err := url.Parse(dynalite.Endpoint(t))
	if err != nil {
		t.Fatal(err)
	}
	ft := faults.New(http.DefaultTransport)
	rec := &callRecorder{next: ft}
	proxy := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: rec,
		ErrorLog:  slog.NewLogLogger(slog.DiscardHandler, slog.LevelError),
	})
	t.Cleanup(proxy.Close)
	// The shipping queue: an endpoint that notes each SQS call and
	// accepts it.
	var sqsMu sync.Mutex
	var sqsCalls []sqsCall
	queue := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ QueueUrl string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
		sqsMu.Lock()
		sqsCalls = append(sqsCalls, sqsCall{op, in.QueueUrl})
		sqsMu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		io.WriteString(w, `{"MessageId":"00000000-0000-4000-8000-000000000001"}`)
	}))
	t.Cleanup(queue.Close)
	queueURL := queue.URL + "/123456789012/shipping"
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": proxy.URL, "AWS_ENDPOINT_URL_SQS": queue.URL, "AWS_REGION": dynalite.Region,
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"), "AWS_ENDPOINT_URL": "",
		"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "",
	} {
		t.Setenv(k, v)
	}

	// The environment Lambda gives the function: the template's, its
	// table references resolved, and the variables Lambda sets itself.
	env := map[string]string{"AWS_LAMBDA_FUNCTION_NAME": "orders"}
	for k, v := range fn.Environment.Variables {
		switch v {
		case "ref:IdempotencyTable":
			v = records
		case "ref:OrdersTable":
			v = ordersTable
		case "ref:ShippingQueue":
			v = queueURL
		}
		env[k] = v
	}
	var readMu sync.Mutex
	read := map[string]bool{}
	getenv := func(k string) string {
		readMu.Lock()
		defer readMu.Unlock()
		read[k] = true
		return env[k]
	}
	opts, _, err := orders.FromEnv(context.Background(), getenv, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	opts.Observer = nil
	h, err := orders.Handler(opts)
	if err != nil {
		t.Fatal(err)
	}
	h = orders.DevAuthorizer(h)

	// Each invocation has the function's deadline, as in Lambda.
	do := func(what string, ev events.APIGatewayV2HTTPRequest, want int) events.APIGatewayV2HTTPResponse {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), orders.DefaultLocalTimeout)
		defer cancel()
		resp, err := h(ctx, ev)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("%s: %d %v %s, want %d", what, resp.StatusCode, err, resp.Body, want)
		}
		return resp
	}
	create := event("POST", "POST /orders", "/orders", orderBody)
	resp := do("create order", create, 201)
	do("replay", create, 201)
	var o orders.Order
	if err := json.Unmarshal([]byte(resp.Body), &o); err != nil {
		t.Fatal(err)
	}
	pay := func(card string) events.APIGatewayV2HTTPRequest {
		return event("POST", "POST /payments", "/payments", `{"order_id":"`+o.ID+`","amount_cents":100,"card":"`+card+`"}`)
	}
	do("payment", pay("4242424242424242"), 201)
	do("declined", pay(orders.CardDeclined), 402)
	do("processor down (released)", pay(orders.CardProcessorDown), 503)
	get := event("GET", "GET /orders/{id}", "/orders/"+o.ID, "")
	get.PathParameters = map[string]string{"id": o.ID}
	do("get order", get, 200)
	ft.Add(faults.Rule{Op: "PutItem", Kind: faults.LostAck, Times: -1,
		Match: func(body []byte) bool { return bytes.Contains(body, []byte(`"`+ordersTable+`"`)) }})
	unknown := do("order write outcome unknown", event("POST", "POST /orders", "/orders", `{"sku":"b","quantity":1,"amount_cents":1,"currency":"EUR"}`), 503)
	if p := problemOf(t, unknown.Body); p.Type != kitOutcomeUnknown {
		t.Fatalf("order write outcome unknown: %s, want %s", p.Type, kitOutcomeUnknown)
	}
	ft.Clear()

	arn := func(logical string) string {
		return "arn:aws:dynamodb:us-east-1:123456789012:table/ref:" + logical
	}
	tables := map[string]string{records: arn("IdempotencyTable"), ordersTable: arn("OrdersTable")}
	granted := grants(t, raw)
	used := map[string]bool{}
	for _, c := range rec.recorded() {
		res, ok := tables[c.Table]
		if !ok {
			t.Errorf("%s on table %q: not one of the template's tables", c.Op, c.Table)
			continue
		}
		if c.Index != "" {
			res += "/index/" + c.Index
		}
		action := "dynamodb:" + c.Op
		if !slices.Contains(granted[res], action) {
			t.Errorf("the function calls %s on %s; the template does not grant it", action, res)
		}
		used[action+" "+res] = true
	}
	for res, acts := range granted {
		for _, a := range acts {
			if !used[a+" "+res] {
				t.Logf("%s on %s granted, not called on this server's paths", a, res)
			}
		}
	}

	// Each order created sends its ship request, on the granted queue.
	sqsMu.Lock()
	calls := slices.Clone(sqsCalls)
	sqsMu.Unlock()
	if len(calls) == 0 {
		t.Errorf("no ship request sent to the shipping queue")
	}
	for _, c := range calls {
		if c.QueueURL != queueURL || !slices.Contains(granted["getatt:ShippingQueue.Arn"], "sqs:"+c.Op) {
			t.Errorf("the function calls sqs:%s on %s; the template grants %v on the shipping queue", c.Op, c.QueueURL, granted["getatt:ShippingQueue.Arn"])
		}
	}

	// Variables the code may read that the template leaves unset: set by
	// Lambda or SAM, or for local use and other deployments only.
	optional := []string{"AWS_LAMBDA_FUNCTION_NAME", "AWS_SAM_LOCAL", orders.EnvHomeRegion, orders.EnvCreateTable}
	for k := range read {
		if _, ok := fn.Environment.Variables[k]; !ok && !slices.Contains(optional, k) {
			t.Errorf("orders.FromEnv reads %s, which template.yaml does not set", k)
		}
	}
	for k := range fn.Environment.Variables {
		if !read[k] {
			t.Errorf("template.yaml sets %s, which orders.FromEnv does not read", k)
		}
	}
}
