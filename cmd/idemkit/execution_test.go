package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/observe"
)

// TestInspectExecutionID: inspect --path shows the execution ID the
// record's handler got (idemkit.ExecutionID), for a request left
// indeterminate by a handler whose outcome is unknown, with and without
// the service's ExecutionSecret and however its fingerprint reads the
// query; so an operator maps a stuck key to the writes it would have made.
func TestInspectExecutionID(t *testing.T) {
	for _, tc := range []struct {
		name   string
		secret string
		fp     fingerprint.Options
		flags  []string // inspect's flags beside --path
	}{
		{name: "defaults"},
		{name: "secret", secret: "0123456789abcdef0123", flags: []string{"--execution-secret-env", "ORDERS_EXEC_SECRET"}},
		{name: "query ignored", fp: fingerprint.Options{IgnoreQuery: true}, flags: []string{"--ignore-query"}},
		{name: "query selected", fp: fingerprint.Options{Query: []string{"currency", "mode"}}, flags: []string{"--query", "currency,mode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.env.Getenv = func(name string) string {
				if name == "ORDERS_EXEC_SECRET" {
					return tc.secret
				}
				return ""
			}
			g, err := idemkit.New(idemkit.Config{Store: f.store, ExecutionSecret: []byte(tc.secret),
				Observer: observe.ObserverFunc(func(context.Context, observe.Event) {})})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			mw := httpmw.New(g, httpmw.Config{
				Tenant:   func(context.Context, *http.Request) (string, error) { return "acme", nil },
				Settings: httpconfig.Settings{RouteTemplate: true, Fingerprint: tc.fp},
			})
			h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, _ = idemkit.ExecutionID(r.Context())
				httpmw.Fail(r.Context(), fmt.Errorf("payment provider timed out: %w", idemkit.ErrOutcomeUnknown))
			}))
			const path = "/orders/42/pay?mode=card&currency=EUR"
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{"amount":10}`))
			req.Pattern = "POST /orders/{id}/pay"
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "pay-1")
			h.ServeHTTP(httptest.NewRecorder(), req)
			if got == "" {
				t.Fatal("the handler did not run under a guard")
			}
			sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders/{id}/pay", Key: "pay-1"}

			code, stdout, stderr := f.run(append(append([]string{"inspect", "--path", path}, tc.flags...), scopeArgs(sc)...)...)
			wantCode(t, code, exitOK, stdout, stderr)
			if !strings.Contains(stdout, "State         indeterminate") || !strings.Contains(stdout, "Execution ID  "+got+"\n") {
				t.Errorf("inspect shows no execution ID %s of an indeterminate record:\n%s", got, stdout)
			}
			code, stdout, stderr = f.run(append(append([]string{"inspect", "--output", "json", "--path", path}, tc.flags...), scopeArgs(sc)...)...)
			wantCode(t, code, exitOK, stdout, stderr)
			if x := decode[recordJSON](t, stdout).ExecutionID; x != got {
				t.Errorf("execution_id %q, the handler got %q", x, got)
			}
			// Another order under the same route has another identity.
			other := strings.Replace(path, "/42/", "/43/", 1)
			_, stdout, _ = f.run(append(append([]string{"inspect", "--path", other}, tc.flags...), scopeArgs(sc)...)...)
			if strings.Contains(stdout, got) {
				t.Errorf("--path %s shows the execution ID of %s", other, path)
			}
		})
	}
}

// TestInspectExecutionIDFlags: without --path inspect says how to get the
// execution ID; the flags that need --path, a path without its slash and
// an unset secret variable are usage errors.
func TestInspectExecutionIDFlags(t *testing.T) {
	f := newFixture(t)
	sc := scopeOf("k1")
	f.seedIndeterminate(sc, time.Now().Add(-time.Hour))
	code, stdout, stderr := f.run(append([]string{"inspect"}, scopeArgs(sc)...)...)
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stdout, "Execution ID  - (give --path") {
		t.Errorf("inspect without --path:\n%s", stdout)
	}
	for _, flags := range [][]string{
		{"--ignore-query"},
		{"--execution-secret-env", "X"},
		{"--path", "orders/42"},
		{"--path", "/orders/42", "--execution-secret-env", "UNSET_VARIABLE"},
		{"--path", "/orders/42", "--ignore-query", "--query", "a"},
	} {
		code, stdout, stderr := f.run(append(append([]string{"inspect"}, flags...), scopeArgs(sc)...)...)
		wantCode(t, code, exitUsage, stdout, stderr)
	}
}
