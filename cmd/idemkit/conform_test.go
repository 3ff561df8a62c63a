package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
)

// guarded is a POST /things behind the middleware, in the tenant of the
// Authorization header.
func guarded(t *testing.T) *httptest.Server {
	t.Helper()
	g := testguard.Mem(t)
	mux := http.NewServeMux()
	n := 0
	mux.HandleFunc("POST /things", func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]int{"n": n})
	})
	tenant := func(_ context.Context, r *http.Request) (string, error) {
		return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), nil
	}
	srv := httptest.NewServer(httpmw.New(g, httpmw.Config{Tenant: tenant})(mux))
	t.Cleanup(srv.Close)
	return srv
}

// TestConformCommand: the command's exit code and outputs, on the
// endpoint itself and behind a proxy that drops the request's key.
func TestConformCommand(t *testing.T) {
	srv := guarded(t)
	u, _ := url.Parse(srv.URL)
	p := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		pr.Out.Header.Del("Idempotency-Key")
	}}
	stripping := httptest.NewServer(p)
	t.Cleanup(stripping.Close)

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"passes, table", []string{srv.URL + "/things", "--header", "Authorization: Bearer alice", "--body", `{"a":1}`, "--require-key", "--key-prefix", "ci-"},
			exitOK, []string{"PASS          replay", "Result: conforms", "keys ci-"}, ""},
		{"passes, json, URL last", []string{"--header", "Authorization: Bearer alice", "--body", `{"a":1}`, "--output", "json", srv.URL + "/things"},
			exitOK, []string{`"ok": true`, `"name": "concurrent-duplicate"`}, ""},
		{"fails behind a proxy dropping the key", []string{stripping.URL + "/things", "--header", "Authorization: Bearer alice", "--body", `{"a":1}`},
			exitError, []string{"FAIL", "request header does not reach the guard", "Result: FAILED"}, ""},
		{"no URL", []string{"--body", `{}`}, exitUsage, nil, "URL is required"},
		{"no body", []string{srv.URL}, exitUsage, nil, "sample body is required"},
		{"bad header", []string{srv.URL, "--body", "{}", "--header", "nocolon"}, exitUsage, nil, "Name: value"},
		{"GET", []string{srv.URL, "--body", "{}", "--method", "GET"}, exitUsage, nil, "ignores the Idempotency-Key"},
		{"unreachable", []string{"http://127.0.0.1:1/x", "--body", "{}"}, exitError, nil, "127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runWith(t, Env{}, append([]string{"conform"}, tc.args...)...)
			wantCode(t, code, tc.code, stdout, stderr)
			testkit.Has(t, "stdout", stdout, tc.stdout, nil)
			testkit.Has(t, "stderr", stderr, []string{tc.stderr}, nil)
		})
	}
}
