package integration

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/faults"
)

// comboCase is two faults on two steps of one request's life (the claim
// and its release, the claim and the completion, the release and the
// retry's claim, the read and the mark), where TestFaultInjection has one.
type comboCase struct {
	name   string
	policy idemkit.StalePolicy
	rules  []faults.Rule
	// release: the handler's first run answers a transient 503 (no
	// effect, not stored), so its claim is released.
	release bool
	// late: a third request is sent under the faults after the lease.
	late bool
	// first and second are the kinds (comboKind) of the first answer and
	// of its immediate retry under the faults; final is what retries
	// converge to once the faults clear: "replay" or "indeterminate".
	first, second, final string
	// effects is the number of effects the handler's own table holds at
	// the end.
	effects int
}

// comboKind names an answer for the combination table.
func comboKind(a answer) string {
	switch {
	case a.Status == 503 && a.Problem == "store-unavailable" && strings.Contains(a.Body, "may have been recorded"):
		// The claim may be held: it could not be freed.
		return "unavailable-held"
	case a.Status == 503 && a.Problem == "store-unavailable":
		return "unavailable"
	case a.Status == 503 && a.Problem == "":
		return "transient" // the handler's own answer
	}
	return a.kind()
}

func comboCases() []comboCase {
	r := func(rs ...faults.Rule) []faults.Rule { return rs }
	// A rule sees only the calls no earlier rule spoiled: the second rule
	// on one step counts from the first call the first one let through.
	sdk := dynamo.DefaultMaxAttempts // the SDK's attempts of one store call
	return []comboCase{
		// The claim lands, its answer is lost; then the completion's
		// answers are all lost (it lands too).
		{name: "claim-lost-ack+complete-lost-ack-always", policy: fc,
			rules: r(onClaim(lost, 0, 1), onComplete(lost, 0, never)),
			first: "run", second: "replay", final: "replay", effects: 1},
		// The claim lands after its call timed out; the completion never
		// lands: the key is kept, never run again.
		{name: "claim-timeout-applied+complete-5xx-always", policy: fc,
			rules: r(onClaim(tmoA, 0, 1), onComplete(e500, 0, never)),
			first: "run", second: "in-flight", final: "indeterminate", effects: 1},
		// A whole claim attempt (the SDK's three tries) fails, the next
		// lands with its answer lost: recognised as ours by its token.
		{name: "claim-5xx-one-attempt+claim-lost-ack", policy: fc,
			rules: r(onClaim(e500, 0, sdk), onClaim(lost, 0, 1)),
			first: "run", second: "replay", final: "replay", effects: 1},
		// Every claim lands with its answer lost, and so does every
		// release of it: the client cannot be told nothing is held (it is
		// not: the release landed), and once the faults clear the key runs
		// once.
		{name: "claim-lost-ack-always+release-lost-ack-always", policy: fc,
			rules: r(onClaim(lost, 0, never), onRelease(lostBody, 0, never)),
			first: "unavailable-held", second: "unavailable-held", final: "replay", effects: 1},
		// Every claim lands with its answer lost and no release lands: the
		// key stays held though nothing ran. Fail-closed waits for an
		// operator; takeover runs it once after the lease. The immediate
		// retry's own claim cannot be stored (the first one's record is
		// there, read after its attempts failed): it is told the store is
		// unavailable, not that its claim may hold the key.
		{name: "claim-lost-ack-always+release-5xx-always/fail-closed", policy: fc,
			rules: r(onClaim(lost, 0, never), onRelease(e500, 0, never)),
			first: "unavailable-held", second: "unavailable", final: "indeterminate", effects: 0},
		{name: "claim-lost-ack-always+release-5xx-always/takeover", policy: to,
			rules: r(onClaim(lost, 0, never), onRelease(e500, 0, never)),
			first: "unavailable-held", second: "unavailable", final: "replay", effects: 1},
		// The completion lands with its answer lost, then every try fails:
		// the record is completed although the engine could not confirm it.
		{name: "complete-lost-ack+complete-5xx-always", policy: fc,
			rules: r(onComplete(lost, 0, 1), onComplete(e500, 0, never)),
			first: "run", second: "replay", final: "replay", effects: 1},
		{name: "complete-timeout+complete-lost-ack-always", policy: fc,
			rules: r(onComplete(tmo, 0, 1), onComplete(lost, 0, never)),
			first: "run", second: "replay", final: "replay", effects: 1},
		// The handler's transient answer frees the key; the release lands
		// with its answer lost, and the retry's claim too.
		{name: "release-lost-ack+retry-claim-lost-ack", policy: fc, release: true,
			rules: r(onRelease(lost, 0, 1), onClaim(lost, 1, 1)),
			first: "transient", second: "run", final: "replay", effects: 1},
		// The release lands after its call timed out, then every try fails.
		{name: "release-timeout-applied+release-5xx-always", policy: fc, release: true,
			rules: r(onRelease(tmoA, 0, 1), onRelease(e500, 0, never)),
			first: "transient", second: "run", final: "replay", effects: 1},
		// The release never lands, and the retry's claim is throttled: the
		// first run's record holds the key, and the retry's own claim was
		// never stored (plain unavailable).
		{name: "release-reset-always+retry-claim-throttle-always", policy: fc, release: true,
			rules: r(onRelease(reset, 0, never), onClaim(thr, 1, never)),
			first: "transient", second: "unavailable", final: "indeterminate", effects: 0},
		// The completion never lands; the duplicate's read of the record
		// fails (a whole store call: the next claim attempt reads it), and
		// after the lease the mark lands
		// with its answer lost.
		{name: "complete-5xx-always+read-5xx+mark-lost-ack", policy: fc, late: true,
			rules: r(onComplete(e500, 0, never), onRead(e500, 0, sdk), onMark(lost, 0, 1)),
			first: "run", second: "in-flight", final: "indeterminate", effects: 1},
	}
}

