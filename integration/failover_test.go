package integration

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/policydefault"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/uuidv7"
	"github.com/idemkit/idemkit/observe"
)

// A tenant's home region is lost with a payment not yet replicated, and an
// operator fails the tenant over (docs/OPERATIONS.md, "Failing a tenant
// over"). The retry of that payment in the new region finds no record
// there: under the failover's fence it is refused (503 store-unavailable,
// the error naming the failover), not run again; a payment whose UUIDv7
// key was minted after the failover runs. Once the lost region is back and
// replication caught up, the operator marks the failover reconciled and
// the retry is replayed. Moving the tenant back home is a failover too,
// fenced until what the new region wrote has replicated home. Executions
// are counted from the handler's effects table.
func TestRegionsFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegions(t)
	fx := newEffects(t, r.rawW)
	clk := testclock.New()
	var (
		fo   atomic.Pointer[dynamo.Failover]
		down *faults.Transport // the west's calls to the east
		mu   sync.Mutex
		errs []error // the errors the processes returned
	)
	process := func(local string) v2Handler {
		var wrapE func(http.RoundTripper) http.RoundTripper
		if local == "west" {
			wrapE = func(rt http.RoundTripper) http.RoundTripper {
				down = faults.New(rt)
				return down
			}
		}
		s, err := dynamo.NewRegional(dynamo.Regions{
			Clients: map[string]dynamo.Client{"east": r.client(t, "east", wrapE), "west": r.client(t, "west", nil)},
			Home:    r.homeOf,
			Override: func(tenant string) (dynamo.Failover, bool) {
				if f := fo.Load(); f != nil && tenant == "acme" {
					return *f, true
				}
				return dynamo.Failover{}, false
			},
			Local: local,
		}, r.table, dynamo.Options{CallTimeout: callTimeout})
		if err != nil {
			t.Fatal(err)
		}
		g, err := idemkit.New(idemkit.Config{Store: s, Clock: clk, Observer: observe.ObserverFunc(func(_ context.Context, e observe.Event) {
			if e.Err != nil {
				mu.Lock()
				errs = append(errs, e.Err)
				mu.Unlock()
			}
		})})
		if err != nil {
			t.Fatal(err)
		}
		b := newBusiness(fx)
		b.worker = local
		return wrap(g, b, "POST /payments")
	}
	east, west := process("east"), process("west")
	if r.homeOf("acme") != "east" {
		t.Fatal("acme is not homed east")
	}
	lastErr := func() error {
		mu.Lock()
		defer mu.Unlock()
		return errs[len(errs)-1]
	}
	runs := func(key string) int {
		return fx.counts(t)[scopeName(idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: key})]
	}
	expect := func(step string, a answer, kind, key string, n int) {
		t.Helper()
		if got := comboKind(a); got != kind || runs(key) != n {
			t.Fatalf("%s: %s, %d executions; want %s, %d", step, a, runs(key), kind, n)
		}
	}

	// The east takes a payment; replication to the west lags, and the
	// east is lost.
	const key = "failover-charge"
	ev := event("acme", "/payments", key, `{"amount":1999}`)
	first := call(ctx, east, ev)
	expect("first request, in the east", first, "run", key, 1)
	down.Add(faults.Rule{Kind: faults.Reset, Times: never})
	expect("retry in the west, the east lost", call(ctx, west, ev), "unavailable-held", key, 1)

	// The operator fails acme over to the west.
	at := clk.Now().Add(time.Second)
	fo.Store(&dynamo.Failover{Region: "west", At: at})
	clk.Advance(time.Minute)
	expect("retry in the west after the failover", call(ctx, west, ev), "unavailable", key, 1)
	var fe *dynamo.FailoverError
	if err := lastErr(); !errors.As(err, &fe) || !errors.Is(err, idemkit.ErrStoreUnavailable) || !strings.Contains(err.Error(), "failed over to west") {
		t.Fatalf("the refusal's error: %v; want a *FailoverError naming the failover", err)
	}
	newKey := uuidv7.At(at.Add(policydefault.KeyClockSkew + time.Second))
	evNew := event("acme", "/payments", newKey, `{"amount":500}`)
	paid := call(ctx, west, evNew)
	expect("a payment keyed after the failover", paid, "run", newKey, 1)
	if a := call(ctx, west, evNew); comboKind(a) != "replay" || a.Body != paid.Body || runs(newKey) != 1 {
		t.Fatalf("its retry: %s, %d executions; want the replay of %s", a, runs(newKey), paid.Body)
	}

	// The east is back and replication catches up: the operator marks the
	// failover reconciled, and the retry is replayed.
	down.Clear()
	if err := r.toWest.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	fo.Store(&dynamo.Failover{Region: "west", At: at, Reconciled: true})
	if a := call(ctx, west, ev); comboKind(a) != "replay" || a.Body != first.Body || runs(key) != 1 {
		t.Fatalf("retry once reconciled: %s, %d executions; want the replay of %s", a, runs(key), first.Body)
	}

	// Moving acme back home is a failover to the east: fenced until the
	// west's records have replicated there.
	back := clk.Now()
	fo.Store(&dynamo.Failover{Region: "east", At: back})
	expect("retry in the east before the west replicated", call(ctx, east, evNew), "unavailable", newKey, 1)
	if err := r.toEast.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	fo.Store(nil)
	expect("retry in the east once replicated", call(ctx, east, evNew), "replay", newKey, 1)
	summary(t, "unreplicated payment retried after the failover: 503, 1 execution; reconciled: replay; key after the failover: 1 execution")
}
