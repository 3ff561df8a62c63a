package dynamo_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// TestHeadersOverTheCap: a snapshot whose allow-listed headers alone do not
// fit the item is never stored without them as if complete: whatever its
// body (none, small, large), it is stored Omitted with its status and
// Location, so that a replay answers "response not stored" instead of the
// status without the headers the response had.
func TestHeadersOverTheCap(t *testing.T) {
	const limit = 8 << 10
	c := client(t)
	s, err := dynamo.New(c, newTable(t, c), dynamo.Options{MaxItemSize: limit})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	big := strings.Repeat("v", limit)
	for i, body := range [][]byte{nil, {}, []byte(`{"id":"ord_1"}`), randomBytes(limit)} {
		now := base()
		sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "hdr-" + string(rune('a'+i))}
		rec := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o", LeaseUntil: now.Add(60e9), ExpiresAt: now.Add(3600e9), CreatedAt: now}
		if _, err := s.Claim(ctx, rec, now, idemkit.ClaimOptions{}); err != nil {
			t.Fatal(err)
		}
		done := *rec
		done.State, done.CompletedAt = idemkit.StateCompleted, now
		done.Snapshot = &idemkit.Snapshot{Status: 201, Body: body,
			Header: http.Header{"Location": {"/orders/1"}, "Content-Type": {"application/json"}, "X-Big": {big}}}
		if err := s.Complete(ctx, &done, now); err != nil {
			t.Fatalf("body %d bytes: Complete: %v", len(body), err)
		}
		got, err := s.Get(ctx, rec.ID, now)
		if err != nil {
			t.Fatal(err)
		}
		g := got.Snapshot
		if !g.Omitted || len(g.Body) != 0 || g.Status != 201 || g.Header.Get("Location") != "/orders/1" {
			t.Errorf("body %d bytes, %d-byte header: stored status %d, omitted %v, %d body bytes, header %v; want omitted with the status and Location",
				len(body), len(big), g.Status, g.Omitted, len(g.Body), g.Header)
		}
	}
}
