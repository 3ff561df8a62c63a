package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
)

// reads reports whether rules inject faults into reads (GetItem).
func reads(rules []faults.Rule) bool {
	for _, r := range rules {
		if r.Op == "GetItem" {
			return true
		}
	}
	return false
}

// faultRig is a guard over a store whose SDK calls pass through a fault
// transport.
type faultRig struct {
	g     *idemkit.Guard
	store *dynamo.Store
	clk   *testclock.Clock  // the guard's clock
	ft    *faults.Transport // under the store's client
	raw   *dynamodb.Client  // a client of the same table without faults
}

// newFaultRig returns a guard, with lease and stale policy, over a store
// on a fresh table whose SDK calls pass through a fault transport with
// rules (a failed condition's item dropped when rules spoil reads), on a
// test clock started at the real time.
func newFaultRig(t testing.TB, rules []faults.Rule, lease time.Duration, policy idemkit.StalePolicy) faultRig {
	t.Helper()
	var base http.RoundTripper = baseTransport()
	if reads(rules) {
		base = faults.WithoutConditionItem(base)
	}
	ft := faults.New(base, rules...)
	store, raw, _ := newStore(t, ft, dynamo.Options{CallTimeout: dynalite.Scale(time.Second), MaxBackoff: 10 * time.Millisecond})
	clk := testclock.New()
	g := testguard.New(t, idemkit.Config{Store: store, Clock: clk, Policy: idemkit.Policy{Lease: lease, OnStaleLease: policy}})
	return faultRig{g: g, store: store, clk: clk, ft: ft, raw: raw}
}

// payment returns the POST /payments of tenant acme under key, and its
// scope.
func payment(key string) (events.APIGatewayV2HTTPRequest, idemkit.Scope) {
	return event("acme", "/payments", key, `{"amount":1999,"currency":"EUR"}`),
		idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: key}
}

// failFirst answers a scope's first run with the handler's own 503 (not
// stored: the key is freed) and later runs with 201.
func failFirst(n int) int {
	if n == 1 {
		return 503
	}
	return 201
}

const never = -1 // Rule.Times: the fault never clears

// The fault kinds and stale-lease policies by the short names the case
// tables (faults, combos, handler writes, delayed copies) spell them with.
const (
	lost     = faults.LostAck
	lostBody = faults.LostAckBody
	thr      = faults.Throttle
	thrX     = faults.Throttling
	e500     = faults.ServerError
	reset    = faults.Reset
	tmo      = faults.Timeout
	tmoA     = faults.TimeoutApplied
	fc       = idemkit.FailClosed
	to       = idemkit.Takeover
)

type faultCase struct {
	name  string
	rules []faults.Rule
	// release: the handler's first run answers a transient 503 (no
	// effect, not stored), so the claim is released.
	release bool
	// late: a third request is sent under the faults after the lease
	// ended (the clock moved past it), to reach MarkIndeterminate.
	late bool
	// first is the status the first request must get; second, when set,
	// what its immediate retry under the faults must be: "replay", "run"
	// or "in-flight".
	first  int
	second string
	// final is what retries converge to once the faults clear: "replay"
	// (of the one stored result) or "indeterminate".
	final string
}

