package orders_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/memstore"
)

// A key reused for another order or payment after its record expired: the
// kit takes it as new, but the ID the example derives from it holds the
// first one. The answer is a 422 key-reused that is stored and replayed,
// never a 503 inviting the client to retry the same key forever; nothing
// is stored for the second request.
func TestKeyReusedAfterRetention(t *testing.T) {
	clk := testclock.New()
	const retention = time.Hour
	repo := &orders.MemRepo{}
	h, err := orders.Handler(orders.Options{Store: memstore.New(), Repo: repo, Clock: clk,
		Policy: idemkit.Policy{ReplayWindow: retention, RecordRetention: retention}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h = orders.DevAuthorizer(h)
	send := func(routeKey, path, key, body string) (int, string, string) {
		t.Helper()
		ev := event("POST", routeKey, path, body)
		ev.Headers["idempotency-key"] = key
		resp, err := h(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Headers["Idempotent-Replayed"], resp.Body
	}
	idOf := func(body string) string {
		var v struct{ ID string }
		_ = json.Unmarshal([]byte(body), &v)
		return v.ID
	}

	status, _, body := send("POST /orders", "/orders", "order-key", `{"sku":"a","quantity":1,"amount_cents":1999,"currency":"EUR"}`)
	if status != 201 {
		t.Fatalf("order: %d %s", status, body)
	}
	order := idOf(body)
	pay := `{"order_id":"` + order + `","amount_cents":500,"card":"4242424242424242"}`
	if status, _, body = send("POST /payments", "/payments", "pay-key", pay); status != 201 {
		t.Fatalf("payment: %d %s", status, body)
	}
	clk.Advance(2 * retention) // both records have expired

	for _, tc := range []struct{ name, routeKey, path, key, body string }{
		{"order", "POST /orders", "/orders", "order-key", `{"sku":"b","quantity":2,"amount_cents":2999,"currency":"EUR"}`},
		{"payment", "POST /payments", "/payments", "pay-key", `{"order_id":"` + order + `","amount_cents":700,"card":"4242424242424242"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s1, r1, b1 := send(tc.routeKey, tc.path, tc.key, tc.body)
			s2, r2, b2 := send(tc.routeKey, tc.path, tc.key, tc.body)
			if s1 != 422 || problemOf(t, b1).Type != orders.TypeKeyReused || r1 == "true" {
				t.Fatalf("another %s under the expired key: %d %s, want a fresh 422 key-reused", tc.name, s1, b1)
			}
			if s2 != 422 || r2 != "true" || b2 != b1 {
				t.Fatalf("its retry: %d replayed=%q %s, want the replay of %s", s2, r2, b2, b1)
			}
		})
	}
	got, err := repo.GetOrder(context.Background(), "alice", order)
	if err != nil || got.SKU != "a" || len(got.Payments) != 1 || got.PaidCents != 500 {
		t.Fatalf("stored: %+v, %v; want the first order with its one payment", got, err)
	}
}
