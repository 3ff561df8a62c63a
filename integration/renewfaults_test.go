package integration

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
)

// TestRenewalUnderFaults: a handler without a deadline outlives its first
// lease while its renewals (each an UpdateItem in place of the version
// the run wrote last) fail or
// lose their answers; another instance, whose clock is past the first
// lease (but inside the renewed ones), retries while it still runs; then
// the handler answers. Executions
// are counted from the handler's effects table.
//
//   - renewals landing (answers lost or not): the retry gets 409
//     in-flight, one effect.
//   - renewals never landing, fail-closed: the retry marks the record
//     indeterminate; the owner's completion then replaces it (a known
//     outcome beats an unknown one) and retries replay the owner's answer;
//     one effect.
//   - renewals never landing, takeover: the first run's context is
//     cancelled (idemkit.ErrLeaseLost) before its lease ends. A handler
//     that stops then has no effect, and the retry runs it once: one
//     effect. One that goes on runs alongside the retry, which takes the
//     key over, the price of Takeover, whose downstream must be
//     idempotent: two effects; the late completion is refused (fenced)
//     and retries replay the taking-over run's answer.
func TestRenewalUnderFaults(t *testing.T) {
	const (
		lease     = 2 * time.Second
		heartbeat = 200 * time.Millisecond
		// skew puts the retrying instance's clock past the first lease
		// once six renewal rounds (1.2 s) have passed, and inside every
		// lease renewed since: the retry has a second to be sent.
		skew   = time.Second
		rounds = 6
	)
	sdk := dynamo.DefaultMaxAttempts
	for _, tc := range []struct {
		name    string
		policy  idemkit.StalePolicy
		fault   faults.Kind // 0: none
		calls   int         // renewal calls of rounds rounds
		retry   string      // what the retry during the run gets
		after   string      // worker whose answer later retries replay
		effects int
		stops   bool // the handler stops when its context is done, before acting
	}{
		{"renewals-land/fail-closed", idemkit.FailClosed, 0, rounds, "in-flight", "a", 1, false},
		{"renewals-lost-ack/fail-closed", idemkit.FailClosed, faults.LostAck, rounds * sdk, "in-flight", "a", 1, false},
		{"renewals-lost-ack/takeover", idemkit.Takeover, faults.LostAck, rounds * sdk, "in-flight", "a", 1, false},
		{"renewals-5xx/fail-closed", idemkit.FailClosed, faults.ServerError, rounds * sdk, "pending", "a", 1, false},
		{"renewals-throttle/fail-closed", idemkit.FailClosed, faults.Throttle, rounds * sdk, "pending", "a", 1, false},
		{"renewals-5xx/takeover", idemkit.Takeover, faults.ServerError, rounds * sdk, "run", "b", 2, false},
		{"renewals-5xx/takeover/handler-stops", idemkit.Takeover, faults.ServerError, rounds * sdk, "run", "b", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rules []faults.Rule
			if tc.fault != 0 {
				rules = append(rules, onExtend(tc.fault, 0, never))
			}
			ft := faults.New(baseTransport(), rules...)
			opts := dynamo.Options{CallTimeout: callTimeout, MaxBackoff: 10 * time.Millisecond}
			storeA, raw, table := newStore(t, ft, opts)
			storeB, err := dynamo.New(newSDKClient(t, dynalite.Endpoint(t), nil), table, opts)
			if err != nil {
				t.Fatal(err)
			}
			fx := newEffects(t, raw)
			policy := idemkit.Policy{Lease: lease, Heartbeat: heartbeat, OnStaleLease: tc.policy}
			// A keeps the real time: its renewals are real timers.
			gA := testguard.New(t, idemkit.Config{Store: storeA, Policy: policy})
			gB := testguard.New(t, idemkit.Config{Store: storeB, Policy: policy, Clock: testclock.Skewed(skew)})
			renewed, finish := make(chan struct{}), make(chan struct{})
			var once sync.Once // a second run of worker a is counted, not a panic
			a := newBusiness(fx)
			a.worker, a.stop = "a", tc.stops
			var lost error
			a.block = func(ctx context.Context, _ idemkit.Scope) {
				// Wait (polling, with a deadline) for the renewal rounds,
				// or, for a handler that stops, until it is told to.
				end := time.Now().Add(dynalite.Scale(10 * time.Second))
				for ft.Calls("UpdateItem") < tc.calls {
					if tc.stops && ctx.Err() != nil {
						lost = context.Cause(ctx)
						once.Do(func() { close(renewed) })
						return
					}
					if time.Now().After(end) {
						t.Errorf("%d renewal calls after 10 s, want %d", ft.Calls("UpdateItem"), tc.calls)
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				once.Do(func() { close(renewed) })
				<-finish
			}
			b := newBusiness(fx)
			b.worker = "b"
			hA, hB := wrap(gA, a, "POST /payments"), wrap(gB, b, "POST /payments")
			ev, sc := payment("renew-" + tc.name)
			ctx := context.Background() // no deadline: the lease is renewed

			first := make(chan answer, 1)
			go func() { first <- call(ctx, hA, ev) }()
			<-renewed
			var owner answer
			if tc.stops {
				// The first run stopped: its key is freed once Do returns.
				owner = <-first
			}
			retry := call(ctx, hB, ev)
			close(finish)
			if !tc.stops {
				owner = <-first
			}

			if got := retry.kind(); got != tc.retry {
				t.Errorf("retry during the run: %v, want %s", retry, tc.retry)
			}
			if tc.stops {
				if !errors.Is(lost, idemkit.ErrLeaseLost) || !errors.Is(owner.Err, idemkit.ErrLeaseLost) {
					t.Errorf("the handler was told %v and its client got %v, want ErrLeaseLost for both", lost, owner)
				}
			} else if owner.Status != 201 || owner.Replay || workerOf(owner) != "a" {
				t.Errorf("the owner's client got %v, want its own 201", owner)
			}
			for _, h := range []v2Handler{hA, hB} {
				again := call(ctx, h, ev)
				if again.kind() != "replay" || workerOf(again) != tc.after {
					t.Errorf("retry after the run: %v, want the replay of worker %s's answer", again, tc.after)
				}
			}
			if got := fx.counts(t)[scopeName(sc)]; got != tc.effects {
				t.Errorf("%d effects, want %d", got, tc.effects)
			}
			if tc.fault != 0 && len(ft.Events()) == 0 {
				t.Fatal("no fault was injected")
			}
			t.Logf("%s: retry during the run %s; owner %d; later replays of worker %s; effects %d; %d renewal calls, %d spoiled",
				tc.name, retry.kind(), owner.Status, tc.after, tc.effects, ft.Calls("UpdateItem"), len(ft.Events()))
		})
	}
}

// workerOf returns the worker named by a 201's body.
func workerOf(a answer) string {
	var body orderBody
	if err := json.Unmarshal([]byte(a.Body), &body); err != nil {
		return ""
	}
	return body.Worker
}
