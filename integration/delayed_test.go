package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// failTwice answers a transient 503 on the handler's first two runs.
func failTwice(n int) int {
	if n <= 2 {
		return 503
	}
	return 201
}

// A late step of a delayed-write scenario.
const (
	lateCall       = "call"         // a request; want: the answer's comboKind
	lateCallAndRun = "call-deliver" // a request whose handler run delivers the held writes; want: the answer's kind
	lateDeliver    = "deliver"      // the held writes reach the server; want: "applied" or "refused"
	lateLeaseEnds  = "lease-ends"   // the guard's clock moves past the lease
	lateResolve    = "resolve"      // an operator resolves the record; want: "completed" or "failed"
	lateState      = "state"        // the record's state; want: a state or "absent"
	lateClear      = "clear"        // the rules are removed (held writes stay held)
)

type lateStep struct{ do, want string }

// delayedCase is a write of the store whose first copy is held by
// DelayedApply (its call fails as a timeout, the SDK or the engine
// retries, the request goes on) and reaches the server later, at one
// step of the scenario.
type delayedCase struct {
	name   string
	policy idemkit.StalePolicy
	rules  []faults.Rule
	// answer chooses the status of the handler's n-th run (nil: 201);
	// unknownFirst makes its first run report idemkit.ErrOutcomeUnknown
	// instead.
	answer       func(n int) int
	unknownFirst bool
	steps        []lateStep
	// effects is the number of executions the handler's own table holds
	// at the end.
	effects int
}

