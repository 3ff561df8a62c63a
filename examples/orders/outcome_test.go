package orders_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/memstore"
)

// flakyRepo stores through Repo, then fails the first fail writes with err
// (the write landed, its answer did not), and remembers every order ID it
// was asked to store.
type flakyRepo struct {
	orders.Repo
	err error

	mu   sync.Mutex
	fail int
	ids  map[string]bool
}

func (r *flakyRepo) CreateOrder(ctx context.Context, tenant string, o orders.Order) (orders.Order, error) {
	stored, err := r.Repo.CreateOrder(ctx, tenant, o)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = map[string]bool{}
	}
	r.ids[o.ID] = true
	if err == nil && r.fail > 0 {
		r.fail--
		return orders.Order{}, r.err
	}
	return stored, err
}

func (r *flakyRepo) AddPayment(ctx context.Context, tenant string, p orders.Payment) (orders.Payment, error) {
	stored, err := r.Repo.AddPayment(ctx, tenant, p)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil && r.fail > 0 {
		r.fail--
		return orders.Payment{}, r.err
	}
	return stored, err
}

// storedOrders returns how many of the orders the handler asked to store
// exist for alice.
func (r *flakyRepo) storedOrders(t *testing.T) int {
	t.Helper()
	n := 0
	for id := range r.ids {
		if _, err := r.Repo.GetOrder(context.Background(), "alice", id); err == nil {
			n++
		}
	}
	return n
}

func problemOf(t *testing.T, body string) orders.Problem {
	t.Helper()
	var p orders.Problem
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("not a problem: %s", body)
	}
	return p
}

const orderBody = `{"sku":"a","quantity":1,"amount_cents":1999,"currency":"EUR"}`

// A write that landed although the handler failed: with a plain error the
// key is freed and the retry finds its own order (one order, the same ID
// answered); with an unknown outcome the key is kept (503 outcome-unknown,
// then 409 indeterminate) and nothing runs again. Order and payment alike.
func TestHandlerWritesRunOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		unknown bool
	}{
		{"plain error", errors.New("connection reset"), false},
		{"unknown outcome", orders.ErrWriteUnknown, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := &flakyRepo{Repo: &orders.MemRepo{}, err: tc.err, fail: 1}
			h, err := orders.Handler(orders.Options{Store: memstore.New(), Repo: repo, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			h = orders.DevAuthorizer(h)
			create := event("POST", "POST /orders", "/orders", orderBody)
			first, _ := h(context.Background(), create)
			second, _ := h(context.Background(), create)
			if tc.unknown {
				if first.StatusCode != 503 || problemOf(t, first.Body).Type != kitOutcomeUnknown {
					t.Fatalf("first: %d %s, want 503 outcome-unknown", first.StatusCode, first.Body)
				}
				if second.StatusCode != 409 || problemOf(t, second.Body).Type == kitOutcomeUnknown {
					t.Fatalf("retry: %d %s, want 409 (the key is kept)", second.StatusCode, second.Body)
				}
				if n := repo.storedOrders(t); n != 1 || len(repo.ids) != 1 {
					t.Fatalf("%d orders stored of %d IDs, want 1", n, len(repo.ids))
				}
				return
			}
			if first.StatusCode != 503 || second.StatusCode != 201 {
				t.Fatalf("answers %d %s, %d %s; want 503 then 201", first.StatusCode, first.Body, second.StatusCode, second.Body)
			}
			var o orders.Order
			if err := json.Unmarshal([]byte(second.Body), &o); err != nil {
				t.Fatal(err)
			}
			if n := repo.storedOrders(t); n != 1 || !repo.ids[o.ID] {
				t.Fatalf("%d orders stored (IDs %v), answered %s; want the one", n, repo.ids, o.ID)
			}

			// The payment: the same, under its own key.
			repo.fail = 1
			pay := event("POST", "POST /payments", "/payments", `{"order_id":"`+o.ID+`","amount_cents":500,"card":"4242424242424242"}`)
			first, _ = h(context.Background(), pay)
			second, _ = h(context.Background(), pay)
			if first.StatusCode != 503 || second.StatusCode != 201 {
				t.Fatalf("payment answers %d %s, %d %s; want 503 then 201", first.StatusCode, first.Body, second.StatusCode, second.Body)
			}
			got, _ := repo.GetOrder(context.Background(), "alice", o.ID)
			if len(got.Payments) != 1 || got.PaidCents != 500 {
				t.Fatalf("payments %+v, want one of 500", got.Payments)
			}
		})
	}
}

