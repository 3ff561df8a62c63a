package integration

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
)

// TestRegionsUnderFaults: a tenant homed in the east is served by a
// process in the west whose calls to the east (its home region) meet
// faults: answers lost, a completion that never lands, the home region
// lost right after a claim landed. A duplicate then arrives at the east
// process, and, after replication, at the west one again. Pinned to the
// home region, every request of the key sees the home record: at most
// one run (counted from the handler's effects table), and a key whose
// outcome was lost is kept (fail-closed) or run once more only after its
// lease (takeover), never run in the west from a lagging copy.
func TestRegionsUnderFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegions(t)
	fx := newEffects(t, r.rawE)
	const lease = 2 * time.Second
	for _, tc := range []struct {
		name   string
		policy idemkit.StalePolicy
		rules  []faults.Rule
		// west, east, later: the kinds of the west process's answer, the
		// east duplicate's, and what both converge to once the faults
		// clear (after the lease when the east duplicate got in-flight).
		west, east, later string
		effects           int
	}{
		{"claim-lost-ack+completion-lost-ack-always", idemkit.FailClosed,
			[]faults.Rule{onClaim(faults.LostAck, 0, 1), onComplete(faults.LostAck, 0, never)},
			"run", "replay", "replay", 1},
		{"completion-5xx-always/fail-closed", idemkit.FailClosed,
			[]faults.Rule{onComplete(faults.ServerError, 0, never)},
			"run", "in-flight", "indeterminate", 1},
		{"claim-lost-ack-then-home-unreachable/fail-closed", idemkit.FailClosed,
			[]faults.Rule{onClaim(faults.LostAck, 0, 1), {Kind: faults.Reset, Times: never}},
			"unavailable-held", "in-flight", "indeterminate", 0},
		{"claim-lost-ack-then-home-unreachable/takeover", idemkit.Takeover,
			[]faults.Rule{onClaim(faults.LostAck, 0, 1), {Kind: faults.Reset, Times: never}},
			"unavailable-held", "in-flight", "replay", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testclock.New()
			var ft *faults.Transport
			process := func(local string) v2Handler {
				var wrapE func(http.RoundTripper) http.RoundTripper
				if local == "west" {
					wrapE = func(rt http.RoundTripper) http.RoundTripper {
						ft = faults.New(rt, tc.rules...)
						return ft
					}
				}
				s, err := dynamo.NewRegional(dynamo.Regions{
					Clients: map[string]dynamo.Client{"east": r.client(t, "east", wrapE), "west": r.client(t, "west", nil)},
					Home:    r.homeOf,
					Local:   local,
				}, r.table, dynamo.Options{CallTimeout: callTimeout, MaxBackoff: 10 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				g := testguard.New(t, idemkit.Config{Store: s, Clock: clk, Policy: idemkit.Policy{Lease: lease, OnStaleLease: tc.policy}})
				b := newBusiness(fx)
				b.worker = local
				return wrap(g, b, "POST /payments")
			}
			east, west := process("east"), process("west")
			tenant, key := "acme", "region-"+tc.name
			if r.homeOf(tenant) != "east" {
				t.Fatalf("tenant %s is homed %s, want east", tenant, r.homeOf(tenant))
			}
			ev := event(tenant, "/payments", key, `{"amount":1999}`)
			sc := idemkit.Scope{Tenant: tenant, Operation: "POST /payments", Key: key}
			effects := func() int { return fx.counts(t)[scopeName(sc)] }
			flush := func() {
				t.Helper()
				if err := r.toWest.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				if err := r.toEast.Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			var seen []string
			var stored string
			check := func(a answer) string {
				t.Helper()
				k := comboKind(a)
				seen = append(seen, k)
				switch k {
				case "run":
					if stored != "" {
						t.Fatalf("second run: %v (first %s)", a, stored)
					}
					stored = a.Body
				case "replay":
					if a.Body != stored {
						t.Fatalf("replay %q, want %q", a.Body, stored)
					}
				}
				if n := effects(); n > tc.effects {
					t.Fatalf("%d effects after %v, want at most %d; answers %v", n, a, tc.effects, seen)
				}
				return k
			}

			if got := check(call(ctx, west, ev)); got != tc.west {
				t.Errorf("west: %s, want %s", got, tc.west)
			}
			if got := check(call(ctx, east, ev)); got != tc.east {
				t.Errorf("east duplicate: %s, want %s", got, tc.east)
			}
			if len(ft.Events()) == 0 {
				t.Fatal("no fault was injected")
			}
			ft.Clear()
			if tc.east == "in-flight" {
				clk.Advance(pastPending(lease))
			}
			flush()
			for _, h := range []v2Handler{east, west, west, east} {
				if got := check(call(ctx, h, ev)); got != tc.later && !(got == "run" && tc.later == "replay") {
					t.Fatalf("after the faults: %s, want %s; answers %v", got, tc.later, seen)
				}
				flush()
			}
			if got := effects(); got != tc.effects {
				t.Fatalf("%d effects, want %d; answers %v", got, tc.effects, seen)
			}
			summary(t, "answers %v; effects %d", seen, tc.effects)
		})
	}
}