func delayedCases() []delayedCase {
	const delayed = faults.DelayedApply
	r := func(rs ...faults.Rule) []faults.Rule { return rs }
	s := func(pairs ...string) []lateStep {
		var out []lateStep
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, lateStep{pairs[i], pairs[i+1]})
		}
		return out
	}
	return []delayedCase{
		// The claim's first copy lands after the handler's transient 503
		// freed the key: refused by the tombstone the release left (its
		// own owner's), the key stays free and the retry runs, once.
		{name: "claim/after-release/fail-closed", policy: fc, answer: failFirst,
			rules: r(onClaim(delayed, 0, 1)),
			steps: s(lateCall, "transient", lateState, "absent", lateDeliver, "refused", lateState, "absent",
				lateCall, "run", lateCall, "replay", lateState, "completed"),
			effects: 1},
		{name: "claim/after-release/takeover", policy: to, answer: failFirst,
			rules: r(onClaim(delayed, 0, 1)),
			steps: s(lateCall, "transient", lateDeliver, "refused", lateState, "absent",
				lateCall, "run", lateCall, "replay", lateState, "completed"),
			effects: 1},
		// Every copy of the claim is held: the engine's claims fail, its
		// release finds nothing and leaves the tombstone, and the client
		// is told 503 (not run). Then the copies land: refused, as above.
		{name: "claim-always/after-release/fail-closed", policy: fc,
			rules: r(onClaim(delayed, 0, never)),
			steps: s(lateCall, "unavailable", lateState, "absent", lateClear, "", lateDeliver, "refused", lateState, "absent",
				lateCall, "run", lateCall, "replay", lateState, "completed"),
			effects: 1},
		{name: "claim-always/after-release/takeover", policy: to,
			rules: r(onClaim(delayed, 0, never)),
			steps: s(lateCall, "unavailable", lateClear, "", lateDeliver, "refused", lateCall, "run",
				lateCall, "replay", lateState, "completed"),
			effects: 1},
		// The claim's first copy lands after its run's outcome was unknown
		// and an operator resolved it failed: refused (a failed record is
		// claimed again only by another owner), the record stays failed
		// and the retry runs, once.
		{name: "claim/after-failed/fail-closed", policy: fc, unknownFirst: true,
			rules: r(onClaim(delayed, 0, 1)),
			steps: s(lateCall, "unknown", lateState, "indeterminate", lateResolve, "failed", lateDeliver, "refused",
				lateState, "failed", lateCall, "run", lateCall, "replay", lateState, "completed"),
			effects: 1},
		{name: "claim/after-failed/takeover", policy: to, unknownFirst: true,
			rules: r(onClaim(delayed, 0, 1)),
			steps: s(lateCall, "unknown", lateResolve, "failed", lateDeliver, "refused",
				lateState, "failed", lateCall, "run", lateCall, "replay", lateState, "completed"),
			effects: 1},
		// The copy lands after a retry claimed the failed record, answered
		// a transient 503 and freed the key, whose tombstone is the
		// retry's: refused (a claim never replaces a stored record), and
		// the next retry runs, once.
		{name: "claim/after-failed-then-release/fail-closed", policy: fc, unknownFirst: true, answer: failFirst,
			rules: r(onClaim(delayed, 0, 1)),
			steps: s(lateCall, "unknown", lateLeaseEnds, "", lateResolve, "failed", lateCall, "transient", lateState, "absent",
				lateDeliver, "refused", lateState, "absent", lateCall, "run", lateCall, "replay", lateState, "completed"),
			effects: 1},
		{name: "claim/after-failed-then-release/takeover", policy: to, unknownFirst: true, answer: failFirst,
			rules: r(onClaim(delayed, 0, 1)),
			steps: s(lateCall, "unknown", lateLeaseEnds, "", lateResolve, "failed", lateCall, "transient",
				lateDeliver, "refused", lateState, "absent", lateCall, "run", lateCall, "replay", lateState, "completed"),
			effects: 1},
		// ... and after two transient 503s, the retry's release leaving
		// the tombstone: refused too (a claim never replaces a stored
		// record), and the next retry runs, once.
		{name: "claim/after-two-releases/fail-closed", policy: fc, answer: failTwice,
			rules: r(onClaim(delayed, 0, 1)),
			steps: s(lateCall, "transient", lateCall, "transient", lateDeliver, "refused", lateState, "absent",
				lateCall, "run", lateCall, "replay", lateState, "completed"),
			effects: 1},
		// The claim's first copy lands while the retry's run holds the key
		// under a new owner: refused by the owner token (and, with
		// Takeover, by the retry's live lease).
		{name: "claim/during-retry-run/fail-closed", policy: fc, answer: failFirst,
			rules:   r(onClaim(delayed, 0, 1)),
			steps:   s(lateCall, "transient", lateCallAndRun, "run", lateDeliver, "refused", lateCall, "replay", lateState, "completed"),
			effects: 1},
		{name: "claim/during-retry-run/takeover", policy: to, answer: failFirst,
			rules:   r(onClaim(delayed, 0, 1)),
			steps:   s(lateCall, "transient", lateCallAndRun, "run", lateDeliver, "refused", lateCall, "replay", lateState, "completed"),
			effects: 1},
		// The claim's first copy lands after the request completed:
		// refused, the record stays completed, even once its lease would
		// have ended.
		{name: "claim/after-complete/fail-closed", policy: fc,
			rules: r(onClaim(delayed, 0, 1)),
			steps: s(lateCall, "run", lateDeliver, "refused", lateState, "completed", lateCall, "replay",
				lateLeaseEnds, "", lateCall, "replay"),
			effects: 1},
		{name: "claim/after-complete/takeover", policy: to,
			rules:   r(onClaim(delayed, 0, 1)),
			steps:   s(lateCall, "run", lateLeaseEnds, "", lateDeliver, "refused", lateState, "completed", lateCall, "replay"),
			effects: 1},
		// The completion's first copy lands after the SDK's retry
		// completed: it replaces only the version it was sent for, gone
		// since, and is refused; replays unchanged.
		{name: "complete/after-completed", policy: fc,
			rules:   r(onComplete(delayed, 0, 1)),
			steps:   s(lateCall, "run", lateDeliver, "refused", lateState, "completed", lateCall, "replay"),
			effects: 1},
		// No completion lands in time (every copy held): the lease ends, a
		// retry marks the record indeterminate; then the copies land, each
		// in place of the version it was sent for, gone since: refused.
		// The record stays indeterminate, for an operator, and nothing
		// runs again. (A completion the run decides after the mark, from
		// the record met, replaces it: TestClockSkewDuringRenewals.)
		{name: "complete/after-indeterminate", policy: fc,
			rules: r(onComplete(delayed, 0, never)),
			steps: s(lateCall, "run", lateCall, "in-flight", lateLeaseEnds, "", lateCall, "indeterminate",
				lateDeliver, "refused", lateState, "indeterminate", lateCall, "indeterminate"),
			effects: 1},
		// ... but not over an operator's resolution, which is kept.
		{name: "complete/after-resolution", policy: fc,
			rules: r(onComplete(delayed, 0, never)),
			steps: s(lateCall, "run", lateLeaseEnds, "", lateCall, "indeterminate", lateResolve, "completed",
				lateDeliver, "refused", lateState, "completed", lateCall, "replay"),
			effects: 1},
		// With Takeover, a retry after the lease runs again (the
		// operation's downstream is idempotent) and completes; the first
		// owner's copies land after it: refused by the owner token, the
		// retry's answer is the one replayed.
		{name: "complete/after-takeover", policy: to,
			rules:   r(onComplete(delayed, 0, never)),
			steps:   s(lateCall, "run", lateLeaseEnds, "", lateClear, "", lateCall, "run", lateDeliver, "refused", lateState, "completed", lateCall, "replay"),
			effects: 2},
		// The release's first copy lands while the retry's run holds the
		// key under a new owner, or after it completed: refused, the run
		// is not freed and its answer is replayed.
		{name: "release/during-retry-run", policy: fc, answer: failFirst,
			rules:   r(onRelease(delayed, 0, 1)),
			steps:   s(lateCall, "transient", lateState, "absent", lateCallAndRun, "run", lateDeliver, "refused", lateCall, "replay", lateState, "completed"),
			effects: 1},
		{name: "release/after-retry-completed", policy: fc, answer: failFirst,
			rules:   r(onRelease(delayed, 0, 1)),
			steps:   s(lateCall, "transient", lateCall, "run", lateDeliver, "refused", lateState, "completed", lateCall, "replay"),
			effects: 1},
		// MarkUnknown's first copy lands after the record it marked was
		// resolved failed by an operator and a retry claimed it: refused
		// by the owner token, the retry's run is not made indeterminate.
		// (Before that, the record is indeterminate and the copy is
		// refused by the state; it can meet its own owner's in_flight
		// record only while that owner's handler runs, and MarkUnknown is
		// sent after it returned.)
		{name: "mark-unknown/during-retry-run-after-resolution", policy: fc, unknownFirst: true,
			rules: r(onMarkUnknown(delayed, 0, 1)),
			steps: s(lateCall, "unknown", lateState, "indeterminate", lateCall, "indeterminate", lateResolve, "failed",
				lateCallAndRun, "run", lateDeliver, "refused", lateCall, "replay", lateState, "completed"),
			effects: 1},
	}
}

