package lambdarie_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit/internal/dynalite"
	"github.com/idemkit/idemkit/internal/lambdarie"
)

func TestMain(m *testing.M) {
	code := dynalite.Run(m)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// The bootstrap (make build, host architecture) and aws-lambda-rie, built
// once per test binary.
var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func binaries(t *testing.T) (rie, bootstrap string) {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "lambdarie-"); binErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), dynalite.Scale(5*time.Minute))
		defer cancel()
		if binErr = lambdarie.BuildBootstrap(ctx, lambdarie.RepoRoot(), filepath.Join(binDir, "bootstrap")); binErr != nil {
			return
		}
		binErr = lambdarie.BuildRIE(ctx, filepath.Join(binDir, "aws-lambda-rie"))
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "aws-lambda-rie"), filepath.Join(binDir, "bootstrap")
}

// endpoint is DynamoDB Local where java is installed, else the harness's
// server (dynalite).
func endpoint(t *testing.T) string {
	t.Helper()
	s, err := dynalite.StartDynamoDBLocal(context.Background())
	if errors.Is(err, dynalite.ErrNoJava) {
		t.Logf("java is not on PATH: %s instead of DynamoDB Local", dynalite.ServerName())
		return dynalite.Endpoint(t)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	t.Logf("DynamoDB Local at %s", s.Endpoint())
	return s.Endpoint()
}

// startStack runs template.yaml locally: k sandboxes behind the front,
// on an HTTP server.
func startStack(t *testing.T, k int, extraEnv ...string) (*lambdarie.Stack, string) {
	t.Helper()
	dynalite.SkipIfDisabled(t)
	rie, bootstrap := binaries(t)
	out := &syncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), dynalite.Scale(2*time.Minute))
	defer cancel()
	table := dynalite.TableName(t)
	st, err := lambdarie.StartStack(ctx, lambdarie.StackConfig{RIE: rie, Bootstrap: bootstrap, Sandboxes: k,
		Endpoint: endpoint(t), Region: dynalite.Region, Tables: [2]string{table, table + "-orders"},
		ExtraEnv: extraEnv, Output: out})
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
	return st, srv.URL
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
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
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
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
	if w := `{"message":"` + message + `"}`; r.status != status || string(r.body) != w || r.header.Get("X-Request-Id") != "" {
		t.Fatalf("%s: %d %s (X-Request-Id %q), want API Gateway's own %d %s", what, r.status, r.body, r.header.Get("X-Request-Id"), status, w)
	}
}

const problems = "https://idemkit.dev/problems/"

