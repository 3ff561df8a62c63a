package httpmw_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
)

// TestMiddlewareLogLinesBounded: whatever a request holds, the log line
// observe.Logger writes for it stays small and never carries the key in
// clear. A malformed 900 KB key gave a 173-byte problem but a 921 KB log
// line; a 900 KB path went whole into every line.
func TestMiddlewareLogLinesBounded(t *testing.T) {
	big := strings.Repeat("k", 900<<10)
	for _, tc := range []struct {
		name   string
		mod    func(*http.Request)
		status int
	}{
		{"malformed 900 KB key", func(r *http.Request) { r.Header.Set("Idempotency-Key", big+",") }, 400},
		{"900 KB path", func(r *http.Request) { r.URL.Path = "/orders/" + big }, 414},
		{"1 MB query", func(r *http.Request) { r.URL.RawQuery = distinctNames(182000) }, 414},
		{"a key, executed", func(r *http.Request) { r.Header.Set("Idempotency-Key", "order-7f3a") }, 201},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			g, err := idemkit.New(idemkit.Config{Store: memstore.New(),
				Observer: observe.Logger{Logger: slog.New(slog.NewJSONHandler(&logs, nil))}})
			if err != nil {
				t.Fatal(err)
			}
			h := auth(httpmw.New(g, httpmw.Config{Tenant: tenantOf})(&orders{}))
			r := request(t, tc.mod)
			if w := serve(h, r); w.Code != tc.status {
				t.Fatalf("%d, want %d", w.Code, tc.status)
			}
			if n := logs.Len(); n == 0 || n > 16<<10 {
				t.Errorf("a %d-byte log line", n)
			}
			if key := r.Header.Get("Idempotency-Key"); strings.Contains(logs.String(), key) {
				t.Errorf("the key is in clear: %.300s", logs.String())
			}
		})
	}
}
