package idemkit_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/idemkit/idemkit"
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
	key, _ := idemkit.ParseKey([]string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`}, idemkit.KeyOptions{})
	req := idemkit.Request{
		Scope:       idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: key},
		Fingerprint: "v1:sha256:…", // from package fingerprint
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

func ExampleParseKey() {
	for _, v := range []string{`abc`, `"abc"`, `"a b"`, `a b`} {
		k, err := idemkit.ParseKey([]string{v}, idemkit.KeyOptions{})
		fmt.Printf("%q -> %q %v\n", v, k, err)
	}
	// Output:
	// "abc" -> "abc" <nil>
	// "\"abc\"" -> "abc" <nil>
	// "\"a b\"" -> "a b" <nil>
	// "a b" -> "" idemkit: invalid Idempotency-Key: character outside printable ASCII: byte 0x20 at offset 1
}
