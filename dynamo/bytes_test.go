package dynamo_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/bench"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// TestFreshRequestBytes: the request bodies a fresh request sends to
// DynamoDB (its Create and the Replace completing it, a 200-byte JSON
// answer, through the API Gateway adapter as the bench sends it) stay
// within a budget, on a table of a 45-character name, the bench's: bytes
// are transfer and the server's parsing on every request.
func TestFreshRequestBytes(t *testing.T) {
	const budget = 1650
	c := client(t)
	table := fmt.Sprintf("idembench-bytes-%d", time.Now().UnixNano())
	table += strings.Repeat("x", 45-len(table))
	if err := dynamo.CreateTable(t.Context(), c, table); err != nil {
		t.Fatal(err)
	}
	m := &bench.Meter{Client: c, Table: table}
	s, err := dynamo.New(m, table, testOptions())
	if err != nil {
		t.Fatal(err)
	}
	g, err := idemkit.New(idemkit.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	body := string(bench.JSON(200))
	h := apigw.WrapV2(g, apigw.Config{Tenant: apigw.SingleTenant("bench")}, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 201,
			Headers: map[string]string{"Content-Type": "application/json", "Location": "/orders/ord_1"}, Body: body}, nil
	})
	ctx := context.Background()
	key := fmt.Sprintf("cost-fresh-200-%d-zstd-5", time.Now().UnixNano())
	if resp, err := h(ctx, bench.Event(key)); err != nil || resp.StatusCode != 201 {
		t.Fatalf("fresh request: %d, %v", resp.StatusCode, err)
	}
	u, err := m.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("table name %d characters, key %d: a fresh request sent %d bytes in %d calls", len(table), len(key), u.Bytes, u.Calls)
	if u.Calls != 2 || u.Bytes > budget {
		t.Fatalf("a fresh request sent %d bytes in %d calls; want 2 calls, at most %d bytes", u.Bytes, u.Calls, budget)
	}
}
