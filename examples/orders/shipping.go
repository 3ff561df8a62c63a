package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/clock"
	"github.com/idemkit/idemkit/lambda/batch"
	"github.com/idemkit/idemkit/lambda/event"
	"github.com/idemkit/idemkit/observe"
)

// EnvShippingQueue is the URL of the shipping queue the orders function
// sends a ShipRequest to for every order it creates. Empty: none is sent.
const EnvShippingQueue = "SHIPPING_QUEUE_URL"

// ShippingOperation is the operation of the shipping worker's records.
const ShippingOperation = "orders.ship"

// TenantAttribute is the SQS message attribute that carries a ship
// request's tenant: the caller who created the order, as the orders
// function authenticated it.
const TenantAttribute = "tenant"

// ShipRequest is the body of a shipping queue message: an order to ship.
type ShipRequest struct {
	OrderID  string `json:"order_id"`
	SKU      string `json:"sku"`
	Quantity int64  `json:"quantity"`
}

// Shipment is an order's shipment, stored by the shipping worker.
type Shipment struct {
	ID        string    `json:"id"`
	OrderID   string    `json:"order_id"`
	SKU       string    `json:"sku"`
	Quantity  int64     `json:"quantity"`
	CreatedAt time.Time `json:"created_at"`
}

// ShipmentRepo keeps the shipments. CreateShipment is conditional on the
// shipment's ID, as Repo's writes are: a shipment stored already under the
// ID with the same order is returned, one with another fails with
// ErrIDConflict, and a write whose outcome is unknown fails with
// ErrWriteUnknown.
type ShipmentRepo interface {
	CreateShipment(ctx context.Context, tenant string, s Shipment) (Shipment, error)
	// Shipments returns the tenant's shipments of an order, by ID.
	Shipments(ctx context.Context, tenant, orderID string) ([]Shipment, error)
}

// Outbox sends the ship request of each order the orders API creates.
type Outbox interface {
	Send(ctx context.Context, tenant string, r ShipRequest) error
}

// SQSOutbox sends ship requests to an SQS queue, the tenant in the
// TenantAttribute message attribute.
type SQSOutbox struct {
	Client   *sqs.Client
	QueueURL string
}

// Send implements Outbox.
func (o *SQSOutbox) Send(ctx context.Context, tenant string, r ShipRequest) error {
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = o.Client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:    aws.String(o.QueueURL),
		MessageBody: aws.String(string(body)),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			TenantAttribute: {DataType: aws.String("String"), StringValue: aws.String(tenant)},
		},
	})
	if err != nil {
		return fmt.Errorf("orders: send ship request of %s: %w", r.OrderID, err)
	}
	return nil
}

// MemOutbox keeps ship requests as the SQS messages the worker would be
// given, for local runs and tests. The zero value is ready to use.
type MemOutbox struct {
	// ARN is the messages' event source. Empty: a made-up queue's.
	ARN  string
	mu   sync.Mutex
	sent []events.SQSMessage // guarded by mu
}

// Send implements Outbox.
func (o *MemOutbox) Send(_ context.Context, tenant string, r ShipRequest) error {
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	arn := o.ARN
	if arn == "" {
		arn = "arn:aws:sqs:us-east-1:000000000000:shipping"
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sent = append(o.sent, events.SQSMessage{
		MessageId: fmt.Sprintf("msg-%d", len(o.sent)+1), Body: string(body), EventSource: "aws:sqs", EventSourceARN: arn,
		Attributes:        map[string]string{"ApproximateReceiveCount": "1"},
		MessageAttributes: map[string]events.SQSMessageAttribute{TenantAttribute: {DataType: "String", StringValue: aws.String(tenant)}},
	})
	return nil
}

// Sent returns the messages sent so far.
func (o *MemOutbox) Sent() []events.SQSMessage {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]events.SQSMessage(nil), o.sent...)
}

// WorkerOptions are what ShippingHandler needs. Store and Shipments are
// required.
type WorkerOptions struct {
	Store     idemkit.Store
	Shipments ShipmentRepo
	// Policy is the idempotency policy of ShippingOperation. Stale leases
	// fail closed (the zero value): a shipment is never made twice.
	Policy   idemkit.Policy
	Observer observe.Observer
	Logger   *slog.Logger // nil: slog.Default()
	Clock    clock.Clock  // nil: the system clock
}

