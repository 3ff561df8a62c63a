package orders

import (
	"context"
	"errors"
	"fmt"
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

// ErrIDConflict is returned by a Repo asked to store an order or payment
// under an ID that holds a different one. IDs derive from the execution
// that stores them, so this is a bug, never a retry.
var ErrIDConflict = errors.New("orders: id already holds a different order or payment")

// ErrWriteUnknown is returned by a Repo when a write failed in a way that
// leaves it unknown whether it was applied (a timeout, a lost answer, a
// server error after the SDK's retries). A retry of the same write (same
// ID) settles it: it stores the item or finds it stored.
var ErrWriteUnknown = errors.New("orders: write outcome unknown")

// Repo keeps the orders and payments of every tenant. A tenant never sees
// another tenant's orders: every method is scoped by tenant.
//
// Writes are conditional on the ID and idempotent: storing an order or
// payment whose ID is already stored with the same contents returns the
// stored one (a retry of the execution that stored it), one with other
// contents fails with ErrIDConflict. A write whose outcome is unknown fails
// with ErrWriteUnknown; other errors are failures that stored nothing.
type Repo interface {
	// CreateOrder stores a new order (without payments) and returns the
	// stored order: o, or the order already stored under o.ID.
	CreateOrder(ctx context.Context, tenant string, o Order) (Order, error)
	// GetOrder returns the tenant's order with its payments and PaidCents,
	// or ErrNotFound.
	GetOrder(ctx context.Context, tenant, id string) (Order, error)
	// AddPayment stores a captured payment of the tenant's order p.OrderID,
	// which the caller has checked exists, and returns the stored payment:
	// p, or the payment already stored under p.ID.
	AddPayment(ctx context.Context, tenant string, p Payment) (Payment, error)
}

// sameOrder reports whether a and b are the same order request: the
// fields a retry of one execution reproduces (not CreatedAt).
func sameOrder(a, b Order) bool {
	return a.ID == b.ID && a.SKU == b.SKU && a.Quantity == b.Quantity && a.AmountCents == b.AmountCents && a.Currency == b.Currency
}

// samePayment reports whether a and b are the same payment request.
func samePayment(a, b Payment) bool {
	return a.ID == b.ID && a.OrderID == b.OrderID && a.AmountCents == b.AmountCents && a.Currency == b.Currency &&
		a.CardLast4 == b.CardLast4 && a.Status == b.Status
}

// MemRepo is an in-memory Repo for local runs and tests. The zero value is
// ready to use and safe for concurrent use. Its writes never fail with
// ErrWriteUnknown.
type MemRepo struct {
	mu     sync.Mutex
	orders map[[2]string]*Order // guarded by mu; keyed by (tenant, id)
	// shipments are the shipping worker's (ShipmentRepo); guarded by mu,
	// keyed by (tenant, shipment id).
	shipments map[[2]string]Shipment
}

var _ Repo = (*MemRepo)(nil)

// CreateOrder implements Repo.
func (r *MemRepo) CreateOrder(_ context.Context, tenant string, o Order) (Order, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.orders == nil {
		r.orders = make(map[[2]string]*Order)
	}
	k := [2]string{tenant, o.ID}
	if old, ok := r.orders[k]; ok {
		if !sameOrder(*old, o) {
			return Order{}, fmt.Errorf("%w: order %s", ErrIDConflict, o.ID)
		}
		return r.copyOf(old), nil
	}
	o.Payments, o.PaidCents = nil, 0
	r.orders[k] = &o
	return r.copyOf(&o), nil
}

// GetOrder implements Repo.
func (r *MemRepo) GetOrder(_ context.Context, tenant, id string) (Order, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.orders[[2]string{tenant, id}]
	if !ok {
		return Order{}, ErrNotFound
	}
	return r.copyOf(o), nil
}

// copyOf returns a copy of o the caller may keep. r.mu is held.
func (r *MemRepo) copyOf(o *Order) Order {
	out := *o
	out.Payments = slices.Clone(o.Payments)
	if out.Payments == nil {
		out.Payments = []Payment{}
	}
	return out
}

// AddPayment implements Repo.
func (r *MemRepo) AddPayment(_ context.Context, tenant string, p Payment) (Payment, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o, ok := r.orders[[2]string{tenant, p.OrderID}]
	if !ok {
		return Payment{}, ErrNotFound
	}
	for _, old := range o.Payments {
		if old.ID != p.ID {
			continue
		}
		if !samePayment(old, p) {
			return Payment{}, fmt.Errorf("%w: payment %s", ErrIDConflict, p.ID)
		}
		return old, nil
	}
	o.Payments = append(o.Payments, p)
	o.PaidCents += p.AmountCents
	return p, nil
}
