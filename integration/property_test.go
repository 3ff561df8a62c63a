package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"pgregory.net/rapid"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/memstore"
)

// Values chosen to collide: equal across tenants, operations and keys,
// and holding the separators of the record ID encoding ("o1|", "<len>:").
var (
	propTenants = []string{"a", "b", "a|b", "1:a", "a:1", "12", "o1|1:a", "3:a|b"}
	propPaths   = []string{"/p", "/p|q", "/1:a", "/a", "/12", "/o1|1:a"}
	propKeys    = []string{"k", "a", "1:a", "a|b", "k|1", "12", "1:1:k", "o1|1:a", "3:a|b"}
)

// scopeEcho answers 201 with the scope it ran for, read from the event the
// way the guard reads it (tenant from the JWT claim, operation from the
// method and path, key from the header).
func scopeEcho(runs *atomic.Int64) v2Handler {
	return func(_ context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		runs.Add(1)
		b, _ := json.Marshal(orderBody{
			Tenant: ev.RequestContext.Authorizer.JWT.Claims["sub"], Operation: "POST " + ev.RawPath,
			Key: ev.Headers["idempotency-key"], Order: token(),
		})
		return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: string(b)}, nil
	}
}

type propReq struct {
	tenant, path, key string
	body              int
}

// checkNoCrossing is the property: whatever the interleaving, every 201
// (run or replay) for a scope embeds that scope; per scope one run at most,
// every replay identical to it; a different body under a used scope is a
// 422, never another scope's answer.
func checkNoCrossing(rt *rapid.T, store idemkit.Store, nonce string, maxBatches int) {
	g, err := idemkit.New(idemkit.Config{Store: store})
	if err != nil {
		rt.Fatal(err)
	}
	var runs atomic.Int64
	h := apigw.WrapV2(g, apigw.Config{Tenant: apigw.JWTClaim("sub")}, scopeEcho(&runs))
	batches := rapid.SliceOfN(rapid.SliceOfN(rapid.Custom(func(t *rapid.T) propReq {
		return propReq{
			tenant: rapid.SampledFrom(propTenants).Draw(t, "tenant"),
			path:   rapid.SampledFrom(propPaths).Draw(t, "path"),
			key:    rapid.SampledFrom(propKeys).Draw(t, "key") + nonce,
			body:   rapid.IntRange(0, 1).Draw(t, "body"),
		}
	}), 1, 4), 1, maxBatches).Draw(rt, "batches")

	type scopeState struct {
		body, first string
	}
	var mu sync.Mutex
	seen := map[idemkit.Scope]*scopeState{}
	for _, batch := range batches {
		var wg sync.WaitGroup
		for _, r := range batch {
			wg.Go(func() {
				sc := idemkit.Scope{Tenant: r.tenant, Operation: "POST " + r.path, Key: r.key}
				reqBody := fmt.Sprintf(`{"amount":%d}`, 100+r.body)
				a := call(context.Background(), h, event(r.tenant, r.path, r.key, reqBody))
				mu.Lock()
				defer mu.Unlock()
				st := seen[sc]
				switch {
				case a.Status == 201:
					var got orderBody
					if err := json.Unmarshal([]byte(a.Body), &got); err != nil {
						rt.Fatalf("body %q: %v", a.Body, err)
					}
					if (idemkit.Scope{Tenant: got.Tenant, Operation: got.Operation, Key: got.Key}) != sc {
						rt.Fatalf("request for %+v answered with the response of %+v", sc, got)
					}
					if !a.Replay {
						if st != nil && st.first != "" {
							rt.Fatalf("scope %+v ran twice", sc)
						}
						if st == nil {
							st = &scopeState{body: reqBody}
							seen[sc] = st
						}
						st.first = a.Body
					} else if st != nil && st.first != "" && a.Body != st.first {
						rt.Fatalf("scope %+v: replay %q, first %q", sc, a.Body, st.first)
					}
				case a.Status == 409 && (a.Problem == "in-flight" || a.Problem == "outcome-pending"):
				case a.Status == 422 && a.Problem == "fingerprint-mismatch":
				default:
					rt.Fatalf("scope %+v: unexpected %v", sc, a)
				}
			})
		}
		wg.Wait()
	}
}

// TestPropertyNoCrossScope checks checkNoCrossing on the in-memory store.
func TestPropertyNoCrossScope(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) { checkNoCrossing(rt, memstore.New(), "", 12) })
}

// TestPropertyNoCrossScopeDynamo checks checkNoCrossing on dynalite, with
// shorter interleavings (IDEMKIT_RELIABILITY=full: as long as on memstore).
func TestPropertyNoCrossScopeDynamo(t *testing.T) {
	t.Parallel()
	// Concurrent batches hit one scope at once.
	dynalite.Require(t, dynalite.AtomicConditionalWrites)
	c := dynalite.Client(t)
	table := dynalite.CreateTable(t, c, dynamo.TableDefinition("prop", dynamo.Options{}))
	store, err := dynamo.New(c, table, dynamo.Options{CallTimeout: callTimeout})
	if err != nil {
		t.Fatal(err)
	}
	var run atomic.Int64
	batches := size(3, 12)
	rapid.Check(t, func(rt *rapid.T) {
		checkNoCrossing(rt, store, fmt.Sprintf("#%d", run.Add(1)), batches)
	})
	summary(t, "property cases on dynalite=%d of up to %d concurrent batches (memstore: 100 cases of up to 12)", run.Load(), batches)
}
