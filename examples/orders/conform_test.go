package orders_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit/internal/conform"
	"github.com/idemkit/idemkit/internal/testing/testkit"
)

// TestConformOnLocalServer: idemkit conform's checks pass on the example
// API's local server, directly and behind an honest reverse proxy, and
// fail, naming the direction, behind one that drops the request's
// Idempotency-Key or the answer's Idempotent-Replayed and Retry-After.
func TestConformOnLocalServer(t *testing.T) {
	srv := localExample(t)
	resp, body := send(t, "POST", srv.URL+"/orders", "conform-order", `{"sku":"book-42","quantity":1,"amount_cents":1999,"currency":"EUR"}`)
	if resp.StatusCode != 201 {
		t.Fatalf("order: %d %s", resp.StatusCode, body)
	}
	id := strings.TrimPrefix(resp.Header.Get("Location"), "/orders/")
	pay := func(extra string) []byte {
		return []byte(`{"order_id":"` + id + `","amount_cents":1999,"card":"4242424242424242"` + extra + `}`)
	}
	proxy := func(dropRequest, dropAnswer []string) string {
		return testkit.Proxy(t, srv.URL, dropRequest, dropAnswer)
	}
	for _, tc := range []struct {
		name   string
		base   string
		ok     bool
		failed map[string]string // check: what its detail says
	}{
		{"local server", srv.URL, true, nil},
		{"honest proxy", proxy(nil, nil), true, nil},
		{"proxy dropping the request's key", proxy([]string{"Idempotency-Key"}, nil), false,
			map[string]string{"fresh": "request header does not reach the guard"}},
		{"proxy dropping the answer's headers", proxy(nil, []string{"Idempotent-Replayed", "Retry-After"}), false,
			map[string]string{"replay": "drops the answer's Idempotent-Replayed", "concurrent-duplicate": "drops the answer's Retry-After"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := conform.Run(ctx, conform.Config{URL: tc.base + "/payments", Header: http.Header{"Authorization": {"Bearer alice"}},
				Body: pay(""), RaceBody: pay(`,"delay_ms":3000`), Concurrency: 4, GetURL: tc.base + "/orders/" + id, RequireKey: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK != tc.ok {
				t.Errorf("OK %v, want %v", res.OK, tc.ok)
			}
			for _, c := range res.Checks {
				want, named := tc.failed[c.Name]
				switch {
				case tc.ok && c.Verdict != conform.Pass:
					t.Errorf("%s: %s: %s", c.Name, c.Verdict, c.Detail)
				case named && (c.Verdict != conform.Fail || !strings.Contains(c.Detail, want)):
					t.Errorf("%s: %s: %s; want a failure saying %q", c.Name, c.Verdict, c.Detail, want)
				}
			}
		})
	}
}
