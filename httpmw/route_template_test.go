package httpmw_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
)

// TestMiddlewareRouteTemplateGreedy: a ServeMux pattern that matches a
// whole subtree ("/orders/", "{rest...}") names no single operation, so
// under RouteTemplate each path is its own operation: one key used for
// two paths under it runs twice, never a 422 for "another resource of the
// same operation".
func TestMiddlewareRouteTemplateGreedy(t *testing.T) {
	for _, pattern := range []string{"POST /orders/", "/orders/", "POST /orders/{rest...}"} {
		t.Run(pattern, func(t *testing.T) {
			o := &orders{}
			var ops []string
			g, err := idemkit.New(idemkit.Config{Store: memstore.New(), Observer: observe.ObserverFunc(func(_ context.Context, e observe.Event) {
				ops = append(ops, e.Operation)
			})})
			if err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			mux.Handle(pattern, httpmw.New(g, httpmw.Config{Tenant: tenantOf, Settings: httpconfig.Settings{RouteTemplate: true}})(o))
			h := auth(mux)
			for _, p := range []string{"/orders/a", "/orders/b"} {
				if w := serve(h, request(t, func(r *http.Request) { r.URL.Path = p })); w.Code != 201 || isReplay(w) {
					t.Errorf("%s: %d replayed=%v %s, want a run of its own", p, w.Code, isReplay(w), w.Body)
				}
			}
			if o.runs.Load() != 2 || len(ops) != 2 || ops[0] != "POST /orders/a" || ops[1] != "POST /orders/b" {
				t.Errorf("%d runs, operations %q; want 2 runs of POST /orders/a and POST /orders/b", o.runs.Load(), ops)
			}
		})
	}
}
