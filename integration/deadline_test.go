package integration

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/policydefault"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
)

// TestDeadlineUsedUpOnArrival: a Lambda invocation whose deadline is
// (nearly) used up when it reaches the guard, the claim then losing its
// answer or timing out. The handler must not run; the client is told
// whether the key may be held, and it is not held unless the client was
// told so; a retry with time to spare converges to one run (counted from
// the handler's effects table) or, for a claim that could be neither
// confirmed nor freed, to the lease policy's answer after the lease
// (deadline + LeaseMargin).
func TestDeadlineUsedUpOnArrival(t *testing.T) {
	for _, tc := range []struct {
		name  string
		left  time.Duration // time to the deadline on arrival; <= 0: passed
		rules []faults.Rule
		// first is the kind of the first answer; final what a retry with
		// time to spare converges to.
		first, final string
		effects      int
	}{
		{"deadline-passed", -time.Second, nil, "unavailable", "replay", 1},
		{"claim-times-out", 300 * time.Millisecond, []faults.Rule{onClaim(faults.Timeout, 0, never)}, "unavailable", "replay", 1},
		{"claim-lands-times-out", 300 * time.Millisecond, []faults.Rule{onClaim(faults.TimeoutApplied, 0, 1)}, "unavailable", "replay", 1},
		{"claim-lands-times-out+release-5xx-always", 300 * time.Millisecond,
			[]faults.Rule{onClaim(faults.TimeoutApplied, 0, 1), onRelease(faults.ServerError, 0, never)}, "unavailable-held", "indeterminate", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := faults.New(baseTransport(), tc.rules...)
			store, raw, _ := newStore(t, ft, dynamo.Options{CallTimeout: dynalite.Scale(time.Second), MaxBackoff: 10 * time.Millisecond})
			fx := newEffects(t, raw)
			clk := testclock.New()
			// The deadlines here are tens of milliseconds: align the clock,
			// truncated to the second, with the wall clock.
			clk.Advance(time.Since(clk.Now()))
			g := testguard.New(t, idemkit.Config{Store: store, Clock: clk, ClaimBackoff: time.Hour})
			b := newBusiness(fx)
			h := wrap(g, b, "POST /payments")
			key := "deadline-" + tc.name
			ev := event("acme", "/payments", key, `{"amount":1999}`)
			sc := idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: key}

			ctx := clk.Deadline(t, context.Background(), tc.left)
			first := call(ctx, h, ev)
			if got := comboKind(first); got != tc.first {
				t.Fatalf("first answer %v, want %s", first, tc.first)
			}
			if !first.retryAfter() {
				t.Errorf("first answer without Retry-After: %v", first)
			}
			if n := fx.counts(t)[scopeName(sc)]; n != 0 {
				t.Fatalf("the handler took effect %d times with its deadline used up", n)
			}
			if tc.rules != nil && len(ft.Events()) == 0 {
				t.Fatal("no fault was injected")
			}
			rec, err := getLive(context.Background(), store, sc.ID(false), clk.Now())
			held := err == nil
			if held != (tc.first == "unavailable-held") {
				t.Fatalf("record after the first answer: %v, %v; told held: %v", rec, err, tc.first == "unavailable-held")
			}
			if held && rec.LeaseUntil.After(clk.Now().Add(tc.left+policydefault.LeaseMargin+time.Millisecond)) {
				t.Errorf("lease until %v: more than the deadline plus the margin", rec.LeaseUntil)
			}

			ft.Clear()
			var final string
			for i := 0; ; i++ {
				if i == 5 {
					t.Fatalf("no convergence after 5 retries, last %s", final)
				}
				a := call(clk.Deadline(t, context.Background(), 10*time.Second), h, ev)
				final = a.kind()
				if final == "in-flight" || final == "pending" {
					clk.Advance(pastPending(tc.left + policydefault.LeaseMargin))
					continue
				}
				if final == "run" {
					continue
				}
				break
			}
			if final != tc.final {
				t.Fatalf("converged to %s, want %s", final, tc.final)
			}
			if n := fx.counts(t)[scopeName(sc)]; n != tc.effects {
				t.Fatalf("%d effects, want %d", n, tc.effects)
			}
			summary(t, "%s left on arrival: first %s; converged to %s; effects %d; %d faults injected", tc.left, tc.first, final, tc.effects, len(ft.Events()))
		})
	}
}
