package idemkit_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"

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

func ExampleParseKey() {
	for _, v := range []string{`abc`, `"abc"`, `"a b"`, `a b`} {
		k, err := idemkit.ParseKey([]string{v}, idemkit.KeyOptions{})
		fmt.Printf("%q -> %q %v\n", v, k, err)
	}
	// Output:
	// "abc" -> "abc" <nil>
	// "\"abc\"" -> "abc" <nil>
	// "\"a b\"" -> "a b" <nil>
	// "a b" -> "" idemkit: invalid Idempotency-Key: character not allowed in a key: a space at offset 1 of a bare key (send a key with spaces quoted: "\"a b\"")
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

func ExampleParseKey_joinedLines() {
	// API Gateway v2 joins header lines with commas: the same key sent
	// bare and quoted is still one key.
	k, err := idemkit.ParseKey([]string{`0190a1b2-40d5-43e8-bc93-6894a57f9324, "0190a1b2-40d5-43e8-bc93-6894a57f9324"`}, idemkit.KeyOptions{})
	fmt.Println(k, err)
	// Output:
	// 0190a1b2-40d5-43e8-bc93-6894a57f9324 <nil>
}
