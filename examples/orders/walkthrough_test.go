package orders_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/idemkit/idemkit/internal/testing/testkit"
)

// TestWalkthroughIDs: the order and payment IDs docs/WALKTHROUGH.md shows
// are the ones make run gives for its requests (caller alice, keys order-1
// and pay-1). They derive from the execution identity, so they are the
// same on every run and on every store.
func TestWalkthroughIDs(t *testing.T) {
	doc := testkit.Doc(t, "../../docs/WALKTHROUGH.md")
	h := newHandler(t)
	post := func(route, key, body string) string {
		t.Helper()
		e := event("POST", "POST "+route, route, body)
		e.Headers["idempotency-key"] = key
		resp, err := h(context.Background(), e)
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("POST %s %s: %d %s %v", route, key, resp.StatusCode, resp.Body, err)
		}
		var v struct{ ID string }
		if err := json.Unmarshal([]byte(resp.Body), &v); err != nil {
			t.Fatal(err)
		}
		return v.ID
	}
	order := post("/orders", "order-1", `{"sku":"book-42","quantity":1,"amount_cents":1999,"currency":"EUR"}`)
	// The walkthrough's payment is slow (delay_ms); the ID does not depend
	// on the body.
	payment := post("/payments", "pay-1", `{"order_id":"`+order+`","amount_cents":1999,"card":"4242424242424242"}`)
	for _, want := range []string{
		"Location: /orders/" + order + "\n",
		`{"id":"` + order + `","sku":"book-42"`,
		`{"id":"` + payment + `","order_id":"` + order + `"`,
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/WALKTHROUGH.md does not show %s", want)
		}
	}
}
