package idemkit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/memstore"
)

// orders stands for the handler's own table, with a conditional put.
type orders map[string]string

var errExists = errors.New("order exists")

func (o orders) putIfAbsent(id, item string) error {
	if _, ok := o[id]; ok {
		return errExists
	}
	o[id] = item
	return nil
}

// The handler keys its own write on the execution identity, so a retry
// whose first attempt wrote the order (and lost the answer) finds that
// order instead of creating a second one.
func ExampleExecutionID() {
	guard, _ := idemkit.New(idemkit.Config{Store: memstore.New()})
	db := orders{}
	lost := true // the first put lands, but its answer is lost
	create := func(ctx context.Context) (*idemkit.Snapshot, error) {
		x, ok := idemkit.ExecutionID(ctx)
		if !ok {
			return nil, errors.New("create: not run by the guard") // every unguarded call would share one ID
		}
		id := "ord_" + x[:20]
		err := db.putIfAbsent(id, "2 x espresso")
		if lost {
			lost = false
			return nil, errors.New("put order: connection reset") // the key is released
		}
		if err != nil && !errors.Is(err, errExists) {
			// Unsure whether it landed and no way to look: keep the key.
			return nil, fmt.Errorf("put order: %w", idemkit.ErrOutcomeUnknown)
		}
		return &idemkit.Snapshot{Status: http.StatusCreated, Body: []byte(`{"id":"` + id + `"}`)}, nil
	}
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k1"}, Fingerprint: "v2:sha256:…"}
	_, _, err := guard.Do(context.Background(), req, create)
	fmt.Println("first attempt:", err)
	snap, _, err := guard.Do(context.Background(), req, create)
	fmt.Println("retry:", snap.Status, err, "orders:", len(db))
	// Output:
	// first attempt: put order: connection reset
	// retry: 201 <nil> orders: 1
}
