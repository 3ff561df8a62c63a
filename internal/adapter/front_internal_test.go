package adapter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/internal/clip"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
)

// neverReplayed are the response headers that describe one exchange, not
// its outcome: a replay must never carry them, so no Config may list them.
var neverReplayed = []string{
	"Set-Cookie", "set-cookie2", "Date", "Retry-After", "Age", "Expires",
	"X-Request-Id", "X-Amzn-RequestId", "x-amz-request-id", "X-Amz-Apigw-Id", "X-Amzn-Trace-Id", "X-Amz-Cf-Id",
	"X-Correlation-Id", "Traceparent", "Tracestate", "Baggage", "Request-Id",
	"Connection", "Keep-Alive", "Transfer-Encoding", "Upgrade", "Trailer", "TE", "Content-Length",
	"Idempotent-Replayed", "RateLimit", "RateLimit-Policy", "ratelimit-reset", "X-RateLimit-Remaining", "X-Rate-Limit-Limit",
	"Proxy-Authenticate", "Proxy-Connection", "X-B3-TraceId", "B3", "Via", "Server-Timing", "Cf-Ray",
	// Not ASCII tokens: U+017F folds to "s" under Unicode case folding.
	"\u017fet-cookie", "Set Cookie", "X-Ordé",
}

// TestNewRefuses: httpconfig.Settings that cannot be used are refused when the front
// is built, never at request time: a nil guard, a negative MaxKeyLen, a
// method (in Methods or a Routes key) safe by definition, not upper case
// or not a token, a header that must never be replayed (every one of
// them, any case), invalid fingerprint options.
func TestNewRefuses(t *testing.T) {
	g := testguard.Mem(t)
	cases := map[string]httpconfig.Settings{
		"negative MaxKeyLen":        {MaxKeyLen: -1},
		"empty replay header":       {ReplayHeaders: []string{""}},
		"bad fingerprint":           {Fingerprint: fingerprint.Options{Mode: 9}},
		"bad route fingerprint":     {Routes: map[string]httpconfig.Route{"POST /orders": {Fingerprint: &fingerprint.Options{MaxDepth: -1}}}},
		"empty method":              {Methods: []string{"POST", ""}},
		"Query with IgnoreQuery":    {Fingerprint: fingerprint.Options{Query: []string{"a"}, IgnoreQuery: true}},
		"fingerprint empty header":  {Fingerprint: fingerprint.Options{Headers: []string{""}}},
		"route Include bad pointer": {Routes: map[string]httpconfig.Route{"POST /orders": {Fingerprint: &fingerprint.Options{Include: []string{"amount"}}}}},
		"route without a path":      {Routes: map[string]httpconfig.Route{"POST": {KeyOptional: true}}},
	}
	// Methods are case-sensitive: a lower-case one names no method a
	// client means, and a method must be a token.
	for _, m := range []string{"GET", "get", "HEAD", "Head", "OPTIONS", "options", "TRACE", "trace", "CONNECT", "connect", "PO ST"} {
		cases["method "+m] = httpconfig.Settings{Methods: []string{"POST", m}}
	}
	for _, m := range []string{"post", "Post", "pOST", "patch", "put", "purge", "POST\t", "PÖST", "POST/1", "POST(1)"} {
		cases["method "+m] = httpconfig.Settings{Methods: []string{"POST", m}}
		cases["route method "+m] = httpconfig.Settings{Routes: map[string]httpconfig.Route{m + " /orders": {KeyOptional: true}}}
	}
	for _, h := range neverReplayed {
		cases["replay "+h] = httpconfig.Settings{ReplayHeaders: []string{"X-Order-Id", h}}
		cases["replay "+strings.ToUpper(h)] = httpconfig.Settings{ReplayHeaders: []string{strings.ToUpper(h)}}
	}
	for name, o := range cases {
		if a, err := New(g, o); err == nil {
			t.Errorf("%s: New accepted %+v: %v", name, o, a.replay)
		}
	}
	if _, err := New(nil, httpconfig.Settings{}); err == nil {
		t.Error("New accepted a nil guard")
	}
	a, err := New(g, httpconfig.Settings{MaxKeyLen: 0, Methods: []string{"PUT", "DELETE", "PURGE"}, ReplayHeaders: []string{"x-order-id", "ETag"},
		Routes: map[string]httpconfig.Route{"PUT /orders/{id}": {KeyOptional: true}, "POST $default": {}}})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Guarded("PUT") || !a.Guarded("DELETE") || !a.Guarded("PURGE") || a.Guarded("POST") {
		t.Errorf("methods %v: want PUT, DELETE and PURGE only", a.methods)
	}
	if want := []string{"Content-Type", "Content-Encoding", "Location", "X-Order-Id", "Etag"}; !reflect.DeepEqual(a.replay, want) {
		t.Errorf("replay allow-list %v, want %v", a.replay, want)
	}
}