// TestDelayedWrites: a write of the store whose first copy reaches
// DynamoDB after its client gave up on it and moved on (faults.DelayedApply,
// delivered at one step of each case), through the v2 adapter against
// dynalite. Executions are counted from the handler's own effects table.
// Per step: each answer's kind, whether the late write was applied or
// refused by its condition, and the record's state; for every answer,
// every 201 names its own scope and every replay is the record's stored
// answer; at the end, the effects.
//
// Like TestFaultInjection it runs alone, before the parallel tests: its
// store calls have a short timeout.
func TestDelayedWrites(t *testing.T) {
	var requests, delivered, applied, doubleEffects int
	for _, tc := range delayedCases() {
		t.Run(tc.name, func(t *testing.T) {
			const lease = 2 * time.Second
			rig := newFaultRig(t, tc.rules, lease, tc.policy)
			g, store, clk, ft := rig.g, rig.store, rig.clk, rig.ft
			fx := newEffects(t, rig.raw)
			b := newBusiness(fx)
			b.answer = tc.answer
			ev, sc := payment("late-" + strings.ReplaceAll(tc.name, "/", "-"))
			id := sc.ID(false)
			ctx := context.Background()

			// deliverIn, when set, makes the next run deliver the held
			// writes before it answers.
			var deliverIn bool
			var inRun []faults.Delivery
			b.block = func(context.Context, idemkit.Scope) {
				if deliverIn {
					deliverIn = false
					inRun = ft.Deliver()
				}
			}
			var unknownDone bool
			h := apigw.WrapV2(g, apigw.Config{Tenant: apigw.JWTClaim("sub")},
				func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
					if tc.unknownFirst && !unknownDone {
						unknownDone = true
						return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("payment provider timed out: %w", idemkit.ErrOutcomeUnknown)
					}
					return b.handler("POST /payments")(ctx, ev)
				})
			effects := func() int { return fx.counts(t)[scopeName(sc)] }

			var seen []string
			var deliveries []faults.Delivery
			ask := func() string {
				t.Helper()
				a := call(ctx, h, ev)
				k := comboKind(a)
				seen = append(seen, k)
				if a.Status == 201 && !strings.Contains(a.Body, `"key":"`+sc.Key+`"`) {
					t.Fatalf("201 %v does not name its own key %s", a, sc.Key)
				}
				switch k {
				case "replay":
					rec, err := getLive(ctx, store, id, clk.Now())
					if err != nil || rec.Snapshot == nil || string(rec.Snapshot.Body) != a.Body {
						t.Fatalf("replay %q is not the stored answer: %v, %v", a.Body, rec, err)
					}
				case "in-flight":
					if !a.retryAfter() {
						t.Fatalf("409 in-flight without Retry-After: %v", a)
					}
				}
				if n := effects(); n > tc.effects {
					doubleEffects++
					t.Fatalf("%d effects after %v, want at most %d; answers %v", n, a, tc.effects, seen)
				}
				return k
			}
			deliveryKind := func(ds []faults.Delivery) string {
				t.Helper()
				if len(ds) == 0 {
					t.Fatalf("nothing held to deliver; events %v", ft.Events())
				}
				deliveries = append(deliveries, ds...)
				kind := ""
				for _, d := range ds {
					k := "refused"
					switch {
					case d.Applied():
						k = "applied"
					case d.Err != nil || d.Type != "ConditionalCheckFailedException":
						t.Fatalf("delivery %v: neither applied nor refused by its condition", d)
					}
					if kind != "" && k != kind {
						t.Fatalf("deliveries %v: some applied, some refused", ds)
					}
					kind = k
				}
				return kind
			}

			for i, st := range tc.steps {
				var got string
				switch st.do {
				case lateCall:
					got = ask()
				case lateCallAndRun:
					deliverIn = true
					got = ask()
					if deliverIn {
						t.Fatalf("step %d: the handler did not run", i)
					}
					if k := deliveryKind(inRun); tc.steps[i+1].do != lateDeliver || k != tc.steps[i+1].want {
						t.Fatalf("step %d: delivered during the run: %s (%v), want %v", i, k, inRun, tc.steps[i+1])
					}
				case lateDeliver:
					if i > 0 && tc.steps[i-1].do == lateCallAndRun {
						continue // checked with the run
					}
					got = deliveryKind(ft.Deliver())
				case lateLeaseEnds:
					clk.Advance(pastPending(lease))
					continue
				case lateClear:
					ft.Clear()
					continue
				case lateResolve:
					res := idemkit.Resolution{As: idemkit.State(st.want), Operator: "ops@example.com", Reason: "checked the provider"}
					if res.As == idemkit.StateCompleted {
						res.Snapshot = &idemkit.Snapshot{Status: 201, Header: http.Header{"Content-Type": {"application/json"}},
							Body: []byte(`{"tenant":"acme","operation":"POST /payments","key":"` + sc.Key + `","order":"ord_by_operator"}`)}
					}
					held, err := getLive(ctx, store, id, clk.Now())
					if err != nil {
						t.Fatalf("step %d: read before resolving: %v", i, err)
					}
					if _, err := resolveWhenAccepted(ctx, store, held.ID, res, clk.Now()); err != nil {
						t.Fatalf("step %d: resolve: %v", i, err)
					}
					continue
				case lateState:
					rec, err := getLive(ctx, store, id, clk.Now())
					switch {
					case errors.Is(err, idemkit.ErrNotFound):
						got = "absent"
					case err != nil:
						t.Fatalf("step %d: get: %v", i, err)
					default:
						got = string(rec.State)
					}
				}
				if got != st.want {
					t.Fatalf("step %d %s: %s, want %s; answers %v", i, st.do, got, st.want, seen)
				}
			}
			if ft.Held() != 0 {
				t.Fatalf("%d writes still held", ft.Held())
			}
			if got := effects(); got != tc.effects {
				t.Fatalf("%d effects, want %d; answers %v", got, tc.effects, seen)
			}
			if rec, err := getLive(ctx, store, id, clk.Now()); err == nil && rec.State == idemkit.StateIndeterminate {
				recs, _, err := store.ListIndeterminate(ctx, "acme", "", 0, clk.Now())
				if err != nil || len(recs) != 1 || recs[0].ID != id {
					t.Fatalf("ListIndeterminate: %v, %v; want the record", recs, err)
				}
			}
			requests += len(seen)
			here := 0
			for _, d := range deliveries {
				if d.Applied() {
					here++
				}
			}
			delivered += len(deliveries)
			applied += here
			t.Logf("%s: answers %v; late %s writes %d (applied %d); effects %d", tc.name, seen, deliveries[0].Op, len(deliveries), here, tc.effects)
		})
	}
	summary(t, "cases=%d requests=%d late_writes=%d late_applied=%d double_effects=%d",
		len(delayedCases()), requests, delivered, applied, doubleEffects)
}

