package httpconfig_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/tenant"
)

// requestID is the id your request-id middleware gives a request.
func requestID(context.Context) string { return "req-2" }

// An API with its own error format, {"error": {"code", "message"}}, whose
// replays carry the request id of the retry, not of the first request.
// The same Settings go in apigw.Config and alb.Config.
func ExampleSettings() {
	settings := httpconfig.Settings{
		ProblemResponse: func(_ context.Context, p httpproblem.Details) httpproblem.Response {
			code := strings.TrimPrefix(p.Type, httpproblem.Base) // "key-missing", "in-flight", ...
			body, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": p.Detail}})
			h := http.Header{"Content-Type": {"application/json"}}
			if p.RetryAfter > 0 {
				h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
			}
			return httpproblem.Response{Status: p.Status, Header: h, Body: body}
		},
		AdjustReplay: func(ctx context.Context, _ int, h http.Header) {
			h.Set("X-Request-Id", requestID(ctx))
		},
	}

	g, _ := idemkit.New(idemkit.Config{Store: memstore.New()})
	tenant := tenant.Single[*http.Request]("acme")
	api := httpmw.New(g, httpmw.Config{Tenant: tenant, Settings: settings})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"id":"ord_1"}`)
	}))
	send := func(key string) {
		r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"sku":"A1"}`))
		if key != "" {
			r.Header.Set("Idempotency-Key", key)
		}
		w := httptest.NewRecorder()
		api.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Header().Get("X-Request-Id"), w.Body.String())
	}
	send("")        // no key: the API's own error
	send("order-1") // runs
	send("order-1") // replayed, with this request's id
	// Output:
	// 400  {"error":{"code":"key-missing","message":"This operation requires an Idempotency-Key header."}}
	// 201  {"id":"ord_1"}
	// 201 req-2 {"id":"ord_1"}
}
