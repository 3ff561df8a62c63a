package idemkit_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/idemkey"
	"github.com/idemkit/idemkit/memstore"
)

func ExampleGuard_Do() {
	guard, err := idemkit.New(idemkit.Config{Store: memstore.New()})
	if err != nil {
		panic(err)
	}
	charge := func(ctx context.Context) (*idemkit.Snapshot, error) {
		fmt.Println("charging the card")
		return &idemkit.Snapshot{
			Status: http.StatusCreated,
			Header: http.Header{"Content-Type": {"application/json"}},
			Body:   []byte(`{"id":"pay_1","status":"captured"}`),
		}, nil
	}
	key, _ := idemkey.Parse([]string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`}, idemkey.Options{})
	req := idemkit.Request{
		Scope:       idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: key},
		Fingerprint: "v2:sha256:…", // from package fingerprint
	}
	for i := 0; i < 2; i++ {
		snap, replayed, err := guard.Do(context.Background(), req, charge)
		if err != nil {
			panic(err)
		}
		fmt.Println(snap.Status, string(snap.Body), "replayed:", replayed)
	}
	// Output:
	// charging the card
	// 201 {"id":"pay_1","status":"captured"} replayed: false
	// 201 {"id":"pay_1","status":"captured"} replayed: true
}

func ExampleScope_ID() {
	short := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k-001"}
	fmt.Println(short.ID(false))

	// A scope too long for a readable ID keeps its tenant and hashes the rest.
	long := idemkit.Scope{Tenant: "acme", Operation: "POST /" + strings.Repeat("x", 3000), Key: "k-001"}
	id := long.ID(false)
	fmt.Println(id[:10], len(id))
	// Output:
	// o1|4:acme12:POST /orders5:k-001
	// o1h|4:acme 74
}
