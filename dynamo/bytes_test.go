package dynamo_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/testpayload"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// TestFreshRequestBytes: the request bodies a fresh request (its Create
// and the Replace completing it, a 200-byte JSON answer, through the API
// Gateway adapter as the bench sends it) and its replay send to DynamoDB
// stay within a budget, on a table of a 45-character name, the bench's: bytes
// are transfer and the server's parsing on every request. They are
// counted on the wire, as the SDK serialized them.
func TestFreshRequestBytes(t *testing.T) {
	const budget = 1650
	ctx := context.Background()
	wire := &bodyBytes{}
	c, err := dynalite.NewClientVia(ctx, dynalite.Endpoint(t), wire)
	if err != nil {
		t.Fatal(err)
	}
	table := fmt.Sprintf("idembench-bytes-%d", time.Now().UnixNano())
	table += strings.Repeat("x", 45-len(table))
	if err := dynamo.CreateTable(t.Context(), c, table, dynamo.Options{}); err != nil {
		t.Fatal(err)
	}
	wire.take()
	s := storeOn(t, c, table, testOptions())
	g := guard(t, s)
	body := string(testpayload.JSON(200))
	h := apigw.WrapV2(g, apigw.Config{Tenant: apigw.SingleTenant("bench")}, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 201,
			Headers: map[string]string{"Content-Type": "application/json", "Location": "/orders/ord_1"}, Body: body}, nil
	})
	key := fmt.Sprintf("cost-fresh-200-%d-zstd-5", time.Now().UnixNano())
	if resp, err := h(ctx, testpayload.Event(key)); err != nil || resp.StatusCode != 201 {
		t.Fatalf("fresh request: %d, %v", resp.StatusCode, err)
	}
	u := wire.take()
	t.Logf("table name %d characters, key %d: a fresh request sent %d bytes in %d calls", len(table), len(key), u.Bytes, u.Calls)
	if u.Calls != 2 || u.Bytes > budget {
		t.Fatalf("a fresh request sent %d bytes in %d calls; want 2 calls, at most %d bytes", u.Bytes, u.Calls, budget)
	}
	// A replay is one call on DynamoDB: the claim's Create, refused with
	// the record (a server without ALL_OLD on a failed condition, as
	// dynalite, is read a second time, not counted here).
	const replayBudget = 850
	wire.first = true
	if resp, err := h(ctx, testpayload.Event(key)); err != nil || resp.StatusCode != 201 {
		t.Fatalf("replay: %d, %v", resp.StatusCode, err)
	}
	u = wire.take()
	t.Logf("a replay's claim sent %d bytes", u.First)
	if u.First > replayBudget {
		t.Fatalf("a replay's claim sent %d bytes; want at most %d", u.First, replayBudget)
	}
}

// bodyBytes is an HTTP transport counting the calls that pass through it
// and the bytes of their request bodies.
type bodyBytes struct {
	mu    sync.Mutex
	calls int
	bytes int
	first bool // count the next call's bytes apart too
	once  int
}

// wireUse is what bodyBytes counted: First is the bytes of the first call
// after first was set.
type wireUse struct{ Calls, Bytes, First int }

func (b *bodyBytes) RoundTrip(r *http.Request) (*http.Response, error) {
	b.mu.Lock()
	b.calls++
	b.bytes += int(r.ContentLength)
	if b.first {
		b.once, b.first = int(r.ContentLength), false
	}
	b.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// take returns the calls and bytes counted since the last take.
func (b *bodyBytes) take() wireUse {
	b.mu.Lock()
	defer b.mu.Unlock()
	u := wireUse{b.calls, b.bytes, b.once}
	b.calls, b.bytes, b.once = 0, 0, 0
	return u
}
