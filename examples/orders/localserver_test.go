package orders_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/memstore"
)

// localExample serves the example API, in memory, through the local server.
func localExample(t *testing.T) *httptest.Server {
	t.Helper()
	h, err := orders.Handler(orders.Options{Store: memstore.New(), Repo: &orders.MemRepo{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&orders.Local{Handler: h, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(srv.Close)
	return srv
}

func send(t *testing.T, method, u, key, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer alice")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestLocalProblemsBoundAndEscapeInput: what a problem repeats from the
// request (an order id in the path, an unknown member name in the body) is
// never echoed as markup, is bounded in size (a stored 400 too, and so its
// replay), and every answer says nosniff.
func TestLocalProblemsBoundAndEscapeInput(t *testing.T) {
	srv := localExample(t)
	script := "<script>alert(1)</script>"
	long := strings.Repeat("A", 100<<10)
	huge := strings.Repeat("m", 1<<20)
	order := `"sku":"book-42","quantity":1,"amount_cents":1999,"currency":"EUR"`
	for _, tc := range []struct {
		name, method, path, key, body string
		status                        int
		echoed                        string // what the detail or a reason starts to repeat
	}{
		{"script in path", "GET", "/orders/" + url.PathEscape(script), "", "", 404, script},
		{"long id in path", "GET", "/orders/" + long, "", "", 404, "No order AAAA"},
		{"script in unknown member", "POST", "/orders", "k-script", `{` + order + `,"` + script + `":1}`, 400, script},
		{"1 MiB unknown member", "POST", "/orders", "k-huge", `{` + order + `,"` + huge + `":1}`, 400, "mmmm"},
		{"1 MiB unknown member, replayed", "POST", "/orders", "k-huge", `{` + order + `,"` + huge + `":1}`, 400, "mmmm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := send(t, tc.method, srv.URL+tc.path, tc.key, tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q, want nosniff", got)
			}
			if strings.Contains(string(body), "<") {
				t.Errorf("body holds a raw '<': %.300s", body)
			}
			if len(body) > 2048 {
				t.Errorf("body is %d bytes: echoed input is not bounded", len(body))
			}
			var p orders.Problem
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatalf("not a problem: %v: %.300s", err, body)
			}
			text := p.Detail
			for _, ip := range p.InvalidParams {
				text += " " + ip.Name + " " + ip.Reason
			}
			if !strings.Contains(text, tc.echoed) {
				t.Errorf("problem does not say %q (decoded): %+v", tc.echoed, p)
			}
		})
	}
}

// TestProblemResponseBounds: every echoed field is cut to its bound on a
// rune boundary and marked with "…"; short text is left alone.
func TestProblemResponseBounds(t *testing.T) {
	params := make([]orders.InvalidParam, 100)
	for i := range params {
		params[i] = orders.InvalidParam{Name: strings.Repeat("é", 1000), Reason: strings.Repeat("x", 1000)}
	}
	p := orders.Problem{Type: orders.TypeValidation, Title: "t", Status: 400, Detail: strings.Repeat("é", 1000), InvalidParams: params}
	var got orders.Problem
	if err := json.Unmarshal([]byte(p.Response().Body), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.InvalidParams) != orders.MaxInvalidParams {
		t.Errorf("%d invalidParams, want %d", len(got.InvalidParams), orders.MaxInvalidParams)
	}
	check := func(field, s string, limit int) {
		if len(s) > limit || !utf8.ValidString(s) || !strings.HasSuffix(s, "…") {
			t.Errorf("%s: %d bytes (limit %d), valid UTF-8 %v, ends %q", field, len(s), limit, utf8.ValidString(s), s[max(0, len(s)-6):])
		}
	}
	check("detail", got.Detail, orders.MaxProblemDetail)
	for _, ip := range got.InvalidParams {
		check("name", ip.Name, orders.MaxParamName)
		check("reason", ip.Reason, orders.MaxParamReason)
	}
	if len(params[0].Name) != 2000 {
		t.Errorf("Response changed the caller's Problem")
	}
	short := orders.Problem{Type: orders.TypeNotFound, Title: "Not found", Status: 404, Detail: "No order 42."}
	if err := json.Unmarshal([]byte(short.Response().Body), &got); err != nil || got.Detail != "No order 42." {
		t.Errorf("short detail changed: %q %v", got.Detail, err)
	}
}

// TestLocalConcurrencyLimit: requests beyond Concurrency get API Gateway's
// throttling answer at once, without running the handler; a freed slot
// serves the next one.
func TestLocalConcurrencyLimit(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	calls := 0
	h := func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		calls++
		if calls == 1 {
			close(started)
			<-release
		}
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "{}"}, nil
	}
	srv := httptest.NewServer(&orders.Local{Handler: h, Concurrency: 1, Logger: slog.New(slog.DiscardHandler)})
	defer srv.Close()

	first := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("GET", srv.URL+"/orders/1", nil)
		req.Header.Set("Authorization", "Bearer alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-started
	resp, body := send(t, "GET", srv.URL+"/orders/2", "", "")
	if resp.StatusCode != http.StatusTooManyRequests || string(body) != `{"message":"Too Many Requests"}` {
		t.Errorf("second request: %d %s, want 429 Too Many Requests", resp.StatusCode, body)
	}
	close(release)
	if got := <-first; got != 200 {
		t.Errorf("first request: %d, want 200", got)
	}
	if resp, _ := send(t, "GET", srv.URL+"/orders/3", "", ""); resp.StatusCode != 200 {
		t.Errorf("after the slot was freed: %d, want 200", resp.StatusCode)
	}
	if calls != 2 {
		t.Errorf("handler ran %d times, want 2 (never for the throttled request)", calls)
	}
}

// TestNewLocalServerLimits: the local server bounds slow and idle
// connections and header size; its write timeout outlasts an invocation.
func TestNewLocalServerLimits(t *testing.T) {
	srv := orders.NewLocalServer(http.NotFoundHandler(), orders.DefaultLocalTimeout, nil)
	if srv.ReadHeaderTimeout <= 0 || srv.ReadHeaderTimeout > srv.ReadTimeout {
		t.Errorf("ReadHeaderTimeout %v (ReadTimeout %v)", srv.ReadHeaderTimeout, srv.ReadTimeout)
	}
	if srv.ReadTimeout <= 0 || srv.ReadTimeout > 30*time.Second {
		t.Errorf("ReadTimeout %v, want set, at most 30 s", srv.ReadTimeout)
	}
	if srv.IdleTimeout <= 0 || srv.IdleTimeout > 30*time.Second {
		t.Errorf("IdleTimeout %v, want set, at most 30 s", srv.IdleTimeout)
	}
	if srv.WriteTimeout <= orders.DefaultLocalTimeout {
		t.Errorf("WriteTimeout %v cuts an invocation of %v", srv.WriteTimeout, orders.DefaultLocalTimeout)
	}
	if srv.MaxHeaderBytes <= 0 || srv.MaxHeaderBytes > 64<<10 {
		t.Errorf("MaxHeaderBytes %d, want set, at most 64 KB", srv.MaxHeaderBytes)
	}
	if srv.ErrorLog == nil {
		t.Error("ErrorLog not set")
	}
}