// TestDelayedLeaseWrites: a write that sets the lease lands late while its
// own request's handler still runs, after a later write renewed the lease
// and the lease it carries has ended by the clock: the claim's first copy
// after a renewal, or a renewal's first copy after the next renewal. The
// late write carries an older lease end: were it applied, the lease would
// go back to an end already passed, and a retry would take the running
// request over (Takeover: a second, concurrent run) or mark it
// indeterminate (FailClosed). It must be refused: the retry gets 409
// in-flight, the run completes, one effect, and its answer is the one
// replayed.
//
// The renewals are the store's Extend, made by the test inside the run at
// moments of its choosing; the engine's own renewals run on the real clock
// every third of the lease, and the lease is long enough that none comes
// during the run.
func TestDelayedLeaseWrites(t *testing.T) {
	lease := dynalite.Scale(30 * time.Second)
	cases := []struct {
		name string
		rule faults.Rule
		// renewals are the clock's moves before each renewal; then the
		// clock moves by last, past the end of the lease the late write
		// carries, before it is delivered.
		renewals []time.Duration
		last     time.Duration
	}{
		{name: "claim-after-renewal", rule: onClaim(faults.DelayedApply, 0, 1),
			renewals: []time.Duration{lease / 2}, last: lease/2 + time.Second},
		{name: "renewal-after-renewal", rule: onExtend(faults.DelayedApply, 0, 1),
			renewals: []time.Duration{lease / 3, lease / 3}, last: 2*lease/3 + time.Second},
	}
	for _, tc := range cases {
		for _, policy := range []idemkit.StalePolicy{idemkit.FailClosed, idemkit.Takeover} {
			t.Run(tc.name+"/"+policy.String(), func(t *testing.T) {
				rig := newFaultRig(t, []faults.Rule{tc.rule}, lease, policy)
				g, store, clk, ft := rig.g, rig.store, rig.clk, rig.ft
				fx := newEffects(t, rig.raw)
				b := newBusiness(fx)
				h := wrap(g, b, "POST /payments")
				ev, sc := payment("late-lease-" + tc.name + "-" + policy.String())
				id := sc.ID(false)
				ctx := context.Background()

				var retry answer
				var late []faults.Delivery
				b.block = func(context.Context, idemkit.Scope) {
					if b.count(sc) != 1 {
						return // the retry's run, if any
					}
					rec, err := getLive(ctx, store, id, clk.Now())
					if err != nil {
						t.Errorf("get: %v", err)
						return
					}
					for _, d := range tc.renewals {
						clk.Advance(d)
						if rec, err = extend(ctx, store, rec, clk.Now().Add(lease)); err != nil {
							t.Errorf("extend: %v", err)
							return
						}
					}
					clk.Advance(tc.last)
					late = ft.Deliver()
					retry = call(ctx, h, ev)
				}
				first := call(ctx, h, ev)
				if first.kind() != "run" {
					t.Fatalf("first request: %v", first)
				}
				if len(late) != 1 || late[0].Applied() || late[0].Type != "ConditionalCheckFailedException" {
					t.Errorf("late write: %v, want refused by its condition", late)
				}
				if retry.kind() != "in-flight" {
					t.Errorf("retry during the renewed run: %v, want 409 in-flight", retry)
				}
				if n := fx.counts(t)[scopeName(sc)]; n != 1 {
					t.Errorf("%d effects, want 1", n)
				}
				rec, err := getLive(ctx, store, id, clk.Now())
				if err != nil || rec.State != idemkit.StateCompleted || string(rec.Snapshot.Body) != first.Body {
					t.Fatalf("record %v, %v; want completed with the first answer", rec, err)
				}
				if again := call(ctx, h, ev); again.kind() != "replay" || again.Body != first.Body {
					t.Fatalf("after: %v, want the replay of the first answer", again)
				}
			})
		}
	}
}