// TestFaultCombinations: two faults on two steps of a request's life,
// through the v2 adapter against dynalite, under the policy each case
// names. Executions are counted from the handler's own effects table,
// never from the kit's answers. For every answer: the effects never
// exceed the case's count, every 201 (fresh or replayed) names its own
// scope, and every replay is the stored response byte for byte. Per case:
// the first answer and its immediate retry under the faults, what retries
// converge to once the faults clear, and the effects left.
func TestFaultCombinations(t *testing.T) {
	var requests, injected, doubleEffects int
	for _, tc := range comboCases() {
		t.Run(tc.name, func(t *testing.T) {
			const lease = 2 * time.Second
			rules, reached := counted(tc.rules)
			rig := newFaultRig(t, rules, lease, tc.policy)
			g, store, clk, ft := rig.g, rig.store, rig.clk, rig.ft
			fx := newEffects(t, rig.raw)
			b := newBusiness(fx)
			if tc.release {
				b.answer = failFirst
			}
			h := wrap(g, b, "POST /payments")
			ev, sc := payment("combo-" + strings.ReplaceAll(tc.name, "/", "-"))
			effects := func() int { return fx.counts(t)[scopeName(sc)] }

			ctx := context.Background()
			var stored string
			var seen []string
			check := func(a answer) string {
				t.Helper()
				k := comboKind(a)
				seen = append(seen, k)
				if a.Status == 201 {
					var body orderBody
					if err := json.Unmarshal([]byte(a.Body), &body); err != nil || body.Tenant != sc.Tenant || body.Operation != sc.Operation || body.Key != sc.Key {
						t.Fatalf("201 %v does not name its own scope %v", a, sc)
					}
				}
				switch {
				case k == "run":
					if stored != "" && tc.effects <= 1 {
						t.Fatalf("second fresh run: %v (first %s)", a, stored)
					}
					stored = a.Body
				case k == "replay":
					if a.Body != stored {
						t.Fatalf("replay %q, want the stored %q", a.Body, stored)
					}
				case k == "in-flight" || k == "pending" || strings.HasPrefix(k, "unavailable"):
					if !a.retryAfter() {
						t.Fatalf("%s without Retry-After: %v", k, a)
					}
				case k == "indeterminate", k == "transient":
				default:
					t.Fatalf("answer %v: not a response, a replay or a retryable problem", a)
				}
				if n := effects(); n > tc.effects {
					doubleEffects++
					t.Fatalf("%d effects after %v, want at most %d; answers %v", n, a, tc.effects, seen)
				}
				return k
			}

			if got := check(call(ctx, h, ev)); got != tc.first {
				t.Errorf("first answer %s, want %s", got, tc.first)
			}
			if got := check(call(ctx, h, ev)); got != tc.second {
				t.Errorf("immediate retry %s, want %s", got, tc.second)
			}
			if tc.late {
				clk.Advance(pastPending(lease))
				check(call(ctx, h, ev))
			}
			n := len(ft.Events())
			// Every rule must have spoiled at least one call: a case whose
			// second fault never fired tests one fault, not two.
			for i, rule := range tc.rules {
				if reached[i].Load() <= int64(rule.Skip) {
					t.Fatalf("rule %d (%s %v) never fired; events %v", i, rule.Op, rule.Kind, ft.Events())
				}
			}

			ft.Clear()
			var final string
			for i := 0; ; i++ {
				if i == 6 {
					t.Fatalf("no convergence after 6 retries: %v", seen)
				}
				final = check(call(ctx, h, ev))
				if final == "in-flight" || final == "pending" {
					clk.Advance(pastPending(lease))
					continue
				}
				if final == "run" {
					continue // its retry must replay it
				}
				break
			}
			if final != tc.final {
				t.Fatalf("converged to %s, want %s; answers %v", final, tc.final, seen)
			}
			if again := check(call(ctx, h, ev)); again != final {
				t.Fatalf("after convergence: %s, then %s", final, again)
			}
			if got := effects(); got != tc.effects {
				t.Fatalf("%d effects, want %d; answers %v", got, tc.effects, seen)
			}
			if tc.final == "indeterminate" {
				recs, _, err := store.ListIndeterminate(ctx, "acme", "", 0, clk.Now())
				if err != nil || len(recs) != 1 || recs[0].Scope != sc {
					t.Fatalf("ListIndeterminate: %v, %v; want the record of %v", recs, err, sc)
				}
			}
			requests += len(seen)
			injected += n
			t.Logf("%s: answers %v; %d faults injected; effects %d", tc.name, seen, n, tc.effects)
		})
	}
	summary(t, "cases=%d requests=%d faults_injected=%d double_effects=%d", len(comboCases()), requests, injected, doubleEffects)
}

// fired reports whether events hold a fault of rule's kind on its
// operation.
// counted returns rules, each counting in reached the calls it matched
// (the calls its Skip and Times count): one that matched more than its
// Skip spoiled a call (the rules here spoil every matching call after
// Skip until Times). A rule is told by what it matches, not by the
// operation of the call it spoiled: the store's writes of one change may
// be of either operation.
func counted(rules []faults.Rule) ([]faults.Rule, []atomic.Int64) {
	reached := make([]atomic.Int64, len(rules))
	out := make([]faults.Rule, len(rules))
	for i, r := range rules {
		m := r.Match
		r.Match = func(b []byte) bool {
			if m != nil && !m(b) {
				return false
			}
			reached[i].Add(1)
			return true
		}
		out[i] = r
	}
	return out, reached
}