func faultCases() []faultCase {
	r := func(rs ...faults.Rule) []faults.Rule { return rs }
	return []faultCase{
		// The claim (PutItem, in_flight).
		{name: "claim/lost-ack/call1", rules: r(onClaim(lost, 0, 1)), first: 201, second: "replay", final: "replay"},
		{name: "claim/lost-ack/call2", rules: r(onClaim(lost, 1, 1)), first: 201, second: "replay", final: "replay"},
		{name: "claim/lost-ack/x2", rules: r(onClaim(lost, 0, 2)), first: 201, second: "replay", final: "replay"},
		{name: "claim/lost-ack/never", rules: r(onClaim(lost, 0, never)), first: 503, final: "replay"},
		{name: "claim/lost-ack-body/call1", rules: r(onClaim(lostBody, 0, 1)), first: 201, second: "replay", final: "replay"},
		{name: "claim/lost-ack-body/never", rules: r(onClaim(lostBody, 0, never)), first: 503, final: "replay"},
		{name: "claim/throttle/x2", rules: r(onClaim(thr, 0, 2)), first: 201, second: "replay", final: "replay"},
		{name: "claim/throttle/never", rules: r(onClaim(thr, 0, never)), first: 503, final: "replay"},
		{name: "claim/throttling/x2", rules: r(onClaim(thrX, 0, 2)), first: 201, second: "replay", final: "replay"},
		{name: "claim/5xx/x1", rules: r(onClaim(e500, 0, 1)), first: 201, second: "replay", final: "replay"},
		{name: "claim/5xx/never", rules: r(onClaim(e500, 0, never)), first: 503, final: "replay"},
		{name: "claim/reset/x1", rules: r(onClaim(reset, 0, 1)), first: 201, second: "replay", final: "replay"},
		{name: "claim/reset/never", rules: r(onClaim(reset, 0, never)), first: 503, final: "replay"},
		// A timed-out claim is made again, the same record and version.
		{name: "claim/timeout/x1", rules: r(onClaim(tmo, 0, 1)), first: 201, second: "replay", final: "replay"},
		{name: "claim/timeout-applied/x1", rules: r(onClaim(tmoA, 0, 1)), first: 201, second: "replay", final: "replay"},

		// The completion (an UpdateItem in place of the version the run wrote last).
		{name: "complete/lost-ack/call1", rules: r(onComplete(lost, 0, 1)), first: 201, second: "replay", final: "replay"},
		{name: "complete/lost-ack/x3", rules: r(onComplete(lost, 0, 3)), first: 201, second: "replay", final: "replay"},
		{name: "complete/lost-ack/never", rules: r(onComplete(lost, 0, never)), first: 201, second: "replay", final: "replay"},
		{name: "complete/lost-ack-body/call1", rules: r(onComplete(lostBody, 0, 1)), first: 201, second: "replay", final: "replay"},
		{name: "complete/lost-ack-body/never", rules: r(onComplete(lostBody, 0, never)), first: 201, second: "replay", final: "replay"},
		{name: "complete/throttle/x2", rules: r(onComplete(thr, 0, 2)), first: 201, second: "replay", final: "replay"},
		{name: "complete/throttle/never", rules: r(onComplete(thr, 0, never)), first: 201, second: "in-flight", final: "indeterminate"},
		{name: "complete/throttling/x4", rules: r(onComplete(thrX, 0, 4)), first: 201, second: "replay", final: "replay"},
		{name: "complete/5xx/x1", rules: r(onComplete(e500, 0, 1)), first: 201, second: "replay", final: "replay"},
		{name: "complete/5xx/never", rules: r(onComplete(e500, 0, never)), first: 201, second: "in-flight", final: "indeterminate"},
		{name: "complete/reset/never", rules: r(onComplete(reset, 0, never)), first: 201, second: "in-flight", final: "indeterminate"},
		{name: "complete/timeout/x1", rules: r(onComplete(tmo, 0, 1)), first: 201, second: "replay", final: "replay"},
		{name: "complete/timeout/never", rules: r(onComplete(tmo, 0, never)), first: 201, second: "in-flight", final: "indeterminate"},
		{name: "complete/timeout-applied/never", rules: r(onComplete(tmoA, 0, never)), first: 201, second: "replay", final: "replay"},

		// The release (PutItem of the tombstone) after a transient 503 from the handler.
		{name: "release/lost-ack/call1", release: true, rules: r(onRelease(lost, 0, 1)), first: 503, second: "run", final: "replay"},
		{name: "release/lost-ack/never", release: true, rules: r(onRelease(lost, 0, never)), first: 503, second: "run", final: "replay"},
		{name: "release/lost-ack-body/call1", release: true, rules: r(onRelease(lostBody, 0, 1)), first: 503, second: "run", final: "replay"},
		{name: "release/throttle/x2", release: true, rules: r(onRelease(thr, 0, 2)), first: 503, second: "run", final: "replay"},
		{name: "release/throttle/never", release: true, rules: r(onRelease(thr, 0, never)), first: 503, second: "in-flight", final: "indeterminate"},
		{name: "release/5xx/never", release: true, rules: r(onRelease(e500, 0, never)), first: 503, second: "in-flight", final: "indeterminate"},
		{name: "release/reset/x1", release: true, rules: r(onRelease(reset, 0, 1)), first: 503, second: "run", final: "replay"},
		{name: "release/timeout/x1", release: true, rules: r(onRelease(tmo, 0, 1)), first: 503, second: "run", final: "replay"},
		{name: "release/timeout/never", release: true, rules: r(onRelease(tmo, 0, never)), first: 503, second: "in-flight", final: "indeterminate"},
		{name: "release/timeout-applied/x1", release: true, rules: r(onRelease(tmoA, 0, 1)), first: 503, second: "run", final: "replay"},

		// The read of the blocking record by a duplicate's lost claim, on
		// a server that returns no item with the condition failure
		// (dynalite; on others faults.WithoutConditionItem drops it).
		{name: "read/throttle/never", rules: r(onRead(thr, 0, never)), first: 201, final: "replay"},
		{name: "read/5xx/x1", rules: r(onRead(e500, 0, 1)), first: 201, second: "replay", final: "replay"},
		{name: "read/timeout/x1", rules: r(onRead(tmo, 0, 1)), first: 201, final: "replay"},

		// MarkIndeterminate (UpdateItem) after a completion that never
		// landed and a lease that ended.
		{name: "mark/lost-ack/call1", late: true, rules: r(onComplete(e500, 0, never), onMark(lost, 0, 1)), first: 201, second: "in-flight", final: "indeterminate"},
		{name: "mark/lost-ack/never", late: true, rules: r(onComplete(e500, 0, never), onMark(lost, 0, never)), first: 201, second: "in-flight", final: "indeterminate"},
		{name: "mark/throttle/never", late: true, rules: r(onComplete(e500, 0, never), onMark(thr, 0, never)), first: 201, second: "in-flight", final: "indeterminate"},
	}
}

