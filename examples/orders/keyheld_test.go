package orders_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/memstore"
)

// A handler error after which the guard could not free the key must not
// be answered "nothing was recorded": the key is held, and a retry gets
// 409 in-flight, not a run.
func TestHandlerErrorKeyNotFreed(t *testing.T) {
	repo := &flakyRepo{Repo: &orders.MemRepo{}, err: errors.New("connection reset"), fail: 1}
	// The store's releases fail: the key stays held.
	noRelease := faultstore.New(memstore.New())
	noRelease.OnOp(faultstore.OpRelease, faultstore.Fail(&idemkit.StoreError{Op: "release", Err: errors.New("connection reset")}))
	h, err := orders.Handler(orders.Options{Store: noRelease, Repo: repo, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h = orders.DevAuthorizer(h)
	create := event("POST", "POST /orders", "/orders", orderBody)
	first, _ := h(context.Background(), create)
	p := problemOf(t, first.Body)
	if first.StatusCode != 503 || p.Type != orders.TypeTemporarilyDown || first.Headers["Retry-After"] == "" {
		t.Fatalf("first: %d %s, want 503 temporarily-unavailable with Retry-After", first.StatusCode, first.Body)
	}
	if strings.Contains(p.Detail, "nothing was recorded") || !strings.Contains(p.Detail, "could not be freed") {
		t.Fatalf("detail %q: the key is held, the answer must say so", p.Detail)
	}
	second, _ := h(context.Background(), create)
	if second.StatusCode != 409 {
		t.Fatalf("retry: %d %s, want 409 (the key is held)", second.StatusCode, second.Body)
	}

	// A key that was freed keeps the plain answer.
	repo.fail = 1
	h2, _ := orders.Handler(orders.Options{Store: memstore.New(), Repo: repo, Logger: slog.New(slog.DiscardHandler)})
	resp, _ := orders.DevAuthorizer(h2)(context.Background(), event("POST", "POST /orders", "/orders", `{"sku":"b","quantity":1,"amount_cents":5,"currency":"EUR"}`))
	if p := problemOf(t, resp.Body); resp.StatusCode != 503 || !strings.Contains(p.Detail, "nothing was recorded") {
		t.Fatalf("freed key: %d %s, want 503 saying nothing was recorded", resp.StatusCode, resp.Body)
	}
}
