package httpmw_test

import (
	"net/http"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/memstore"
)

// The middleware in three lines, behind the authentication middleware that
// puts the caller in the request context. Use the DynamoDB store in
// production; the in-memory store protects one process only.
func ExampleNew() {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"id":"ord_1"}`))
	})

	g, _ := idemkit.New(idemkit.Config{Store: memstore.New()})
	guard := httpmw.New(g, httpmw.Config{Tenant: tenantOf})
	http.ListenAndServe(":8080", auth(guard(mux)))
}
