package orders_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/memstore"
)

// lostAckOutbox sends every ship request, but answers the first one with
// an error, as a send whose answer was lost.
type lostAckOutbox struct {
	orders.MemOutbox
	answered bool
}

func (o *lostAckOutbox) Send(ctx context.Context, tenant string, r orders.ShipRequest) error {
	if err := o.MemOutbox.Send(ctx, tenant, r); err != nil {
		return err
	}
	if !o.answered {
		o.answered = true
		return errors.New("sqs: connection reset")
	}
	return nil
}

// TestShippingFedByOrders: the orders API sends a ship request for each
// order it creates: again when its send's answer was lost (the request
// failed, the key was freed, and the retry found the order and sent once
// more), never for a replay. The shipping worker, given every message
// twice and in another order, ships each order once, counted from the
// shipments stored; on the memory stores and on DynamoDB.
func TestShippingFedByOrders(t *testing.T) {
	for name, newRepo := range repos() {
		t.Run(name, func(t *testing.T) {
			repo := newRepo(t, nil)
			var store idemkit.Store = memstore.New()
			if name == "dynamodb" {
				raw := dynalite.Client(t)
				s, err := dynamo.New(raw, dynalite.CreateTable(t, raw, dynamo.TableDefinition("idem", dynamo.Options{})), dynamo.Options{})
				if err != nil {
					t.Fatal(err)
				}
				store = s
			}
			outbox := &lostAckOutbox{}
			api, err := orders.Handler(orders.Options{Store: store, Repo: repo, Outbox: outbox, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			api = orders.DevAuthorizer(api)
			var created []string
			for _, tc := range []struct {
				body   string
				status int
			}{
				{`{"sku":"book-42","quantity":1,"amount_cents":1999,"currency":"EUR"}`, 503}, // sent, the answer lost
				{`{"sku":"book-42","quantity":1,"amount_cents":1999,"currency":"EUR"}`, 201}, // the retry sends again
				{`{"sku":"book-42","quantity":1,"amount_cents":1999,"currency":"EUR"}`, 201}, // a replay sends nothing
				{`{"sku":"mug-7","quantity":2,"amount_cents":900,"currency":"EUR"}`, 201},
			} {
				resp, err := api(context.Background(), event("POST", "POST /orders", "/orders", tc.body))
				if err != nil || resp.StatusCode != tc.status {
					t.Fatalf("POST /orders %s: %d %v %s, want %d", tc.body, resp.StatusCode, err, resp.Body, tc.status)
				}
				var o orders.Order
				if tc.status == 201 && json.Unmarshal([]byte(resp.Body), &o) == nil && !slices.Contains(created, o.ID) {
					created = append(created, o.ID)
				}
			}
			sent := outbox.Sent()
			if len(sent) != 3 || len(created) != 2 {
				t.Fatalf("%d messages sent for %d orders, want 3 for 2", len(sent), len(created))
			}
			worker, err := orders.ShippingHandler(orders.WorkerOptions{Store: store, Shipments: repo.(orders.ShipmentRepo), Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			reversed := slices.Clone(sent)
			slices.Reverse(reversed)
			for i, b := range [][]events.SQSMessage{sent, reversed, append(slices.Clone(sent), sent[0])} {
				resp, err := worker(context.Background(), events.SQSEvent{Records: b})
				if err != nil || len(resp.BatchItemFailures) != 0 {
					t.Fatalf("delivery %d: %v %v, want no failures", i, resp.BatchItemFailures, err)
				}
			}
			tenant := *sent[0].MessageAttributes[orders.TenantAttribute].StringValue
			for _, id := range created {
				got, err := repo.(orders.ShipmentRepo).Shipments(context.Background(), tenant, id)
				if err != nil || len(got) != 1 || got[0].OrderID != id {
					t.Errorf("order %s: shipments %+v %v, want one", id, got, err)
				}
			}
		})
	}
}

// TestShippingRefusesBadMessages: a message without an order id or a
// tenant is reported failed (to the dead-letter queue after the queue's
// maxReceiveCount), and nothing is shipped for it; the good one in the
// same batch ships.
func TestShippingRefusesBadMessages(t *testing.T) {
	repo := &orders.MemRepo{}
	worker, err := orders.ShippingHandler(orders.WorkerOptions{Store: memstore.New(), Shipments: repo, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var outbox orders.MemOutbox
	outbox.Send(context.Background(), "alice", orders.ShipRequest{OrderID: "ord-1", SKU: "book-42", Quantity: 1})
	outbox.Send(context.Background(), "alice", orders.ShipRequest{OrderID: "ord-2", SKU: "book-42", Quantity: 1})
	outbox.Send(context.Background(), "alice", orders.ShipRequest{OrderID: "ord-3", SKU: "book-42", Quantity: 1})
	msgs := outbox.Sent()
	msgs[0].Body = `{"sku":"book-42"}`
	delete(msgs[1].MessageAttributes, orders.TenantAttribute)
	resp, err := worker(context.Background(), events.SQSEvent{Records: msgs})
	if err != nil || len(resp.BatchItemFailures) != 2 || resp.BatchItemFailures[0].ItemIdentifier != msgs[0].MessageId || resp.BatchItemFailures[1].ItemIdentifier != msgs[1].MessageId {
		t.Fatalf("failures %v %v, want the first two messages", resp.BatchItemFailures, err)
	}
	for order, want := range map[string]int{"ord-2": 0, "ord-3": 1} {
		if got, _ := repo.Shipments(context.Background(), "alice", order); len(got) != want {
			t.Errorf("%s: %d shipments, want %d", order, len(got), want)
		}
	}
}