// TestDelayedResolve: an operator's resolution (failed) of an
// indeterminate record lands late, after the SDK's retry resolved it, a
// retry ran the key again and that run too ended with its outcome unknown
// (the provider charged, then timed out): the record is indeterminate
// again, for another run. The late copy must be refused: applied, it
// would resolve the second run's outcome as failed, which nobody decided,
// and the next retry would charge a second time.
func TestDelayedResolve(t *testing.T) {
	rig := newFaultRig(t, []faults.Rule{onResolve(faults.DelayedApply, 0, 1)}, 2*time.Second, idemkit.FailClosed)
	g, store, clk, ft := rig.g, rig.store, rig.clk, rig.ft
	fx := newEffects(t, rig.raw)
	b := newBusiness(fx)
	ev, sc := payment("late-resolve")
	id := sc.ID(false)
	ctx := context.Background()
	var runs int
	h := apigw.WrapV2(g, apigw.Config{Tenant: apigw.JWTClaim("sub")},
		func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			runs++
			switch runs {
			case 1: // nothing charged, outcome unknown
				return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("payment provider timed out: %w", idemkit.ErrOutcomeUnknown)
			case 2: // charged, then the answer was lost
				if _, err := fx.record(ctx, scopeName(sc)); err != nil {
					return events.APIGatewayV2HTTPResponse{}, err
				}
				return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("payment provider timed out: %w", idemkit.ErrOutcomeUnknown)
			}
			return b.handler("POST /payments")(ctx, ev)
		})

	if a := call(ctx, h, ev); a.kind() != "unknown" {
		t.Fatalf("first: %v, want 503 outcome-unknown", a)
	}
	// The operator finds no charge and resolves it failed; the first copy
	// of the resolution is held, the SDK's retry lands.
	held, err := getLive(ctx, store, id, clk.Now())
	if err != nil {
		t.Fatalf("read before resolving: %v", err)
	}
	if rec, err := resolveWhenAccepted(ctx, store, held.ID, idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops@example.com", Reason: "no charge at the provider"}, clk.Now()); err != nil || rec.State != idemkit.StateFailed {
		t.Fatalf("resolve: %v, %v", rec, err)
	}
	if a := call(ctx, h, ev); a.kind() != "unknown" {
		t.Fatalf("second: %v, want 503 outcome-unknown", a)
	}
	late := ft.Deliver()
	if len(late) != 1 || late[0].Applied() || late[0].Type != "ConditionalCheckFailedException" {
		t.Errorf("late resolution: %v, want refused by its condition", late)
	}
	if rec, err := getLive(ctx, store, id, clk.Now()); err != nil || rec.State != idemkit.StateIndeterminate {
		t.Fatalf("record %v, %v; want the second run's indeterminate record", rec, err)
	}
	if a := call(ctx, h, ev); a.kind() != "indeterminate" {
		t.Errorf("third: %v, want 409 indeterminate", a)
	}
	if n := fx.counts(t)[scopeName(sc)]; n != 1 {
		t.Fatalf("%d effects, want 1", n)
	}
}
