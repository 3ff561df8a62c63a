package orders_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/testkit"
)

// The local server binary, built once per test binary.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func serverBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "orders-e2e-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "orders-local")
		cmd := exec.Command(goTool(), "build", "-o", binPath, "./cmd/local")
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = errors.New("go build ./cmd/local: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// goTool is the go command: go test puts its own GOROOT/bin first in PATH.
func goTool() string { return "go" }

// startServer runs the local server binary on a free port with env added
// to a clean environment, and returns its base URL. At cleanup it sends
// SIGINT and requires a clean exit.
func startServer(t *testing.T, env ...string) string {
	t.Helper()
	cmd := exec.Command(serverBinary(t), "-addr", "127.0.0.1:0")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "IDEMKIT_") && !strings.HasPrefix(kv, "ORDERS_") && !strings.HasPrefix(kv, "PORT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	stderr := &testkit.SyncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, r)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("server did not shut down cleanly on SIGINT: %v", err)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("server did not stop within 20 s of SIGINT")
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
	var first string
	select {
	case first = <-lines:
	case <-time.After(60 * time.Second):
		t.Fatalf("server printed nothing within 60 s; stderr:\n%s", stderr.String())
	}
	u := regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+`).FindString(first)
	if u == "" {
		t.Fatalf("first line %q names no URL; stderr:\n%s", first, stderr.String())
	}
	return u
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r *response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
	return m
}

type client struct {
	t    *testing.T
	base string
	mu   sync.Mutex
	ids  map[string]bool // every X-Request-Id seen
}

// do sends a request the function answers; token "" sends no
// Authorization, key "" no Idempotency-Key.
func (c *client) do(method, path, token, key, body string) *response {
	c.t.Helper()
	return c.send(method, path, token, key, body, true)
}

// gateway sends a request API Gateway answers itself, without invoking
// the function (no token, no route): its answer has no X-Request-Id.
func (c *client) gateway(method, path, token, key, body string) *response {
	c.t.Helper()
	return c.send(method, path, token, key, body, false)
}

func (c *client) send(method, path, token, key, body string, function bool) *response {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
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
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	rid := resp.Header.Get("X-Request-Id")
	if !function {
		if rid != "" {
			c.t.Errorf("%s %s -> %d: X-Request-Id %q on API Gateway's own answer", method, path, resp.StatusCode, rid)
		}
		return &response{resp.StatusCode, resp.Header, b}
	}
	if rid == "" {
		c.t.Errorf("%s %s -> %d: no X-Request-Id", method, path, resp.StatusCode)
	}
	c.mu.Lock()
	if c.ids[rid] {
		c.t.Errorf("%s %s -> %d: X-Request-Id %q was sent before", method, path, resp.StatusCode, rid)
	}
	c.ids[rid] = true
	c.mu.Unlock()
	return &response{resp.StatusCode, resp.Header, b}
}

func expect(t *testing.T, what string, r *response, status int, replayed bool) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: status %d, want %d; body %s", what, r.Status, status, r.Body)
	}
	if got := r.Header.Get("Idempotent-Replayed") == "true"; got != replayed {
		t.Fatalf("%s: Idempotent-Replayed %v, want %v", what, got, replayed)
	}
	ct := r.Header.Get("Content-Type")
	if status >= 400 && ct != "application/problem+json" {
		t.Fatalf("%s: Content-Type %q, want application/problem+json", what, ct)
	}
	if status < 400 && ct != "application/json" {
		t.Fatalf("%s: Content-Type %q, want application/json", what, ct)
	}
}

// expectGateway checks an answer API Gateway makes itself: status and
// {"message": message} as application/json.
func expectGateway(t *testing.T, what string, r *response, status int, message string) {
	t.Helper()
	want := `{"message":"` + message + `"}`
	if r.Status != status || string(r.Body) != want || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%s: %d %q %s, want %d application/json %s", what, r.Status, r.Header.Get("Content-Type"), r.Body, status, want)
	}
}

func problemType(t *testing.T, r *response) string {
	t.Helper()
	s, _ := r.json(t)["type"].(string)
	return s
}

func TestE2EMemory(t *testing.T) {
	t.Parallel()
	drive(t, startServer(t))
}

func TestE2EDynamoDB(t *testing.T) {
	t.Parallel()
	drive(t, startServer(t, dynamoEnv(t)...))
}

// TestE2EDuplicateRaceDynamoDB: the walkthrough's race of twelve
// concurrent duplicates, on the server of make run-dynamodb with its
// default limits: one execution (201), eleven 409s answered while it
// runs, none throttled (429), the payment charged once.
func TestE2EDuplicateRaceDynamoDB(t *testing.T) {
	t.Parallel()
	duplicateRace(t, startServer(t, dynamoEnv(t)...), 12)
}

// dynamoEnv is the environment of make run-dynamodb, on the test server
// and tables of t's own.
func dynamoEnv(t *testing.T) []string {
	ep := dynalite.Endpoint(t)
	table := dynalite.TableName(t)
	return []string{
		"IDEMKIT_STORE=dynamodb",
		"AWS_ENDPOINT_URL_DYNAMODB=" + ep,
		"IDEMKIT_CREATE_TABLE=1",
		"IDEMKIT_TABLE=" + table,
		"ORDERS_TABLE=" + table + "-orders",
		"AWS_REGION=" + dynalite.Region,
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull,
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// duplicateRace sends n copies of one slow payment at once, under one
// key, and requires one execution: one fresh 201, n-1 409 in-flight
// answers, each received before the 201 (they did not wait for it), no
// 429, and one payment on the order.
func duplicateRace(t *testing.T, base string, n int) {
	c := &client{t: t, base: base, ids: map[string]bool{}}
	created := c.do("POST", "/orders", "alice", "race-order", `{"sku":"book-42","quantity":1,"amount_cents":1999,"currency":"EUR"}`)
	expect(t, "create order", created, 201, false)
	id, _ := created.json(t)["id"].(string)
	pay := `{"order_id":"` + id + `","amount_cents":1999,"card":"4242424242424242","delay_ms":5000}`

	type answer struct {
		r     *response
		order int64 // position among the answers
	}
	var done atomic.Int64
	start := make(chan struct{})
	answers := make(chan answer, n)
	for range n {
		go func() {
			<-start
			r := c.do("POST", "/payments", "alice", "race-pay", pay)
			answers <- answer{r, done.Add(1)}
		}()
	}
	close(start)
	var fresh, conflicts, throttled int
	var winner answer
	var lastConflict int64
	for range n {
		a := <-answers
		switch {
		case a.r.Status == 201 && a.r.Header.Get("Idempotent-Replayed") == "":
			fresh++
			winner = a
		case a.r.Status == 409:
			if problemType(t, a.r) != kitProblems+"in-flight" || a.r.Header.Get("Retry-After") == "" {
				t.Errorf("409 without the in-flight problem or Retry-After: %v %s", a.r.Header, a.r.Body)
			}
			conflicts++
			lastConflict = max(lastConflict, a.order)
		case a.r.Status == 429:
			throttled++
		default:
			t.Errorf("duplicate: %d %s", a.r.Status, a.r.Body)
		}
	}
	if fresh != 1 || conflicts != n-1 || throttled != 0 {
		t.Fatalf("%d duplicates: %d executed (201), %d in flight (409), %d throttled (429); want 1, %d, 0", n, fresh, conflicts, throttled, n-1)
	}
	if lastConflict > winner.order {
		t.Errorf("a 409 came after the execution's 201: the duplicates waited for it")
	}
	final := c.do("GET", "/orders/"+id, "alice", "", "")
	expect(t, "order after the race", final, 200, false)
	if pays, _ := final.json(t)["payments"].([]any); len(pays) != 1 {
		t.Fatalf("order after %d duplicates of one payment: %s", n, final.Body)
	}
}

const kitProblems = "https://idemkit.dev/problems/"

// drive walks every route and status the example promises, over HTTP.
func drive(t *testing.T, base string) {
	c := &client{t: t, base: base, ids: map[string]bool{}}
	order := `{"sku":"book-42","quantity":1,"amount_cents":1999,"currency":"EUR"}`

	// 201 with Location and a server-made id.
	created := c.do("POST", "/orders", "alice", "order-1", order)
	expect(t, "create order", created, 201, false)
	o := created.json(t)
	id, _ := o["id"].(string)
	if _, err := uuid.Parse(id); err != nil {
		t.Fatalf("order id %q is not a UUID", id)
	}
	if loc := created.Header.Get("Location"); loc != "/orders/"+id {
		t.Fatalf("Location %q, want /orders/%s", loc, id)
	}
	if o["sku"] != "book-42" || o["quantity"] != 1.0 || o["amount_cents"] != 1999.0 || o["currency"] != "EUR" || o["created_at"] == nil {
		t.Fatalf("order body %s", created.Body)
	}

	// The retry replays it: same bytes, same Location, a new X-Request-Id.
	replay := c.do("POST", "/orders", "alice", "order-1", order)
	expect(t, "replayed order", replay, 201, true)
	if !bytes.Equal(replay.Body, created.Body) || replay.Header.Get("Location") != created.Header.Get("Location") {
		t.Fatalf("replay differs:\n%s\n%s", replay.Body, created.Body)
	}
	if replay.Header.Get("X-Request-Id") == created.Header.Get("X-Request-Id") {
		t.Fatalf("replay carries the original X-Request-Id")
	}

	// The same key with another body: 422.
	changed := c.do("POST", "/orders", "alice", "order-1", strings.Replace(order, `"quantity":1`, `"quantity":2`, 1))
	expect(t, "changed body", changed, 422, false)
	if problemType(t, changed) != kitProblems+"fingerprint-mismatch" {
		t.Fatalf("changed body: %s", changed.Body)
	}

	// Another tenant's key space is its own: bob's order-1 is a new order.
	bobs := c.do("POST", "/orders", "bob", "order-1", order)
	expect(t, "bob's order", bobs, 201, false)
	if bobs.json(t)["id"] == id {
		t.Fatalf("bob got alice's order")
	}

	// An invalid body is a business outcome: 400, replayed.
	bad := `{"sku":"book-42","quantity":0,"amount_cents":1999,"currency":"EUR"}`
	b1 := c.do("POST", "/orders", "alice", "bad-1", bad)
	expect(t, "invalid body", b1, 400, false)
	b2 := c.do("POST", "/orders", "alice", "bad-1", bad)
	expect(t, "invalid body again", b2, 400, true)
	if !bytes.Equal(b1.Body, b2.Body) {
		t.Fatalf("replayed 400 differs")
	}

	// No key: 400 from the kit.
	nokey := c.do("POST", "/orders", "alice", "", order)
	expect(t, "missing key", nokey, 400, false)
	if problemType(t, nokey) != kitProblems+"key-missing" {
		t.Fatalf("missing key: %s", nokey.Body)
	}

	// No token: 401 before the kit, so the key stays unused.
	unauth := c.gateway("POST", "/orders", "", "order-401", order)
	expectGateway(t, "missing auth", unauth, 401, "Unauthorized")
	if unauth.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("401 without WWW-Authenticate")
	}
	after := c.do("POST", "/orders", "alice", "order-401", order)
	expect(t, "authorized retry of a 401", after, 201, false)

	// GET: the owner sees it, another tenant does not.
	got := c.do("GET", "/orders/"+id, "alice", "", "")
	expect(t, "get order", got, 200, false)
	if g := got.json(t); g["id"] != id || g["paid_cents"] != 0.0 {
		t.Fatalf("get order: %s", got.Body)
	}
	expect(t, "get order of another tenant", c.do("GET", "/orders/"+id, "bob", "", ""), 404, false)
	expect(t, "get unknown order", c.do("GET", "/orders/"+uuid.NewString(), "alice", "", ""), 404, false)
	expect(t, "get malformed id", c.do("GET", "/orders/nope", "alice", "", ""), 404, false)
	expectGateway(t, "get without auth", c.gateway("GET", "/orders/"+id, "", "", ""), 401, "Unauthorized")
	expectGateway(t, "unknown route", c.gateway("DELETE", "/orders/"+id, "alice", "", ""), 404, "Not Found")

	pay := func(card string, extra string) string {
		return `{"order_id":"` + id + `","amount_cents":1999,"card":"` + card + `"` + extra + `}`
	}

	// A decline is a business outcome: 402, replayed.
	d1 := c.do("POST", "/payments", "alice", "pay-declined", pay("4000000000000002", ""))
	expect(t, "declined", d1, 402, false)
	expect(t, "declined again", c.do("POST", "/payments", "alice", "pay-declined", pay("4000000000000002", "")), 402, true)

	// An unavailable processor is transient: 503, never replayed.
	u1 := c.do("POST", "/payments", "alice", "pay-down", pay("4000000000000119", ""))
	expect(t, "processor down", u1, 503, false)
	u2 := c.do("POST", "/payments", "alice", "pay-down", pay("4000000000000119", ""))
	expect(t, "processor down, retried", u2, 503, false)

	// Paying an order the caller does not have: 404.
	expect(t, "pay bob's view of alice's order", c.do("POST", "/payments", "bob", "pay-x", pay("4242424242424242", "")), 404, false)

	// Two concurrent payments with one key: the second gets 409 +
	// Retry-After at once while the first (slow processor) runs.
	slow := pay("4242424242424242", `,"delay_ms":2000`)
	first := make(chan *response, 1)
	go func() { first <- c.do("POST", "/payments", "alice", "pay-slow", slow) }()
	var winner *response
	deadline := time.Now().Add(30 * time.Second)
	for winner == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no 409 for a duplicate of a running payment")
		}
		dup := c.do("POST", "/payments", "alice", "pay-slow", slow)
		switch {
		case dup.Status == 409:
			if problemType(t, dup) != kitProblems+"in-flight" || dup.Header.Get("Retry-After") == "" {
				t.Fatalf("409 without in-flight problem or Retry-After: %v %s", dup.Header, dup.Body)
			}
			winner = <-first
		case dup.Status == 201 && dup.Header.Get("Idempotent-Replayed") == "":
			// The duplicate claimed the key first: the other one got the 409.
			if r := <-first; r.Status != 409 || r.Header.Get("Retry-After") == "" {
				t.Fatalf("both ran? first %d %s", r.Status, r.Body)
			}
			winner = dup
		default:
			t.Fatalf("duplicate of a running payment: %d %s", dup.Status, dup.Body)
		}
	}
	expect(t, "slow payment", winner, 201, false)
	p := winner.json(t)
	if p["status"] != "captured" || p["id"] == nil {
		t.Fatalf("payment: %s", winner.Body)
	}
	again := c.do("POST", "/payments", "alice", "pay-slow", slow)
	expect(t, "slow payment replayed", again, 201, true)
	if !bytes.Equal(again.Body, winner.Body) {
		t.Fatalf("payment replay differs")
	}

	// Charged exactly once.
	final := c.do("GET", "/orders/"+id, "alice", "", "")
	expect(t, "order after payments", final, 200, false)
	f := final.json(t)
	if pays, _ := f["payments"].([]any); len(pays) != 1 || f["paid_cents"] != 1999.0 {
		t.Fatalf("order after one captured payment: %s", final.Body)
	}
}
