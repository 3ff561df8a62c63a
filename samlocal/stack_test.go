package samlocal_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idemkit/internal/conform"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/samlocal"
)

func TestMain(m *testing.M) {
	code := dynalite.Run(m)
	if ddb != nil {
		_ = ddb.Stop()
	}
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// aws-lambda-rie and every function's bootstrap, built once per test
// binary, as the command builds them (samlocal.Bootstraps).
var (
	binOnce sync.Once
	binDir  string
	binErr  error
	built   = map[string]string{} // by template path + function
)

func rie(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "samlocal-"); binErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), dynalite.Scale(5*time.Minute))
		defer cancel()
		binErr = samlocal.BuildRIE(ctx, filepath.Join(binDir, "aws-lambda-rie"))
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "aws-lambda-rie")
}

var buildMu sync.Mutex

func bootstraps(t *testing.T, name string, p *samlocal.Plan) map[string]string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	out := map[string]string{}
	var missing []*samlocal.Function
	for _, fn := range p.Functions {
		if b := built[name+"/"+fn.Name]; b != "" {
			out[fn.Name] = b
		} else {
			missing = append(missing, fn)
		}
	}
	if len(missing) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), dynalite.Scale(5*time.Minute))
		defer cancel()
		got, err := samlocal.Bootstraps(ctx, &samlocal.Plan{Functions: missing}, nil, filepath.Join(binDir, name))
		if err != nil {
			t.Fatal(err)
		}
		for fn, b := range got {
			built[name+"/"+fn], out[fn] = b, b
		}
	}
	return out
}

// endpoint is DynamoDB Local where java is installed, else the harness's
// server (dynalite): one per test binary, the tests' stack names keeping
// their tables apart.
var (
	ddbOnce sync.Once
	ddb     *dynalite.Server
	ddbErr  error
)

func endpoint(t *testing.T) string {
	t.Helper()
	ddbOnce.Do(func() { ddb, ddbErr = dynalite.StartDynamoDBLocal(context.Background()) })
	if errors.Is(ddbErr, dynalite.ErrNoJava) {
		t.Logf("java is not on PATH: %s instead of DynamoDB Local", dynalite.ServerName())
		return dynalite.Endpoint(t)
	}
	if ddbErr != nil {
		t.Fatal(ddbErr)
	}
	return ddb.Endpoint()
}

type stack struct {
	*samlocal.Stack
	url string
}

// start runs the template at path locally with k sandboxes per routed
// function, on an HTTP server; stack names keep tests' tables apart.
func start(t *testing.T, path string, k int, env map[string]map[string]string) stack {
	t.Helper()
	dynalite.SkipIfDisabled(t)
	tpl, err := samlocal.ReadTemplate(path)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := samlocal.NewPlan(tpl, samlocal.PlanConfig{Region: dynalite.Region, StackName: strings.ToLower(dynalite.TableName(t))})
	if err != nil {
		t.Fatal(err)
	}
	r := rie(t)
	boots := bootstraps(t, filepath.Base(filepath.Dir(path)), plan)
	out := &testkit.SyncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), dynalite.Scale(2*time.Minute))
	defer cancel()
	st, err := samlocal.Start(ctx, samlocal.Config{Plan: plan, RIE: r, Bootstraps: boots, Sandboxes: k,
		Endpoint: endpoint(t), Region: dynalite.Region, Env: env, Output: out})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(st.Front)
	t.Cleanup(func() {
		srv.Close()
		st.Stop()
		if t.Failed() {
			t.Logf("sandbox output:\n%s", out.String())
		}
	})
	return stack{st, srv.URL}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

func call(t *testing.T, method, url, token, key, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return response{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Error(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

func want(t *testing.T, what string, r response, status int, replayed bool) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, status)
	}
	if got := r.header.Get("Idempotent-Replayed") == "true"; got != replayed {
		t.Fatalf("%s: Idempotent-Replayed %v, want %v", what, got, replayed)
	}
}

func wantGateway(t *testing.T, what string, r response, status int, message string) {
	t.Helper()
	if w := `{"message":"` + message + `"}`; r.status != status || string(r.body) != w {
		t.Fatalf("%s: %d %s, want API Gateway's own %d %s", what, r.status, r.body, status, w)
	}
}

const problems = "https://idemkit.dev/problems/"

// walkthrough is what every guarded route must answer: a fresh request,
// its replay byte for byte with Idempotent-Replayed, 422 problem+json on a
// changed body.
func walkthrough(t *testing.T, url, token, key, body, changed string) response {
	t.Helper()
	first := call(t, "POST", url, token, key, body)
	want(t, "fresh request", first, 201, false)
	replay := call(t, "POST", url, token, key, body)
	want(t, "replay", replay, 201, true)
	if !bytes.Equal(replay.body, first.body) {
		t.Fatalf("replay differs:\n%s\n%s", replay.body, first.body)
	}
	ch := call(t, "POST", url, token, key, changed)
	want(t, "changed body", ch, 422, false)
	if ch.header.Get("Content-Type") != "application/problem+json" || ch.json(t)["type"] != problems+"fingerprint-mismatch" {
		t.Fatalf("changed body: %v %s", ch.header, ch.body)
	}
	return first
}