// TestFaultInjection drives the v2 adapter against dynalite through an SDK
// client whose HTTP transport injects one fault per case at one step (the
// claim, the completion, the release, the read, the mark) and call
// number. For every case: the handler takes effect at most once; every
// answer is the real response, a byte-identical replay, or a clear
// retryable problem (409 or 503 with Retry-After), never a 5xx of another
// kind or a wrong body; once the faults clear, retries converge to the one
// stored result (or, when the outcome could never be recorded, to the
// indeterminate record an operator lists).
//
// It runs before the parallel tests of the package, alone: its expected
// answers assume that only the injected faults slow the store down.
func TestFaultInjection(t *testing.T) {
	var requests, runs, injected, doubleEffects, wrongBodies int
	for _, tc := range faultCases() {
		const lease = 2 * time.Second
		rig := newFaultRig(t, tc.rules, lease, idemkit.FailClosed)
		g, store, clk, ft := rig.g, rig.store, rig.clk, rig.ft
		b := newBusiness(nil)
		if tc.release {
			b.answer = failFirst
		}
		h := wrap(g, b, "POST /payments")
		ev, sc := payment("pay-" + strings.ReplaceAll(tc.name, "/", "-"))

		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var stored string // the body of the one effective run
			var seen []answer
			defer func() {
				if b.runs.Load() > 1 {
					doubleEffects++
				}
			}()
			check := func(a answer) {
				t.Helper()
				seen = append(seen, a)
				switch {
				case a.Status == 201 && !a.Replay:
					if stored != "" {
						t.Fatalf("second fresh 201: %v (first %s)", a, stored)
					}
					stored = a.Body
				case a.Status == 201 && a.Replay:
					if a.Body != stored {
						wrongBodies++
						t.Fatalf("replay body %q, want the stored %q", a.Body, stored)
					}
				case a.Status == 409 && (a.Problem == "in-flight" || a.Problem == "outcome-pending" || a.Problem == "indeterminate-operator-required"):
					if a.Problem != "indeterminate-operator-required" && !a.retryAfter() {
						t.Fatalf("409 without Retry-After: %v", a)
					}
				case a.Status == 503 && a.Problem == "store-unavailable":
					if !a.retryAfter() {
						t.Fatalf("503 without Retry-After: %v", a)
					}
				case a.Status == 503 && a.Problem == "" && tc.release:
					// The handler's own transient answer.
				default:
					t.Fatalf("answer %v: not a response, a replay or a retryable problem", a)
				}
				if n := int(b.runs.Load()); n > 1 {
					t.Fatalf("the handler took effect %d times", n)
				}
			}

			// Under the faults: the first request and its immediate retry.
			a1 := call(ctx, h, ev)
			check(a1)
			if a1.Status != tc.first {
				t.Errorf("first answer %v, want status %d", a1, tc.first)
			}
			a2 := call(ctx, h, ev)
			check(a2)
			if tc.second != "" && a2.kind() != tc.second {
				t.Errorf("immediate retry: %v, want %s", a2, tc.second)
			}
			if tc.late {
				clk.Advance(pastPending(lease))
				check(call(ctx, h, ev))
			}
			injectedHere := len(ft.Events())
			if injectedHere == 0 {
				t.Fatalf("no fault was injected")
			}

			// The faults clear: retries converge.
			ft.Clear()
			var final answer
			for i := 0; ; i++ {
				if i == 5 {
					t.Fatalf("no convergence after 5 retries: %v", seen)
				}
				final = call(ctx, h, ev)
				check(final)
				if final.Problem == "in-flight" || final.Problem == "outcome-pending" {
					clk.Advance(pastPending(lease))
					continue
				}
				if final.Status == 201 && !final.Replay {
					continue // the first run: its retry must replay it
				}
				break
			}
			if got := final.kind(); got != tc.final {
				t.Fatalf("converged to %v, want %s; answers %v", final, tc.final, seen)
			}
			// Converged means stable.
			again := call(ctx, h, ev)
			if again.Replay && again.Body != stored {
				wrongBodies++
			}
			if again.kind() != tc.final || (tc.final == "replay" && again.Body != stored) {
				t.Fatalf("after convergence: %v, then %v", final, again)
			}
			switch tc.final {
			case "replay":
				if b.runs.Load() != 1 {
					t.Fatalf("handler took effect %d times, want 1", b.runs.Load())
				}
			case "indeterminate":
				recs, _, err := store.ListIndeterminate(ctx, "acme", "", 0, clk.Now())
				if err != nil || len(recs) != 1 || recs[0].Scope != sc {
					t.Fatalf("ListIndeterminate: %v, %v; want the record of %v", recs, err, sc)
				}
			}
			requests += len(seen) + 1
			runs += b.count(sc)
			injected += injectedHere
			t.Logf("%s: first %d, retry %s, converged to %s after %d requests; %d faults injected, handler ran %d (took effect %d)",
				tc.name, a1.Status, a2.kind(), tc.final, len(seen)+1, injectedHere, b.count(sc), b.runs.Load())
		})
	}
	// double_effects: cases whose handler took effect more than once;
	// wrong_bodies: replays whose body was not the stored response.
	summary(t, "cases=%d requests=%d faults_injected=%d handler_runs=%d double_effects=%d wrong_bodies=%d",
		len(faultCases()), requests, injected, runs, doubleEffects, wrongBodies)
}