// SQSHandlerFunc is the signature lambda.Start runs for an SQS event
// source mapping with ReportBatchItemFailures.
type SQSHandlerFunc = func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// ShippingHandler returns the shipping worker: it ships each order once,
// however often its ship request is delivered or sent (the orders API
// sends it again when it runs a request again, after a failure). Messages
// are keyed by the order id of their body and scoped by the
// TenantAttribute, under ShippingOperation; the shipment's ID derives from
// idemkit.ExecutionID, and its write is conditional on it. A message that
// fails (a body without an order id, a write that failed, a record held
// by another delivery) is named in the batch response and comes back;
// after the queue's maxReceiveCount it goes to the dead-letter queue. A
// write whose outcome is unknown keeps the order's key for an operator
// (idemkit list --state indeterminate).
func ShippingHandler(o WorkerOptions) (SQSHandlerFunc, error) {
	if o.Store == nil || o.Shipments == nil {
		return nil, errors.New("orders: WorkerOptions.Store and WorkerOptions.Shipments are required")
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	now := time.Now
	if o.Clock != nil {
		now = o.Clock.Now
	}
	g, err := idemkit.New(idemkit.Config{Store: o.Store, Policy: o.Policy, Observer: o.Observer, Clock: o.Clock})
	if err != nil {
		return nil, err
	}
	cfg := batch.SQSConfig{
		Config: event.Config[events.SQSMessage]{
			Key: func(m events.SQSMessage) (string, error) {
				r, err := shipRequestOf(m)
				return r.OrderID, err
			},
			Tenant: func(_ context.Context, m events.SQSMessage) (string, error) {
				if a, ok := m.MessageAttributes[TenantAttribute]; ok && a.StringValue != nil {
					return *a.StringValue, nil
				}
				return "", nil
			},
			Operation: ShippingOperation,
		},
		OnFailure: func(ctx context.Context, f batch.Failure) {
			log.WarnContext(ctx, "shipping: message failed", "message_id", f.ID, "error", f.Err.Error())
		},
	}
	return batch.SQS(g, cfg, func(ctx context.Context, m events.SQSMessage) error {
		r, err := shipRequestOf(m)
		if err != nil {
			return err
		}
		scope, _ := idemkit.ScopeOf(ctx)
		id, err := executionBased(ctx, "shipment")
		if err != nil {
			return err
		}
		s := Shipment{ID: id, OrderID: r.OrderID, SKU: r.SKU, Quantity: r.Quantity, CreatedAt: now().UTC().Truncate(time.Millisecond)}
		if _, err := o.Shipments.CreateShipment(ctx, scope.Tenant, s); err != nil {
			return writeFailed(err)
		}
		log.InfoContext(ctx, "shipping: shipped", "order_id", r.OrderID, "shipment_id", id)
		return nil
	}), nil
}

// shipRequestOf decodes a message's body.
func shipRequestOf(m events.SQSMessage) (ShipRequest, error) {
	var r ShipRequest
	if err := json.Unmarshal([]byte(m.Body), &r); err != nil {
		return ShipRequest{}, fmt.Errorf("shipping: body: %w", err)
	}
	return r, nil
}

func sameShipment(a, b Shipment) bool {
	return a.ID == b.ID && a.OrderID == b.OrderID && a.SKU == b.SKU && a.Quantity == b.Quantity
}

func shipmentSK(orderID, id string) string { return orderSK(orderID) + "#shipment#" + id }

// CreateShipment implements ShipmentRepo.
func (r *MemRepo) CreateShipment(_ context.Context, tenant string, s Shipment) (Shipment, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.shipments == nil {
		r.shipments = map[[2]string]Shipment{}
	}
	k := [2]string{tenant, s.ID}
	if old, ok := r.shipments[k]; ok {
		if !sameShipment(old, s) {
			return Shipment{}, fmt.Errorf("%w: shipment %s", ErrIDConflict, s.ID)
		}
		return old, nil
	}
	r.shipments[k] = s
	return s, nil
}

// Shipments implements ShipmentRepo.
func (r *MemRepo) Shipments(_ context.Context, tenant, orderID string) ([]Shipment, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Shipment
	for k, s := range r.shipments {
		if k[0] == tenant && s.OrderID == orderID {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// CreateShipment implements ShipmentRepo: the item (tenant,
// "order#<order id>#shipment#<id>"), conditional on its key.
func (r *DynamoRepo) CreateShipment(ctx context.Context, tenant string, sh Shipment) (Shipment, error) {
	sk := shipmentSK(sh.OrderID, sh.ID)
	in := r.newItem(tenant, sk, map[string]types.AttributeValue{
		"id":         s(sh.ID),
		"order_id":   s(sh.OrderID),
		"sku":        s(sh.SKU),
		"quantity":   n(sh.Quantity),
		"created_at": ts(sh.CreatedAt),
	})
	return create(ctx, r, "shipment "+sh.ID, in, sh, func(ctx context.Context) (Shipment, error) {
		stored, err := r.Shipments(ctx, tenant, sh.OrderID)
		if err != nil {
			return Shipment{}, err
		}
		for _, old := range stored {
			if old.ID == sh.ID {
				return old, nil
			}
		}
		return Shipment{}, ErrNotFound
	}, sameShipment)
}

// Shipments implements ShipmentRepo, with one consistent Query.
func (r *DynamoRepo) Shipments(ctx context.Context, tenant, orderID string) ([]Shipment, error) {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(r.Table),
		KeyConditionExpression:   aws.String("#t = :t AND begins_with(#sk, :p)"),
		ExpressionAttributeNames: map[string]string{"#t": OrdersAttrTenant, "#sk": OrdersAttrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":t": s(tenant), ":p": s(orderSK(orderID) + "#shipment#"),
		},
		ConsistentRead: aws.Bool(true),
	}
	var out []Shipment
	for {
		cctx, cancel := r.call(ctx)
		page, err := r.Client.Query(cctx, in)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("orders: query shipments of %s: %w", orderID, err)
		}
		for _, it := range page.Items {
			if !strings.HasPrefix(str(it[OrdersAttrSK]), orderSK(orderID)+"#shipment#") {
				continue
			}
			out = append(out, Shipment{ID: str(it["id"]), OrderID: str(it["order_id"]), SKU: str(it["sku"]),
				Quantity: num(it["quantity"]), CreatedAt: tm(it["created_at"])})
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

var (
	_ ShipmentRepo = (*MemRepo)(nil)
	_ ShipmentRepo = (*DynamoRepo)(nil)
)
