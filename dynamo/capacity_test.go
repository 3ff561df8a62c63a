package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/testpayload"
	"github.com/idemkit/idemkit/internal/usage"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/observe"
	"github.com/idemkit/idemkit/warmcache"
)

// The round trips and capacity units of each path are deterministic, so
// these tests pin them exactly; `make bench` reports the same figures.
// TestUsage (engine_test.go) covers fresh and replay on the test server,
// TestReplayUsageALLOLD (claim_test.go) the one-call replay on a recorded
// answer, and TestReplayCallsByServer counts a replay on dynalite and moto.

// TestNoCallsAtInit: building the store, the guard, the cache and both
// adapters makes no call to DynamoDB.
func TestNoCallsAtInit(t *testing.T) {
	var calls atomic.Int32
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		jsonError(w, 500, []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"no call expected"}`))
	})
	s := storeOn(t, c, "idem", dynamo.Options{})
	g := guardWith(t, idemkit.Config{Store: warmcache.New(s, warmcache.Config{})})
	_ = apigw.WrapV2(g, apigw.Config{Tenant: apigw.SingleTenant("t")}, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{}, nil
	})
	_ = httpmw.New(g, httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return "t", nil }})(http.NotFoundHandler())
	if n := calls.Load(); n != 0 {
		t.Fatalf("%d DynamoDB calls at init, want none", n)
	}
}

// TestRoundTrips: the calls of each path, by operation. A replay and a
// conflict are one PutItem on a server that returns the item with a
// condition failure (DynamoDB), PutItem and GetItem on one that does not
// (dynalite).
func TestRoundTrips(t *testing.T) {
	read := 1 // GetItems of a lost claim
	if dynalite.Has(t, dynalite.AllOldOnConditionFailure) {
		read = 0
	}
	_, c, table := newStore(t, dynamo.Options{})
	cc := newCounting(c)
	s := storeOn(t, cc, table, dynamo.Options{})
	g, obs := observed(t, s)
	ctx := context.Background()
	req := func(key string) idemkit.Request {
		return idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: key}, Fingerprint: "v1:sha256:rt"}
	}
	ok := func(context.Context) (*idemkit.Snapshot, error) {
		return &idemkit.Snapshot{Status: 201, Body: []byte("ok")}, nil
	}
	check := func(what string, kind observe.EventKind, want map[string]int, run func()) {
		t.Helper()
		before := map[string]int{}
		for op := range want {
			before[op] = cc.Calls(op)
		}
		run()
		ev := obs.Last()
		total := 0
		for op, n := range want {
			total += n
			if got := cc.Calls(op) - before[op]; got != n {
				t.Errorf("%s: %d %s calls, want %d", what, got, op, n)
			}
		}
		if ev.Kind != kind || ev.Usage.Calls != total {
			t.Errorf("%s: event %s with %d calls, want %s with %d", what, ev.Kind, ev.Usage.Calls, kind, total)
		}
	}
	check("fresh", observe.EventExecuted, map[string]int{"PutItem": 1, "GetItem": 0, "UpdateItem": 1}, func() {
		if _, _, err := g.Do(ctx, req("fresh"), ok); err != nil {
			t.Fatal(err)
		}
	})
	check("replay", observe.EventReplayed, map[string]int{"PutItem": 1, "GetItem": read, "UpdateItem": 0}, func() {
		if _, replayed, err := g.Do(ctx, req("fresh"), ok); err != nil || !replayed {
			t.Fatal(replayed, err)
		}
	})
	check("handler error", observe.EventReleased, map[string]int{"PutItem": 1, "GetItem": 0, "UpdateItem": 1}, func() {
		_, _, err := g.Do(ctx, req("fails"), func(context.Context) (*idemkit.Snapshot, error) {
			return nil, errors.New("downstream failed")
		})
		if err == nil {
			t.Fatal("handler error not returned")
		}
	})
	// Another request holds the key.
	now := time.Now()
	busy := req("busy")
	create(t, s, &idemkit.Record{ID: busy.Scope.ID(false), Scope: busy.Scope, State: idemkit.StateInFlight, Fingerprint: busy.Fingerprint,
		Owner: "other", LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(time.Hour), CreatedAt: now})
	check("in-flight conflict", observe.EventConflict, map[string]int{"PutItem": 1, "GetItem": read, "UpdateItem": 0}, func() {
		if _, _, err := g.Do(ctx, busy, ok); !errors.Is(err, idemkit.ErrInFlight) {
			t.Fatalf("request during another's lease: %v, want ErrInFlight", err)
		}
	})
}

// inFlightItem is DynamoDB's answer to a claim that lost to a live
// in_flight record, with ReturnValuesOnConditionCheckFailure=ALL_OLD.
const inFlightItem = `{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"The conditional request failed","Item":{"pk":{"S":"o1|4:acme12:POST /orders5:k-001"},"st":{"S":"in_flight"},"tn":{"S":"acme"},"op":{"S":"POST /orders"},"ik":{"S":"k-001"},"fp":{"S":"v1:sha256:3f0c5b2a"},"ow":{"S":"5b7f7a1e-6a55-4c36-9a53-0d1f3d2e9c41"},"lu":{"N":"4102444800000"},"ru":{"N":"4102444800000"},"exp":{"N":"4102444800"},"ca":{"N":"1767225600000"}}}`

// TestConflictALLOLD: on a server that returns the blocking item with the
// failure, an in-flight conflict is one round trip.
func TestConflictALLOLD(t *testing.T) {
	var mu sync.Mutex
	ops := map[string]int{}
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ops[target(r)]++
		mu.Unlock()
		jsonError(w, http.StatusBadRequest, []byte(inFlightItem))
	})
	s := storeOn(t, c, "idem", dynamo.Options{})
	g, obs := observed(t, s)
	_, _, err := g.Do(context.Background(), idemkit.Request{Scope: allOldScope, Fingerprint: "v1:sha256:3f0c5b2a"}, func(context.Context) (*idemkit.Snapshot, error) {
		t.Error("handler ran on a conflict")
		return nil, errors.New("ran")
	})
	if !errors.Is(err, idemkit.ErrInFlight) {
		t.Fatalf("Do: %v, want ErrInFlight", err)
	}
	if ev := obs.Last(); ev.Kind != observe.EventConflict || ev.Usage.Calls != 1 {
		t.Fatalf("event %s usage %+v, want a conflict in 1 call", ev.Kind, ev.Usage)
	}
	mu.Lock()
	defer mu.Unlock()
	if ops["PutItem"] != 1 || len(ops) != 1 {
		t.Fatalf("calls %v, want one PutItem", ops)
	}
}

// TestCapacityUnits: what a claim and a completion consume on a server
// whose accounting follows DynamoDB's (1 write unit per started KB).
func TestCapacityUnits(t *testing.T) {
	dynalite.Require(t, dynalite.FaithfulCapacity)
	units := func(t *testing.T, opts dynamo.Options, body []byte) (claim, complete float64) {
		t.Helper()
		s, _, _ := newStore(t, opts)
		g, obs := observed(t, s)
		var afterClaim observe.Usage
		req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "3b241101-e2bb-4255-8caf-4136c566a962"}, Fingerprint: "v1:sha256:8a4b0c8f9e2d7a61c3f05e4b92d1a7c6e0f38b5d2a9c4e17f6b3d8a05c2e9f14"}
		_, _, err := g.Do(context.Background(), req, func(ctx context.Context) (*idemkit.Snapshot, error) {
			afterClaim, _ = usage.From(ctx)
			return &idemkit.Snapshot{Status: 201, Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/orders/ord_0190a5dac96774b"}}, Body: body}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		total := obs.Last().Usage
		if afterClaim.Calls != 1 || total.Calls != 2 {
			t.Fatalf("calls %d then %d, want 1 then 2", afterClaim.Calls, total.Calls)
		}
		t.Logf("%d-byte body: claim %v, completion %v write units", len(body), afterClaim.WriteUnits, total.WriteUnits-afterClaim.WriteUnits)
		return afterClaim.WriteUnits, total.WriteUnits - afterClaim.WriteUnits
	}
	t.Run("claim and 4 KB", func(t *testing.T) {
		claim, complete := units(t, dynamo.Options{}, testpayload.JSON(4<<10))
		if claim != 1 {
			t.Errorf("claim: %v write units, want 1", claim)
		}
		if complete > 2 {
			t.Errorf("completion of a 4 KB JSON response: %v write units, want at most 2", complete)
		}
	})
	// compressed checks a 64 KB body's claim and completion against most
	// write units, and its compressed completion against a third of the
	// uncompressed one.
	compressed := func(t *testing.T, what string, body []byte, most float64) {
		claim, zipped := units(t, dynamo.Options{}, body)
		_, raw := units(t, dynamo.Options{CompressAbove: -1}, body)
		if claim+zipped > most {
			t.Errorf("claim and completion of %s: %v write units, want at most %v", what, claim+zipped, most)
		}
		if raw < 64 || zipped*3 > raw {
			t.Errorf("completion of %s: %v write units compressed, %v uncompressed; want at most a third", what, zipped, raw)
		}
	}
	// The compression level is chosen to hold 12 (docs/PERFORMANCE.md).
	t.Run("64 KB", func(t *testing.T) { compressed(t, "a 64 KB JSON response", testpayload.JSON(64<<10), 12) })
	// CodecS2 trades write units for CPU: at 64 KB it writes about half
	// again as many bytes as zstd, still under a third of the raw body.
	t.Run("S2", func(t *testing.T) {
		s2 := dynamo.Options{Codec: dynamo.CodecS2}
		claim, small := units(t, s2, testpayload.JSON(4<<10))
		if claim+small > 3 {
			t.Errorf("S2: claim and completion of a 4 KB JSON response: %v write units, want at most 3", claim+small)
		}
		body := testpayload.JSON(64 << 10)
		_, fast := units(t, s2, body)
		_, zipped := units(t, dynamo.Options{}, body)
		_, raw := units(t, dynamo.Options{CompressAbove: -1}, body)
		if fast*3 > raw || fast <= zipped || claim+fast > 18 {
			t.Errorf("S2: completion of a 64 KB JSON response: %v write units (zstd %v, raw %v); want more than zstd, at most 18 with the claim, at most a third of raw", fast, zipped, raw)
		}
	})
	// A payment-list response has more random ids than the orders body
	// and compresses less (5.7x against 6.1x): one write unit more at any
	// zstd level up to SpeedBetterCompression (docs/PERFORMANCE.md).
	t.Run("64 KB charges", func(t *testing.T) { compressed(t, "a 64 KB charges list", testpayload.APIJSON(64<<10), 13) })
}

// callCounter is an HTTP transport counting the DynamoDB calls that pass
// through it, by operation.
type callCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *callCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.calls[target(r)]++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *callCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.calls
	c.calls = map[string]int{}
	return m
}

// TestReplayCallsByServer: a replay, counted on the wire, is one call (the
// claim's PutItem, whose failure carries the item) on moto, which honours
// ReturnValuesOnConditionCheckFailure=ALL_OLD as DynamoDB does, and two
// (PutItem, then GetItem) on dynalite, which does not. The engine's Usage
// counts the same calls.
func TestReplayCallsByServer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) string
		calls map[string]int
	}{
		{"dynalite", func(t *testing.T) string { return dynalite.NewServer(t).Endpoint() }, map[string]int{"PutItem": 1, "GetItem": 1}},
		{"moto", func(t *testing.T) string { return dynalite.NewMoto(t).Endpoint() }, map[string]int{"PutItem": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			ep := tc.start(t)
			allOld, err := dynalite.Probe(ctx, ep, dynalite.AllOldOnConditionFailure)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s", tc.name, allOld)
			if want := len(tc.calls) == 1; allOld.Has != want {
				t.Fatalf("%s: ALL_OLD on condition failure %v, want %v", tc.name, allOld.Has, want)
			}
			counter := &callCounter{calls: map[string]int{}}
			c, err := dynalite.NewClientVia(ctx, ep, counter)
			if err != nil {
				t.Fatal(err)
			}
			table := dynalite.TableName(t)
			if err := dynamo.CreateTable(ctx, c, table, dynamo.Options{}); err != nil {
				t.Fatal(err)
			}
			s := storeOn(t, c, table, dynamo.Options{CallTimeout: dynalite.Scale(30 * time.Second)})
			g, obs := observed(t, s)
			req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "replay-calls"}, Fingerprint: "v1:sha256:rc"}
			ok := func(context.Context) (*idemkit.Snapshot, error) {
				return &idemkit.Snapshot{Status: 201, Body: []byte(`{"id":"ord_1"}`)}, nil
			}
			if _, _, err := g.Do(ctx, req, ok); err != nil {
				t.Fatal(err)
			}
			counter.take()
			snap, replayed, err := g.Do(ctx, req, ok)
			if err != nil || !replayed || string(snap.Body) != `{"id":"ord_1"}` {
				t.Fatalf("second Do = %+v, %v, %v; want the replay", snap, replayed, err)
			}
			got := counter.take()
			if fmt.Sprint(got) != fmt.Sprint(tc.calls) {
				t.Fatalf("%s: replay made calls %v, want %v", tc.name, got, tc.calls)
			}
			if u := obs.Last().Usage; u.Calls != len(tc.calls) {
				t.Fatalf("%s: Usage.Calls %d, want %d", tc.name, u.Calls, len(tc.calls))
			}
			t.Logf("%s: a replay is %d DynamoDB call(s): %v", tc.name, len(tc.calls), got)
		})
	}
}