// TestWalkthroughUnderEmulator: the deployed bootstrap, under Amazon's
// runtime emulator in four sandboxes behind the HTTP API's stand-in,
// answers the walkthrough as deployed: the JWT authorizer's 401s, replays,
// 422, tenants apart, API Gateway's 404, a stored 402; and four concurrent
// duplicates, one per sandbox, execute once, the others getting 409 at
// once.
func TestWalkthroughUnderEmulator(t *testing.T) {
	const k = 4
	st, base := startStack(t, k)
	alice, bob := st.Issuer.Token("alice", time.Hour, nil), st.Issuer.Token("bob", time.Hour, nil)
	order := `{"sku":"book-42","quantity":1,"amount_cents":1999,"currency":"EUR"}`

	// The authorizer refuses before the function runs.
	other, err := lambdarie.NewIssuer(st.Issuer.URL, st.Issuer.Audience)
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{
		"no token":       "",
		"not a JWT":      "alice",
		"another key":    other.Token("alice", time.Hour, nil),
		"expired":        st.Issuer.Token("alice", -time.Minute, nil),
		"wrong issuer":   st.Issuer.Token("alice", time.Hour, map[string]any{"iss": "https://elsewhere.invalid"}),
		"wrong audience": st.Issuer.Token("alice", time.Hour, map[string]any{"aud": "someone-else"}),
	} {
		r := call(t, "POST", base+"/orders", tok, "order-401", order)
		wantGateway(t, name, r, 401, "Unauthorized")
		if r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", name)
		}
	}
	if got := st.Front.Invocations(); sum(got) != 0 {
		t.Fatalf("the function ran for refused tokens: %v", got)
	}

	created := call(t, "POST", base+"/orders", alice, "order-1", order)
	want(t, "create order", created, 201, false)
	id, _ := created.json(t)["id"].(string)
	if created.header.Get("Location") != "/orders/"+id || created.header.Get("X-Request-Id") == "" {
		t.Fatalf("create order: headers %v", created.header)
	}
	replay := call(t, "POST", base+"/orders", alice, "order-1", order)
	want(t, "replayed order", replay, 201, true)
	if !bytes.Equal(replay.body, created.body) {
		t.Fatalf("replay differs:\n%s\n%s", replay.body, created.body)
	}
	changed := call(t, "POST", base+"/orders", alice, "order-1", strings.Replace(order, `"quantity":1`, `"quantity":2`, 1))
	want(t, "changed body", changed, 422, false)
	if changed.json(t)["type"] != problems+"fingerprint-mismatch" {
		t.Fatalf("changed body: %s", changed.body)
	}
	bobs := call(t, "POST", base+"/orders", bob, "order-1", order)
	want(t, "bob's order", bobs, 201, false)
	if bobs.json(t)["id"] == id {
		t.Fatal("bob got alice's order")
	}
	want(t, "the order after the 401s", call(t, "POST", base+"/orders", alice, "order-401", order), 201, false)
	want(t, "get order", call(t, "GET", base+"/orders/"+id, alice, "", ""), 200, false)
	want(t, "get order of another tenant", call(t, "GET", base+"/orders/"+id, bob, "", ""), 404, false)
	wantGateway(t, "unknown route", call(t, "DELETE", base+"/orders/"+id, alice, "", ""), 404, "Not Found")

	pay := func(card, extra string) string {
		return `{"order_id":"` + id + `","amount_cents":1999,"card":"` + card + `"` + extra + `}`
	}
	want(t, "declined", call(t, "POST", base+"/payments", alice, "pay-declined", pay("4000000000000002", "")), 402, false)
	want(t, "declined again", call(t, "POST", base+"/payments", alice, "pay-declined", pay("4000000000000002", "")), 402, true)

	// k duplicates at once: one per sandbox, one execution.
	before := st.Front.Invocations()
	slow := pay("4242424242424242", `,"delay_ms":3000`)
	type answer struct {
		r     response
		order int64
	}
	var done atomic.Int64
	start := make(chan struct{})
	answers := make(chan answer, k)
	for range k {
		go func() {
			<-start
			r := call(t, "POST", base+"/payments", alice, "pay-race", slow)
			answers <- answer{r, done.Add(1)}
		}()
	}
	close(start)
	var fresh, conflicts int
	var winner answer
	var lastConflict int64
	for range k {
		a := <-answers
		switch {
		case a.r.status == 201 && a.r.header.Get("Idempotent-Replayed") == "":
			fresh++
			winner = a
		case a.r.status == 409 && a.r.json(t)["type"] == problems+"in-flight" && a.r.header.Get("Retry-After") != "":
			conflicts++
			lastConflict = max(lastConflict, a.order)
		default:
			t.Errorf("duplicate: %d %v %s", a.r.status, a.r.header, a.r.body)
		}
	}
	if fresh != 1 || conflicts != k-1 {
		t.Fatalf("%d duplicates: %d executed, %d got 409; want 1 and %d", k, fresh, conflicts, k-1)
	}
	if lastConflict > winner.order {
		t.Errorf("a 409 came after the execution's 201: a duplicate waited")
	}
	after := st.Front.Invocations()
	for i := range after {
		if after[i]-before[i] != 1 {
			t.Errorf("sandbox invocations before %v, after %v: want one duplicate on each sandbox", before, after)
			break
		}
	}
	again := call(t, "POST", base+"/payments", alice, "pay-race", slow)
	want(t, "payment replayed", again, 201, true)
	if !bytes.Equal(again.body, winner.r.body) {
		t.Fatal("payment replay differs")
	}
	final := call(t, "GET", base+"/orders/"+id, alice, "", "")
	want(t, "order after the race", final, 200, false)
	if pays, _ := final.json(t)["payments"].([]any); len(pays) != 1 {
		t.Fatalf("order after one captured payment: %s", final.body)
	}
}

// TestFunctionErrorIs500: a function that fails (here its init, on a
// configuration it refuses) gets API Gateway's 500, never its own output.
func TestFunctionErrorIs500(t *testing.T) {
	st, base := startStack(t, 1, "IDEMKIT_STORE=bogus")
	tok := st.Issuer.Token("alice", time.Hour, nil)
	r := call(t, "POST", base+"/orders", tok, "k", `{"sku":"book-42","quantity":1,"amount_cents":1999,"currency":"EUR"}`)
	wantGateway(t, "function error", r, 500, "Internal Server Error")
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
