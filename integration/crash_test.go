package integration

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
)

// TestCrashAfterClaim runs the wrapped handler in a separate process
// against dynalite and kills it with SIGKILL after its claim and before its
// completion. While the lease lives, retries get 409 in-flight with
// Retry-After and nothing runs; once it has ended (the retrying guard's
// clock is moved past it, no waiting), Takeover runs the handler exactly
// once more and replays that run afterwards, and FailClosed marks the
// record indeterminate, answers the 409 indeterminate problem, runs
// nothing, and lists the record for an operator.
func TestCrashAfterClaim(t *testing.T) {
	t.Parallel()
	const lease = 2 * time.Second
	c := dynalite.Client(t)
	table := dynalite.CreateTable(t, c, dynamo.TableDefinition("crash", dynamo.Options{}))
	fx := newEffects(t, c)
	store, err := dynamo.New(c, table, dynamo.Options{CallTimeout: callTimeout})
	if err != nil {
		t.Fatal(err)
	}
	for _, stale := range []idemkit.StalePolicy{idemkit.Takeover, idemkit.FailClosed} {
		name := map[idemkit.StalePolicy]string{idemkit.Takeover: "takeover", idemkit.FailClosed: "fail-closed"}[stale]
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), dynalite.Scale(time.Minute))
			defer cancel()
			key := "crash-" + name
			sc := idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: key}
			w := startWorker(t, "crash", map[string]string{
				envEndpoint: dynalite.Endpoint(t), envTable: table, envEffects: fx.table,
				envKey: key, envLease: lease.String(),
			})
			w.expect(ctx, t, "CLAIMED")
			if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = w.cmd.Wait()

			clk := testclock.New()
			g := testguard.New(t, idemkit.Config{Store: store, Clock: clk, Policy: idemkit.Policy{Lease: lease, OnStaleLease: stale}})
			b := newBusiness(fx)
			h := wrap(g, b, "POST /payments")
			ev := event("acme", "/payments", key, `{"amount":1999}`)

			rec, err := getLive(ctx, store, sc.ID(false), clk.Now())
			if err != nil || rec.State != idemkit.StateInFlight {
				t.Fatalf("after the kill: record %+v, %v; want in_flight", rec, err)
			}
			// The lease lives: 409 + Retry-After, nothing runs.
			for range 3 {
				a := call(ctx, h, ev)
				if a.Status != 409 || a.Problem != "in-flight" || !a.retryAfter() || b.count(sc) != 0 {
					t.Fatalf("while the lease lives: %v, runs %d; want 409 in-flight with Retry-After", a, b.count(sc))
				}
			}
			// The lease has ended.
			clk.Advance(pastPending(lease))
			a := call(ctx, h, ev)
			switch stale {
			case idemkit.Takeover:
				if a.Status != 201 || a.Replay || b.count(sc) != 1 {
					t.Fatalf("takeover: %v, runs %d; want one fresh run", a, b.count(sc))
				}
				for range 3 {
					if r := call(ctx, h, ev); r.Status != 201 || !r.Replay || r.Body != a.Body || b.count(sc) != 1 {
						t.Fatalf("after the takeover: %v, runs %d; want the replay of %s", r, b.count(sc), a.Body)
					}
				}
			case idemkit.FailClosed:
				if a.Status != 409 || a.Problem != "indeterminate-operator-required" || b.count(sc) != 0 {
					t.Fatalf("fail closed: %v, runs %d; want 409 indeterminate", a, b.count(sc))
				}
				if r := call(ctx, h, ev); r.Status != 409 || r.Problem != "indeterminate-operator-required" || b.count(sc) != 0 {
					t.Fatalf("fail closed, again: %v", r)
				}
				recs, _, err := store.ListIndeterminate(ctx, "acme", "", 0, clk.Now())
				if err != nil || len(recs) != 1 || recs[0].Scope != sc || recs[0].State != idemkit.StateIndeterminate {
					t.Fatalf("ListIndeterminate: %v, %v; want the crashed record", recs, err)
				}
			}
			// Handler starts: one in the killed process, plus the takeover.
			want := map[idemkit.StalePolicy]int{idemkit.Takeover: 1, idemkit.FailClosed: 0}[stale]
			summary(t, "killed after claim (SIGKILL); 3 retries inside the lease: 409 in-flight; after the lease: %s; handler runs after the crash %d (want %d), effects %d",
				a.Problem+map[bool]string{true: "201 fresh run then replays", false: ""}[a.Status == 201], b.count(sc), want, fx.counts(t)[sc.ID(false)])
			if got := fx.counts(t)[sc.ID(false)]; got != want {
				t.Fatalf("effects %d, want %d", got, want)
			}
		})
	}
}