// TestOperation: the operation is the method as sent (RFC 9110: methods
// are case-sensitive, "post" is not "POST") and the concrete
// path, or with RouteTemplate the route template, unless the template is
// greedy ("{proxy+}", "$default") or absent, which names no single
// operation: then the concrete path again.
func TestOperation(t *testing.T) {
	g := testguard.Mem(t)
	plain, err := New(g, httpconfig.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := New(g, httpconfig.Settings{RouteTemplate: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path, template string
		plain, tmpl            string
	}{
		{"POST", "/orders/1", "/orders/{id}", "POST /orders/1", "POST /orders/{id}"},
		{"post", "/orders/1", "/orders/{id}", "post /orders/1", "post /orders/{id}"},
		{"Patch", "/orders/1", "", "Patch /orders/1", "Patch /orders/1"},
		{"POST", "/orders/1", "/{proxy+}", "POST /orders/1", "POST /orders/1"},
		{"POST", "/orders/1", "/orders/{rest+}", "POST /orders/1", "POST /orders/1"},
		{"POST", "/orders/1", "$default", "POST /orders/1", "POST /orders/1"},
	} {
		r := &Request{Method: tc.method, Path: tc.path, Template: tc.template}
		if got := plain.Operation(r); got != tc.plain {
			t.Errorf("Operation(%s %s, template %q) = %q, want %q", tc.method, tc.path, tc.template, got, tc.plain)
		}
		if got := tmpl.Operation(r); got != tc.tmpl {
			t.Errorf("RouteTemplate: Operation(%s %s, template %q) = %q, want %q", tc.method, tc.path, tc.template, got, tc.tmpl)
		}
	}
}

// TestFilterHeaderEmptyMulti: a name whose multi-value list is empty
// delivers nothing from it; its single value, which API Gateway delivers,
// is the one stored.
func TestFilterHeaderEmptyMulti(t *testing.T) {
	a, err := New(testguard.Mem(t), httpconfig.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	got := a.FilterHeader(map[string]string{"Location": "/orders/1", "Content-Type": "application/json"},
		map[string][]string{"Location": {}, "content-type": nil})
	want := http.Header{"Location": {"/orders/1"}, "Content-Type": {"application/json"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FilterHeader = %v, want %v", got, want)
	}
}

// TestLambdaBody: a snapshot body is returned as a Lambda proxy response
// must carry it: valid UTF-8 as it is, a base64 body as it is with its
// flag, and binary bytes stored without the flag (by httpmw) base64
// encoded with the flag, so that the runtime's JSON string does not
// replace them.
func TestLambdaBody(t *testing.T) {
	for _, tc := range []struct {
		snap    idemkit.Snapshot
		body    string
		flagged bool
	}{
		{idemkit.Snapshot{Body: []byte(`{"id":"ord_1"}`)}, `{"id":"ord_1"}`, false},
		{idemkit.Snapshot{Body: []byte("AP/+gA=="), Base64: true}, "AP/+gA==", true},
		{idemkit.Snapshot{Body: []byte{0x00, 0xff, 0xfe, 0x80}}, "AP/+gA==", true},
		{idemkit.Snapshot{Body: []byte("caf\xe9")}, "Y2Fm6Q==", true},
		{idemkit.Snapshot{}, "", false},
	} {
		body, flagged := LambdaBody(&tc.snap)
		if body != tc.body || flagged != tc.flagged {
			t.Errorf("LambdaBody(%q, base64 %v) = %q, %v; want %q, %v", tc.snap.Body, tc.snap.Base64, body, flagged, tc.body, tc.flagged)
		}
	}
}

// TestSingleSplit: stored headers become a Lambda response's fields: a
// single-value field joins several values with ", " (as HTTP folds
// lines), and Split keeps a name with several values only in the
// multi-value field.
func TestSingleSplit(t *testing.T) {
	h := http.Header{"Link": {"</a>; rel=a", "</b>; rel=b"}, "Location": {"/orders/1"}, "Vary": {}}
	if got, want := Single(h, 0), map[string]string{"Link": "</a>; rel=a, </b>; rel=b", "Location": "/orders/1", "Vary": ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("Single = %q, want %q", got, want)
	}
	single, multi := Split(h, 0)
	if want := map[string]string{"Location": "/orders/1"}; !reflect.DeepEqual(single, want) {
		t.Errorf("Split single = %q, want %q", single, want)
	}
	if want := map[string][]string{"Link": {"</a>; rel=a", "</b>; rel=b"}}; !reflect.DeepEqual(multi, want) {
		t.Errorf("Split multi = %q, want %q", multi, want)
	}
	if _, multi := Split(http.Header{"Location": {"/x"}}, 0); multi != nil {
		t.Errorf("Split of single values: multi %v, want nil", multi)
	}
}

// TestValuesDeterministic: the key header's values under several spellings
// come in one order whatever the map order, so a request whose lines are
// invalid in two ways is refused with the same reason on every retry. A
// name only in multi adds all its values; one only in single its one.
func TestValuesDeterministic(t *testing.T) {
	for _, tc := range []struct {
		name   string
		single map[string]string
		multi  map[string][]string
		want   []string
	}{
		{"single spellings", map[string]string{"Idempotency-Key": `"open`, "idempotency-key": "bad\x01", "IDEMPOTENCY-KEY": "k"}, nil, []string{`"open`, "bad\x01", "k"}},
		{"multi spellings", nil, map[string][]string{"Idempotency-Key": {"z"}, "idempotency-key": {"b", "a"}}, []string{"a", "b", "z"}},
		{"one multi name", nil, map[string][]string{"Idempotency-Key": {"z", "a"}}, []string{"z", "a"}},
		{"multi and single", map[string]string{"idempotency-key": "m"}, map[string][]string{"Idempotency-Key": {"z", "a"}}, []string{"a", "m", "z"}},
	} {
		for range 50 {
			if got := Values(tc.single, tc.multi, "Idempotency-Key"); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%s: Values = %q, want %q", tc.name, got, tc.want)
			}
		}
	}
}

// TestKeyMissingNamesHeader: a request without the key is told which
// header to send: the configured one, not the default.
func TestKeyMissingNamesHeader(t *testing.T) {
	a, err := New(testguard.Mem(t), httpconfig.Settings{Header: "X-Request-Key"})
	if err != nil {
		t.Fatal(err)
	}
	tenant := func(context.Context) (string, error) { return "t", nil }
	_, p := a.request(context.Background(), &Request{Method: "POST", Path: "/orders", Tenant: tenant})
	if p == nil || p.Type != httpproblem.TypeKeyMissing || !strings.Contains(p.Detail, "X-Request-Key header") {
		t.Fatalf("problem %+v, want key-missing naming X-Request-Key", p)
	}
}

// TestRefuseScope: a request the adapter refuses itself is reported with
// the scope known so far: its tenant only when Tenant gave one without an
// error (as a request that reached the guard), its key only when valid.
func TestRefuseScope(t *testing.T) {
	var got []observe.Event
	g, err := idemkit.New(idemkit.Config{Store: memstore.New(), Observer: observe.ObserverFunc(func(_ context.Context, e observe.Event) {
		got = append(got, e)
	})})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(g, httpconfig.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	refusal := errors.New("body too large")
	for _, tc := range []struct {
		name   string
		tenant func(context.Context) (string, error)
		key    []string
		want   idemkit.Scope
	}{
		{"known", func(context.Context) (string, error) { return "acme", nil }, []string{"k"}, idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k"}},
		{"tenant error", func(context.Context) (string, error) { return "acme", errors.New("token expired") }, []string{"k"}, idemkit.Scope{Operation: "POST /orders", Key: "k"}},
		{"invalid key", func(context.Context) (string, error) { return "acme", nil }, []string{"a", "b"}, idemkit.Scope{Tenant: "acme", Operation: "POST /orders"}},
		{"no Tenant", nil, nil, idemkit.Scope{Operation: "POST /orders"}},
	} {
		got = nil
		a.Refuse(context.Background(), &Request{Method: "POST", Path: "/orders", Key: tc.key, Tenant: tc.tenant}, refusal)
		if len(got) != 1 || (idemkit.Scope{Tenant: got[0].Tenant, Operation: got[0].Operation, Key: got[0].Key}) != tc.want || !errors.Is(got[0].Err, refusal) {
			t.Errorf("%s: events %+v, want one refusal with scope %+v", tc.name, got, tc.want)
		}
	}
}

// TestLogUnobserved: without an Observer a store failure is logged, unless
// the caller had cancelled its request before the claim (no store fault);
// a cancelled request whose claim may be stored and could not be freed is
// still logged, as an operator may have to see to its key.
func TestLogUnobserved(t *testing.T) {
	var logs strings.Builder
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	g := testguard.Mem(t)
	live := context.Background()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	storeErr := &idemkit.StoreError{Op: "claim", Err: context.Canceled}
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		err    error
		logged bool
	}{
		{"store down", live, &idemkit.StoreError{Op: "claim", Err: errors.New("throttled")}, true},
		{"corrupt record", live, fmt.Errorf("get: %w", idemkit.ErrCorruptRecord), true},
		{"refusal", live, idemkit.ErrFingerprintMismatch, false},
		{"caller gone before the claim", gone, storeErr, false},
		{"caller gone, claim not freed", gone, &idemkit.ClaimUnknownError{Err: storeErr}, true},
	} {
		logs.Reset()
		logUnobserved(tc.ctx, g, idemkit.Scope{Operation: "POST /orders"}, tc.err)
		if logged := strings.Contains(logs.String(), "idemkit: store failure"); logged != tc.logged {
			t.Errorf("%s: logged %v, want %v: %s", tc.name, logged, tc.logged, logs.String())
		}
	}
	// A line stays bounded whatever the operation and the error.
	logs.Reset()
	big := strings.Repeat("x", 900<<10)
	logUnobserved(live, g, idemkit.Scope{Operation: "POST /" + big}, &idemkit.StoreError{Op: "claim", Err: errors.New(big)})
	if n := logs.Len(); n == 0 || n > 3*clip.MaxLogField {
		t.Errorf("a %d-byte line", n)
	}
}

// TestFilterSentCanonical: a net/http handler that writes header names in
// other spellings (into the map directly) has them stored under the
// canonical name, one entry per name, spellings' values in bytewise
// order of the spellings.
func TestFilterSentCanonical(t *testing.T) {
	a, err := New(testguard.Mem(t), httpconfig.Settings{ReplayHeaders: []string{"X-Order-Id"}})
	if err != nil {
		t.Fatal(err)
	}
	got := a.FilterSent(http.Header{"content-type": {"text/plain"}, "Content-Type": {"application/json"}, "location": {"/orders/1"},
		"x-order-id": {"ord_1"}, "Date": {"today"}})
	want := http.Header{"Content-Type": {"application/json", "text/plain"}, "Location": {"/orders/1"}, "X-Order-Id": {"ord_1"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FilterSent = %v, want %v", got, want)
	}
}