// slow is how long a race's request keeps the function busy: long enough
// for its duplicates, sent at the same moment, to reach their sandboxes
// (a cold one initialises first) on a loaded machine.
var slow = fmt.Sprint(dynalite.Scale(3 * time.Second).Milliseconds())

// race sends k copies of a slow request at once: one runs, the others get
// 409 with Retry-After at once, one per sandbox.
func race(t *testing.T, pool *samlocal.Pool, url, token, key, body string, k int) response {
	t.Helper()
	before := pool.Invocations()
	start := make(chan struct{})
	answers := make(chan response, k)
	for range k {
		go func() {
			<-start
			answers <- call(t, "POST", url, token, key, body)
		}()
	}
	close(start)
	var fresh, conflicts int
	var winner response
	for range k {
		a := <-answers
		switch {
		case a.status == 201 && a.header.Get("Idempotent-Replayed") == "":
			fresh++
			winner = a
		case a.status == 409 && a.header.Get("Retry-After") != "" && a.json(t)["type"] == problems+"in-flight":
			conflicts++
		default:
			t.Errorf("duplicate: %d %v %s", a.status, a.header, a.body)
		}
	}
	if fresh != 1 || conflicts != k-1 {
		t.Fatalf("%d duplicates: %d ran, %d got 409; want 1 and %d", k, fresh, conflicts, k-1)
	}
	after := pool.Invocations()
	for i := range after {
		if after[i]-before[i] != 1 {
			t.Errorf("sandbox invocations before %v, after %v: want one duplicate on each sandbox", before, after)
			break
		}
	}
	again := call(t, "POST", url, token, key, body)
	want(t, "race replayed", again, 201, true)
	if !bytes.Equal(again.body, winner.body) {
		t.Fatal("the race's replay differs from its execution")
	}
	return winner
}

// conformOK runs idemkit conform's checks against a route of the stack.
func conformOK(t *testing.T, cfg conform.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), dynalite.Scale(2*time.Minute))
	defer cancel()
	res, err := conform.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		if c.Verdict != conform.Pass && !(c.Name == "missing-key" && c.Verdict == conform.Skipped) {
			t.Errorf("conform %s: %s: %s", c.Name, c.Verdict, c.Detail)
		}
	}
}

// TestOrdersTemplate: the repository's template.yaml, run by samlocal as
// deployed: the JWT authorizer's 401s, the walkthrough, tenants apart, API
// Gateway's 404, a stored 402, four concurrent duplicates one per sandbox,
// a function error as API Gateway's 500, and idemkit conform passing.
func TestOrdersTemplate(t *testing.T) {
	const k = 4
	st := start(t, filepath.Join(samlocal.RepoRoot(), "template.yaml"), k, nil)
	base := st.url
	alice, bob := st.Token("alice", time.Hour, nil), st.Token("bob", time.Hour, nil)
	order := `{"sku":"book-42","quantity":1,"amount_cents":1999,"currency":"EUR"}`

	is := st.Issuers["OrdersApi/JwtAuthorizer"]
	if is == nil {
		t.Fatalf("issuers %v: want OrdersApi/JwtAuthorizer", st.Issuers)
	}
	other, err := samlocal.NewIssuer(is.URL, is.Audience)
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{
		"no token":       "",
		"another key":    other.Token("alice", time.Hour, nil),
		"expired":        is.Token("alice", -time.Minute, nil),
		"wrong audience": is.Token("alice", time.Hour, map[string]any{"aud": "someone-else"}),
	} {
		wantGateway(t, name, call(t, "POST", base+"/orders", tok, "order-401", order), 401, "Unauthorized")
	}
	pool := st.Front.Pools["OrdersFunction"]
	if n := pool.Invocations(); n[0]+n[1]+n[2]+n[3] != 0 {
		t.Fatalf("the function ran for refused tokens: %v", n)
	}

	created := walkthrough(t, base+"/orders", alice, "order-1", order, strings.Replace(order, `"quantity":1`, `"quantity":2`, 1))
	id, _ := created.json(t)["id"].(string)
	if created.header.Get("Location") != "/orders/"+id {
		t.Fatalf("create order: headers %v", created.header)
	}
	bobs := call(t, "POST", base+"/orders", bob, "order-1", order)
	want(t, "bob's order", bobs, 201, false)
	want(t, "get order", call(t, "GET", base+"/orders/"+id, alice, "", ""), 200, false)
	want(t, "get order of another tenant", call(t, "GET", base+"/orders/"+id, bob, "", ""), 404, false)
	wantGateway(t, "unknown route", call(t, "DELETE", base+"/orders/"+id, alice, "", ""), 404, "Not Found")
	pay := func(card, extra string) string {
		return `{"order_id":"` + id + `","amount_cents":1999,"card":"` + card + `"` + extra + `}`
	}
	want(t, "declined", call(t, "POST", base+"/payments", alice, "pay-declined", pay("4000000000000002", "")), 402, false)
	want(t, "declined again", call(t, "POST", base+"/payments", alice, "pay-declined", pay("4000000000000002", "")), 402, true)

	race(t, pool, base+"/payments", alice, "pay-race", pay("4242424242424242", `,"delay_ms":`+slow), k)
	final := call(t, "GET", base+"/orders/"+id, alice, "", "")
	if pays, _ := final.json(t)["payments"].([]any); len(pays) != 1 {
		t.Fatalf("order after one captured payment: %s", final.body)
	}

	// idemkit conform, as a user runs it before going live: the race on a
	// slow payment so that the duplicates overlap it.
	conformOK(t, conform.Config{URL: base + "/payments", Header: http.Header{"Authorization": {"Bearer " + alice}},
		Body: []byte(pay("4242424242424242", "")), RaceBody: []byte(pay("4242424242424242", `,"delay_ms":`+slow)),
		Concurrency: k, GetURL: base + "/orders/" + id, RequireKey: true})
}

