package orders

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// ErrNotFound is returned by a Repo for an order that does not exist for
// the tenant (another tenant's order included).
var ErrNotFound = errors.New("orders: not found")

// Order is an order as the API returns it.
type Order struct {
	ID          string    `json:"id"`
	SKU         string    `json:"sku"`
	Quantity    int64     `json:"quantity"`
	AmountCents int64     `json:"amount_cents"`
	Currency    string    `json:"currency"`
	CreatedAt   time.Time `json:"created_at"`
	// PaidCents is the sum of the captured payments.
	PaidCents int64 `json:"paid_cents"`
	// Payments are the order's captured payments, oldest first.
	Payments []Payment `json:"payments"`
}

// Payment is a captured payment of an order.
type Payment struct {
	ID          string    `json:"id"`
	OrderID     string    `json:"order_id"`
	AmountCents int64     `json:"amount_cents"`
	Currency    string    `json:"currency"`
	CardLast4   string    `json:"card_last4"`
	Status      string    `json:"status"`
	CreatedAt   time.Time `json:"created_at"`
}

// Repo keeps the orders and payments of every tenant. A tenant never sees
// another tenant's orders: every method is scoped by tenant. Errors other
// than ErrNotFound are infrastructure failures (the API answers 503 and the
// idempotency key is released, so a retry runs again).
type Repo interface {
	// CreateOrder stores a new order (without payments).
	CreateOrder(ctx context.Context, tenant string, o Order) error
	// GetOrder returns the tenant's order with its payments and PaidCents,
	// or ErrNotFound.
	GetOrder(ctx context.Context, tenant, id string) (Order, error)
	// AddPayment stores a captured payment of the tenant's order p.OrderID,
	// which the caller has checked exists.
	AddPayment(ctx context.Context, tenant string, p Payment) error
}

// MemRepo is an in-memory Repo for local runs and tests. The zero value is
// ready to use and safe for concurrent use.
type MemRepo struct {
	mu     sync.Mutex
	orders map[[2]string]*Order // guarded by mu; keyed by (tenant, id)
}

var _ Repo = (*MemRepo)(nil)

// CreateOrder implements Repo.
func (r *MemRepo) CreateOrder(_ context.Context, tenant string, o Order) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.orders == nil {
		r.orders = make(map[[2]string]*Order)
	}
	k := [2]string{tenant, o.ID}
	if _, ok := r.orders[k]; ok {
		return errors.New("orders: duplicate order id " + o.ID)
	}
	o.Payments, o.PaidCents = nil, 0
	r.orders[k] = &o
	return nil
}

// GetOrder implements Repo.
func (r *MemRepo) GetOrder(_ context.Context, tenant, id string) (Order, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.orders[[2]string{tenant, id}]
	if !ok {
		return Order{}, ErrNotFound
	}
	out := *o
	out.Payments = slices.Clone(o.Payments)
	if out.Payments == nil {
		out.Payments = []Payment{}
	}
	return out, nil
}

// AddPayment implements Repo.
func (r *MemRepo) AddPayment(_ context.Context, tenant string, p Payment) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.orders[[2]string{tenant, p.OrderID}]
	if !ok {
		return ErrNotFound
	}
	o.Payments = append(o.Payments, p)
	o.PaidCents += p.AmountCents
	return nil
}