// The card that loses the processor's answer (for practising the runbook)
// ends its payment as an unknown outcome: 503 outcome-unknown, the key
// kept, the retry 409 indeterminate-operator-required, nothing charged
// twice nor stored.
func TestCardOutcomeUnknown(t *testing.T) {
	repo := &orders.MemRepo{}
	h, err := orders.Handler(orders.Options{Store: memstore.New(), Repo: repo, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h = orders.DevAuthorizer(h)
	created, _ := h(context.Background(), event("POST", "POST /orders", "/orders", orderBody))
	var o orders.Order
	if err := json.Unmarshal([]byte(created.Body), &o); err != nil || created.StatusCode != 201 {
		t.Fatalf("create: %d %s", created.StatusCode, created.Body)
	}
	pay := event("POST", "POST /payments", "/payments", `{"order_id":"`+o.ID+`","amount_cents":500,"card":"`+orders.CardOutcomeUnknown+`"}`)
	pay.Headers["idempotency-key"] = "pay-1"
	first, _ := h(context.Background(), pay)
	if first.StatusCode != 503 || problemOf(t, first.Body).Type != kitOutcomeUnknown {
		t.Fatalf("payment: %d %s, want 503 outcome-unknown", first.StatusCode, first.Body)
	}
	retry, _ := h(context.Background(), pay)
	if retry.StatusCode != 409 || problemOf(t, retry.Body).Type != kitIndeterminate {
		t.Fatalf("retry: %d %s, want 409 indeterminate-operator-required", retry.StatusCode, retry.Body)
	}
	if got, _ := repo.GetOrder(context.Background(), "alice", o.ID); len(got.Payments) != 0 {
		t.Errorf("payments %+v, want none stored", got.Payments)
	}
}

// Order IDs differ across keys, callers and runs of other keys: the
// execution identity, not a constant.
func TestOrderIDsPerKey(t *testing.T) {
	h := newHandler(t)
	ids := map[string]bool{}
	for _, ev := range []func() (string, string){
		func() (string, string) { return "alice", "k1" },
		func() (string, string) { return "alice", "k2" },
		func() (string, string) { return "bob", "k1" },
	} {
		who, key := ev()
		e := event("POST", "POST /orders", "/orders", orderBody)
		e.Headers["authorization"] = "Bearer " + who
		e.Headers["idempotency-key"] = key
		resp, _ := h(context.Background(), e)
		var o orders.Order
		if err := json.Unmarshal([]byte(resp.Body), &o); err != nil || resp.StatusCode != 201 {
			t.Fatalf("%s/%s: %d %s", who, key, resp.StatusCode, resp.Body)
		}
		ids[o.ID] = true
	}
	if len(ids) != 3 {
		t.Fatalf("order IDs %v, want 3 distinct", ids)
	}
}

// On DynamoDB: the order's write loses its answer on every attempt; the
// client is told the outcome is unknown, the key is kept, and the table
// holds one order. Once the faults clear the key still answers 409: it is
// not run again.
func TestHandlerOutcomeUnknownOnDynamoDB(t *testing.T) {
	raw := dynalite.Client(t)
	table := dynalite.CreateTable(t, raw, orders.OrdersTableDefinition("orders"))
	ft := faults.New(http.DefaultTransport, faults.Rule{Op: "PutItem", Kind: faults.LostAck, Times: -1})
	repo := &orders.DynamoRepo{Client: faultyClient(t, ft), Table: table}
	h, err := orders.Handler(orders.Options{Store: memstore.New(), Repo: repo, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h = orders.DevAuthorizer(h)
	create := event("POST", "POST /orders", "/orders", orderBody)
	resp, _ := h(context.Background(), create)
	if resp.StatusCode != 503 || problemOf(t, resp.Body).Type != kitOutcomeUnknown {
		t.Fatalf("first: %d %s, want 503 outcome-unknown", resp.StatusCode, resp.Body)
	}
	ft.Clear()
	resp, _ = h(context.Background(), create)
	if resp.StatusCode != 409 {
		t.Fatalf("retry: %d %s, want 409", resp.StatusCode, resp.Body)
	}
	out, err := raw.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Items) != 1 {
		t.Fatalf("orders table: %v items, %v; want 1", len(out.Items), err)
	}
}

// kitOutcomeUnknown is the problem type the guard answers for a handler
// error wrapping idemkit.ErrOutcomeUnknown.
const (
	kitOutcomeUnknown = "https://idemkit.dev/problems/outcome-unknown"
	kitIndeterminate  = "https://idemkit.dev/problems/indeterminate-operator-required"
)

// lateHandler returns a handler on repo whose idempotency records are
// gone: the state of a retry that arrives after the record's retention
// (its DynamoDB TTL), or after an operator freed an indeterminate key. The
// orders and payments of repo are kept for good.
func lateHandler(t *testing.T, repo orders.Repo) orders.HandlerFunc {
	t.Helper()
	h, err := orders.Handler(orders.Options{Store: memstore.New(), Repo: repo, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return orders.DevAuthorizer(h)
}

// A payment key retried after its record is gone finds the payment its
// first run captured and stored, and answers it without calling the
// processor again: a processor's own idempotency window (often a day) may
// be over by then, and a second capture would be a second charge that no
// payment records. Here the processor is slow (delay_ms: 10 s) and the
// invocation has 1 s, so a handler that calls it fails (503) at its
// deadline; one that looks first answers the stored payment.
func TestLatePaymentRetryIsNotCapturedAgain(t *testing.T) {
	repo := &orders.MemRepo{}
	h := lateHandler(t, repo)
	resp, _ := h(context.Background(), event("POST", "POST /orders", "/orders", orderBody))
	var o orders.Order
	if err := json.Unmarshal([]byte(resp.Body), &o); err != nil {
		t.Fatal(err)
	}
	pay := event("POST", "POST /payments", "/payments", `{"order_id":"`+o.ID+`","amount_cents":500,"card":"4242424242424242"}`)
	first, _ := h(context.Background(), pay)
	if first.StatusCode != 201 {
		t.Fatalf("payment: %d %s", first.StatusCode, first.Body)
	}
	var p orders.Payment
	if err := json.Unmarshal([]byte(first.Body), &p); err != nil {
		t.Fatal(err)
	}

	late := event("POST", "POST /payments", "/payments", `{"order_id":"`+o.ID+`","amount_cents":500,"card":"4242424242424242","delay_ms":10000}`)
	late.Headers["idempotency-key"] = pay.Headers["idempotency-key"]
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	again, _ := lateHandler(t, repo)(ctx, late)
	var q orders.Payment
	if again.StatusCode != 201 || json.Unmarshal([]byte(again.Body), &q) != nil || q.ID != p.ID {
		t.Fatalf("late retry: %d %s; want 201 with payment %s, the processor not called", again.StatusCode, again.Body, p.ID)
	}
	got, _ := repo.GetOrder(context.Background(), "alice", o.ID)
	if len(got.Payments) != 1 || got.PaidCents != 500 {
		t.Fatalf("payments %+v, want the one of 500", got.Payments)
	}
}

// A key reused, after its record is gone, for another order or payment
// than its first run stored is refused with a stored 422, never a 503
// that tells the client to retry a request that can never succeed, and
// nothing is charged or stored.
func TestLateKeyReuseIsRefused(t *testing.T) {
	repo := &orders.MemRepo{}
	h := lateHandler(t, repo)
	create := event("POST", "POST /orders", "/orders", orderBody)
	resp, _ := h(context.Background(), create)
	var o orders.Order
	if err := json.Unmarshal([]byte(resp.Body), &o); err != nil {
		t.Fatal(err)
	}
	pay := event("POST", "POST /payments", "/payments", `{"order_id":"`+o.ID+`","amount_cents":500,"card":"4242424242424242"}`)
	if resp, _ := h(context.Background(), pay); resp.StatusCode != 201 {
		t.Fatalf("payment: %d %s", resp.StatusCode, resp.Body)
	}

	otherOrder := event("POST", "POST /orders", "/orders", `{"sku":"b","quantity":2,"amount_cents":7,"currency":"USD"}`)
	otherOrder.Headers["idempotency-key"] = create.Headers["idempotency-key"]
	otherPay := event("POST", "POST /payments", "/payments", `{"order_id":"`+o.ID+`","amount_cents":900,"card":"4242424242424242"}`)
	otherPay.Headers["idempotency-key"] = pay.Headers["idempotency-key"]
	for _, tc := range []struct {
		what string
		ev   events.APIGatewayV2HTTPRequest
	}{{"order", otherOrder}, {"payment", otherPay}} {
		late := lateHandler(t, repo)
		for i, replayed := range []string{"", "true"} {
			resp, _ := late(context.Background(), tc.ev)
			if resp.StatusCode != 422 || problemOf(t, resp.Body).Type != orders.TypeKeyReused || resp.Headers["Idempotent-Replayed"] != replayed {
				t.Errorf("%s, late reuse #%d: %d %v %s; want 422 %s (stored)", tc.what, i+1, resp.StatusCode, resp.Headers, resp.Body, orders.TypeKeyReused)
			}
		}
	}
	got, _ := repo.GetOrder(context.Background(), "alice", o.ID)
	if got.SKU != "a" || len(got.Payments) != 1 || got.PaidCents != 500 {
		t.Fatalf("order %+v: want the first order with its one payment of 500", got)
	}
}