// TestOrdersFunctionErrorIs500: a function that fails (here its init, on
// a configuration it refuses) gets API Gateway's 500, never its output.
func TestOrdersFunctionErrorIs500(t *testing.T) {
	st := start(t, filepath.Join(samlocal.RepoRoot(), "template.yaml"), 1,
		map[string]map[string]string{"OrdersFunction": {"IDEMKIT_STORE": "bogus"}})
	r := call(t, "POST", st.url+"/orders", st.Token("alice", time.Hour, nil), "k", `{"sku":"book-42","quantity":1,"amount_cents":1999,"currency":"EUR"}`)
	wantGateway(t, "function error", r, 500, "Internal Server Error")
}

// TestLedgerTemplate: a second template unlike the first (the implicit
// HTTP API with its authorizer in Globals, a path parameter, an open
// route, two functions, an SQS worker, a SimpleTable): the walkthrough,
// the race, conform, and the worker invoked with an SQS batch reporting
// its failed message in batchItemFailures and running a duplicate once.
func TestLedgerTemplate(t *testing.T) {
	const k = 3
	st := start(t, filepath.Join(samlocal.ModuleDir(), "internal", "ledger", "template.yaml"), k, nil)
	base := st.url
	if is := st.Issuers["ServerlessHttpApi/Jwt"]; is == nil || is.URL != "https://auth.ledger.test/" || is.Audience != "ledger-api" {
		t.Fatalf("issuers %v: want the template's issuer and first audience", st.Issuers)
	}
	carol := st.Token("carol", time.Hour, nil)
	admin := st.Issuers["ServerlessHttpApi/Jwt"].Token("dave", time.Hour, map[string]any{"aud": "ledger-admin"})
	url := base + "/v1/accounts/acc-7/transfers"
	body := `{"to":"acc-9","amount_cents":1250}`

	want(t, "open route", call(t, "GET", base+"/v1/health", "", "", ""), 200, false)
	wantGateway(t, "no token", call(t, "POST", url, "", "t-1", body), 401, "Unauthorized")
	wantGateway(t, "method of another route", call(t, "GET", url, carol, "", ""), 404, "Not Found")
	first := walkthrough(t, url, carol, "t-1", body, `{"to":"acc-9","amount_cents":1251}`)
	if m := first.json(t); m["account"] != "acc-7" || first.header.Get("Location") == "" {
		t.Fatalf("transfer: %s %v", first.body, first.header)
	}
	want(t, "the second audience, another tenant", call(t, "POST", url, admin, "t-1", body), 201, false)
	want(t, "bad transfer, stored", call(t, "POST", url, carol, "t-bad", `{"to":""}`), 400, false)
	want(t, "bad transfer, replayed", call(t, "POST", url, carol, "t-bad", `{"to":""}`), 400, true)

	race(t, st.Front.Pools["TransfersFunction"], url, carol, "t-race", `{"to":"acc-9","amount_cents":5,"delay_ms":`+slow+`}`, k)
	conformOK(t, conform.Config{URL: url, Header: http.Header{"Authorization": {"Bearer " + carol}}, Body: []byte(body),
		RaceBody: []byte(`{"to":"acc-9","amount_cents":5,"delay_ms":` + slow + `}`), Concurrency: k, GetURL: base + "/v1/health", RequireKey: true})

	// The worker, with an SQS batch: t-1 settles, t-2 fails and is
	// reported, the redelivered t-1 (another message id, the same
	// transfer) is not settled twice.
	event, err := os.ReadFile(filepath.Join(samlocal.ModuleDir(), "internal", "ledger", "events", "settlements.json"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), dynalite.Scale(time.Minute))
	defer cancel()
	out, err := st.Invoke(ctx, "SettlementWorker", event)
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		BatchItemFailures []struct {
			ItemIdentifier string `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("worker answered %s: %v", out, err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m-2" {
		t.Fatalf("worker answered %s: want m-2 alone in batchItemFailures", out)
	}
	if _, err := st.Invoke(ctx, "NoSuchFunction", event); err == nil {
		t.Error("invoking a function the template lacks: no error")
	}
}
