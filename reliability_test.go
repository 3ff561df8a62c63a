package idemkit_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/policydefault"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/observe"
)

var errReset = &idemkit.StoreError{Op: "test", Err: errors.New("connection reset")}

// notify is a faultstore hook sending a value on ch once each call is
// done, dropping it when ch is full.
func notify(ch chan<- struct{}) faultstore.Hook {
	return faultstore.Always(faultstore.Fault{Then: func(error) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}})
}

// A claim whose answers are lost is made again with the same owner token
// and recognised as ours: the handler runs once, and no release is sent.
func TestLostClaimAnswerIsReclaimed(t *testing.T) {
	for _, fails := range []int{1, 2} {
		t.Run(fmt.Sprint(fails), func(t *testing.T) {
			f, fs := faultFixture(t, nil)
			fs.OnOp(faultstore.OpClaim, faultstore.First(fails, faultstore.Fault{Err: errReset, Applied: true}))
			snap, replayed, err := f.do(t, req("k"), respond(201, "x"))
			if err != nil || replayed || snap.Status != 201 || f.runs != 1 {
				t.Fatalf("Do: %+v replayed %v err %v runs %d", snap, replayed, err, f.runs)
			}
			if claims, releases := fs.CountOp(faultstore.OpClaim), fs.CountOp(faultstore.OpRelease); claims != fails+1 || releases != 0 {
				t.Fatalf("%d claims, %d releases; want %d and 0", claims, releases, fails+1)
			}
			// The record the claim replaced was our own: no takeover.
			if ks := f.obs.Kinds(); len(ks) != 1 || ks[0] != observe.EventExecuted {
				t.Fatalf("events %v, want [executed]", ks)
			}
			if _, replayed, err := f.do(t, req("k"), respond(201, "y")); err != nil || !replayed || f.runs != 1 {
				t.Fatalf("retry: replayed %v err %v runs %d", replayed, err, f.runs)
			}
		})
	}
}

// When every claim attempt fails, the claim is freed with retries; the
// error says "nothing stored" (ErrStoreUnavailable only) when that
// worked, and ErrClaimUnknown when it did not.
func TestFailedClaimIsFreedOrReported(t *testing.T) {
	for _, tc := range []struct {
		name    string
		applied bool
		release faultstore.Hook
		unknown bool
	}{
		{"applied, freed at the second release", true, faultstore.First(1, faultstore.Fault{Err: errReset}), false},
		{"applied, never freed", true, faultstore.Fail(errReset), true},
		{"not applied, release fails", false, faultstore.Fail(errReset), true},
		{"not applied, freed", false, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, fs := faultFixture(t, nil)
			fs.OnOp(faultstore.OpClaim, faultstore.Always(faultstore.Fault{Err: errReset, Applied: tc.applied}))
			fs.OnOp(faultstore.OpRelease, tc.release)
			_, _, err := f.do(t, req("k"), respond(201, "x"))
			if !errors.Is(err, idemkit.ErrStoreUnavailable) || f.runs != 0 {
				t.Fatalf("err %v runs %d, want ErrStoreUnavailable, not run", err, f.runs)
			}
			if claims := fs.CountOp(faultstore.OpClaim); claims != 3 {
				t.Fatalf("%d claim attempts, want 3", claims)
			}
			var cu *idemkit.ClaimUnknownError
			if got := errors.Is(err, idemkit.ErrClaimUnknown); got != tc.unknown || got != errors.As(err, &cu) {
				t.Fatalf("err %v: ErrClaimUnknown %v, want %v", err, got, tc.unknown)
			}
			id := req("k").Scope.ID(false)
			rec, gerr := getLive(context.Background(), f.store, id, f.clock.Now())
			if tc.unknown {
				if tc.applied && (gerr != nil || !cu.LeaseUntil.Equal(rec.LeaseUntil)) {
					t.Fatalf("left claim %+v (%v), error names lease %v", rec, gerr, cu.LeaseUntil)
				}
				if tc.applied {
					// The claim left behind is listed once its lease ends.
					f.clock.Advance(rec.LeaseUntil.Sub(f.clock.Now()) + time.Second)
					recs, _, err := f.store.ListStale(context.Background(), "acme", "", 10, f.clock.Now())
					if err != nil || len(recs) != 1 || recs[0].ID != id {
						t.Fatalf("ListStale after the lease: %v %v", recs, err)
					}
				}
				return
			}
			if !errors.Is(gerr, idemkit.ErrNotFound) {
				t.Fatalf("a claim reported as not stored is stored: %+v %v", rec, gerr)
			}
			fs.OnOp(faultstore.OpClaim, nil)
			f.mustRun(t, req("k"), respond(201, "x"), 1, "retry")
		})
	}
}

// Claim attempts stop at the request's deadline.
func TestClaimAttemptsStopAtDeadline(t *testing.T) {
	f, fs := faultFixture(t, func(c *idemkit.Config) { c.ClaimBackoff = time.Hour; c.ClaimAttempts = 5 })
	fs.OnOp(faultstore.OpClaim, faultstore.Fail(errReset))
	ctx := f.clock.Deadline(t, context.Background(), time.Minute)
	if _, _, err := f.guard.Do(ctx, req("k"), respond(201, "x")); !errors.Is(err, idemkit.ErrStoreUnavailable) {
		t.Fatal(err)
	}
	if claims := fs.CountOp(faultstore.OpClaim); claims != 1 {
		t.Fatalf("%d claim attempts with a backoff past the deadline, want 1", claims)
	}
}

// TestScopeOf: a guarded handler reads its request's tenant, operation and
// key; outside one there is none.
func TestScopeOf(t *testing.T) {
	f := newFixture(t, nil)
	r := req("scope-of")
	var got idemkit.Scope
	var ok bool
	f.do(t, r, func(ctx context.Context) (*idemkit.Snapshot, error) {
		got, ok = idemkit.ScopeOf(ctx)
		return &idemkit.Snapshot{Status: 201}, nil
	})
	if !ok || got != r.Scope {
		t.Fatalf("ScopeOf in the handler = %+v, %v; want %+v, true", got, ok, r.Scope)
	}
}

// execID returns the execution identity of ctx, "" outside a guarded
// handler.
func execID(ctx context.Context) string {
	id, _ := idemkit.ExecutionID(ctx)
	return id
}

func TestExecutionID(t *testing.T) {
	f := newFixture(t, nil)
	if id, ok := idemkit.ExecutionID(context.Background()); ok || id != "" {
		t.Fatalf("ExecutionID outside a handler = %q, %v; want \"\", false", id, ok)
	}
	if sc, ok := idemkit.ScopeOf(context.Background()); ok || sc != (idemkit.Scope{}) {
		t.Fatalf("ScopeOf outside a handler = %+v, %v; want none, false", sc, ok)
	}
	var got []string
	capture := func(fail bool) idemkit.Handler {
		return func(ctx context.Context) (*idemkit.Snapshot, error) {
			got = append(got, execID(ctx))
			if fail {
				return nil, errors.New("downstream timeout")
			}
			return &idemkit.Snapshot{Status: 201}, nil
		}
	}
	f.do(t, req("k"), capture(true))
	f.do(t, req("k"), capture(false)) // the retry of the same scope
	if len(got) != 2 || got[0] != got[1] || len(got[0]) != 32 || strings.Trim(got[0], "0123456789abcdef") != "" {
		t.Fatalf("execution IDs of one scope's retries: %q, want one 32-hex-digit value", got)
	}
	// The derivation is part of the contract: retries that straddle a
	// deploy must get the same identity. HMAC-SHA-256 keyed with
	// "idemkit execution id v1" over "4:acme14:POST /payments1:k", first
	// 16 bytes, computed independently.
	if got[0] != "e61e8e80340a0f335f8de035a85d34c5" {
		t.Fatalf("ExecutionID of (acme, POST /payments, k) = %s: the derivation changed", got[0])
	}
	for _, sc := range []idemkit.Scope{
		{Tenant: "globex", Operation: "POST /payments", Key: "k"},
		{Tenant: "acme", Operation: "POST /orders", Key: "k"},
		{Tenant: "acme", Operation: "POST /payments", Key: "k2"},
	} {
		f.do(t, idemkit.Request{Scope: sc, Fingerprint: "v1:sha256:aa"}, capture(false))
	}
	seen := map[string]bool{}
	for _, id := range got[1:] {
		if seen[id] || id == "" || strings.Contains(id, "k") {
			t.Fatalf("execution IDs %q: want distinct values across scopes, not the key", got)
		}
		seen[id] = true
	}
	// A secret changes every identity.
	g := newFixture(t, func(c *idemkit.Config) { c.ExecutionSecret = []byte("0123456789abcdef") })
	var secret string
	g.do(t, req("k"), func(ctx context.Context) (*idemkit.Snapshot, error) {
		secret = execID(ctx)
		return &idemkit.Snapshot{Status: 201}, nil
	})
	if secret == "" || secret == got[0] {
		t.Fatalf("with a secret %q, without %q", secret, got[0])
	}
}

// TestExecutionIDResource: the execution identity tells apart requests of
// one scope that act on different resources (an operation named by a
// route template covers many), so a key reused for order 2 once order 1's
// record is gone does not find order 1's writes as its own; it is the same
// for the retries of one request, whatever their fingerprint's version.
func TestExecutionIDResource(t *testing.T) {
	capture := func(fp, resource string, fail bool) (id string) {
		f := newFixture(t, nil)
		r := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: "k"}, Fingerprint: fp, Resource: resource}
		for _, fail := range []bool{fail, false} { // a failed run, then its retry
			f.do(t, r, func(ctx context.Context) (*idemkit.Snapshot, error) {
				if id != "" && id != execID(ctx) {
					t.Errorf("resource %q: the retry's identity %s, the first run's %s", resource, execID(ctx), id)
				}
				id = execID(ctx)
				if fail {
					return nil, errors.New("downstream timeout")
				}
				return &idemkit.Snapshot{Status: 201}, nil
			})
			if !fail {
				break
			}
		}
		return id
	}
	order1 := capture("v2:sha256:aa", "17:/orders/1/capture", true)
	for _, tc := range []struct {
		name, fp, resource string
		same               bool
	}{
		{"the same request, its fingerprint of another version", "v1:sha256:bb", "17:/orders/1/capture", true},
		{"another resource", "v2:sha256:aa", "17:/orders/2/capture", false},
		{"no resource", "v2:sha256:aa", "", false},
	} {
		if got := capture(tc.fp, tc.resource, false); (got == order1) != tc.same {
			t.Errorf("%s: %s, the first request's %s; want the same %v", tc.name, got, order1, tc.same)
		}
	}
	// The derivation is part of the contract: the resource is a fourth
	// length-prefixed field, HMAC-SHA-256 keyed with "idemkit execution id
	// v1" over "4:acme14:POST /payments1:k11:9:/payments", first 16 bytes,
	// computed independently. Without a resource, the scope's identity.
	if got := capture("v2:sha256:aa", "9:/payments", false); got != "85d207045bb49d0b4ff137487b2b9905" {
		t.Errorf("ExecutionID of (acme, POST /payments, k) on 9:/payments = %s: the derivation changed", got)
	}
	if got := capture("v2:sha256:aa", "", false); got != "e61e8e80340a0f335f8de035a85d34c5" {
		t.Errorf("ExecutionID of (acme, POST /payments, k) without a resource = %s: the derivation changed", got)
	}
}

// A handler that says its outcome is unknown keeps the key: the record is
// indeterminate at once, under either stale policy, and never run again.
func TestOutcomeUnknownKeepsTheClaim(t *testing.T) {
	for _, pol := range []idemkit.StalePolicy{idemkit.FailClosed, idemkit.Takeover} {
		t.Run(pol.String(), func(t *testing.T) {
			f := newFixture(t, func(c *idemkit.Config) { c.Policy.OnStaleLease = pol })
			_, _, err := f.do(t, req("k"), func(context.Context) (*idemkit.Snapshot, error) {
				return nil, fmt.Errorf("orders put: answer lost: %w", idemkit.ErrOutcomeUnknown)
			})
			if !errors.Is(err, idemkit.ErrOutcomeUnknown) {
				t.Fatalf("err %v, want ErrOutcomeUnknown", err)
			}
			if k := f.obs.Last().Kind; k != observe.EventOutcomeUnknown {
				t.Fatalf("event %s, want %s", k, observe.EventOutcomeUnknown)
			}
			rec, err := getLive(context.Background(), f.store, req("k").Scope.ID(false), f.clock.Now())
			if err != nil || rec.State != idemkit.StateIndeterminate {
				t.Fatalf("record %+v %v, want indeterminate at once", rec, err)
			}
			for _, wait := range []time.Duration{0, time.Hour} {
				f.clock.Advance(wait)
				if _, _, err := f.do(t, req("k"), respond(201, "x")); !errors.Is(err, idemkit.ErrIndeterminate) || f.runs != 1 {
					t.Fatalf("retry after %s: err %v runs %d, want ErrIndeterminate and no run", wait, err, f.runs)
				}
			}
			recs, _, err := f.store.ListIndeterminate(context.Background(), "acme", "", 10, f.clock.Now())
			if err != nil || len(recs) != 1 {
				t.Fatalf("ListIndeterminate: %v %v", recs, err)
			}
		})
	}
}

// The owner's completion after its lease ended heals a record a retry
// marked indeterminate meanwhile: later retries get the response.
func TestLateCompletionHeals(t *testing.T) {
	f := newFixture(t, nil)
	f.guard, _ = idemkit.New(idemkit.Config{Store: f.store, Observer: f.obs, Clock: f.clock, Policy: idemkit.Policy{Lease: time.Minute}})
	started, finish := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := f.guard.Do(context.Background(), req("k"), func(context.Context) (*idemkit.Snapshot, error) {
			close(started)
			<-finish
			return &idemkit.Snapshot{Status: 201, Body: []byte("first")}, nil
		})
		done <- err
	}()
	<-started
	f.clock.Advance(2 * time.Minute)
	if _, _, err := f.guard.Do(context.Background(), req("k"), respond(201, "second")); !errors.Is(err, idemkit.ErrIndeterminate) {
		t.Fatalf("retry after the lease: %v, want ErrIndeterminate", err)
	}
	close(finish)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.mustReplay(t, req("k"), "first", "retry after the late completion")
}

// A request without a deadline renews its lease while the handler runs,
// so a retry after the first lease still finds it in flight; renewals stop
// when Do returns.
func TestLeaseRenewal(t *testing.T) {
	f, fs := faultFixture(t, func(c *idemkit.Config) { c.Policy.Heartbeat = 2 * time.Millisecond })
	extended := make(chan struct{}, 1)
	fs.OnOp(faultstore.OpExtend, notify(extended))
	started, finish := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	var extendsByDo int // the renewals begun before Do returned
	go func() {
		_, _, err := f.guard.Do(context.Background(), req("k"), func(context.Context) (*idemkit.Snapshot, error) {
			close(started)
			<-finish
			return &idemkit.Snapshot{Status: 201, Body: []byte("first")}, nil
		})
		extendsByDo = fs.CountOp(faultstore.OpExtend)
		done <- err
	}()
	<-started
	f.clock.Advance(policydefault.Lease + time.Second)
	// Wait for a renewal begun after the first lease ended: the third
	// value sent after the clock moved comes from one.
	for i := 0; i < 3; i++ {
		<-extended
	}
	_, _, err := f.guard.Do(context.Background(), req("k"), respond(201, "second"))
	var ce *idemkit.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("retry during a renewed lease: %v, want in flight", err)
	}
	close(finish)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := fs.CountOp(faultstore.OpExtend) - extendsByDo; n != 0 {
		t.Fatalf("%d renewals after Do returned", n)
	}
	if e := f.obs.Last(); e.Kind != observe.EventExecuted || e.Usage.Calls < 4 {
		t.Fatalf("event %s with %d store calls, want executed with the renewals counted", e.Kind, e.Usage.Calls)
	}
}

// Renewals are bounded by MaxRenewals, and none are made for a request
// with a deadline unless Heartbeat is set.
func TestLeaseRenewalBounds(t *testing.T) {
	f, fs := faultFixture(t, func(c *idemkit.Config) { c.Policy.Heartbeat = time.Millisecond; c.Policy.MaxRenewals = 3 })
	extended := make(chan struct{}, 16)
	fs.OnOp(faultstore.OpExtend, notify(extended))
	f.do(t, req("k"), func(context.Context) (*idemkit.Snapshot, error) {
		for i := 0; i < 3; i++ {
			<-extended
		}
		// A bounded wait for a fourth renewal, which must not come.
		select {
		case <-extended:
			t.Error("a renewal beyond MaxRenewals")
		case <-time.After(50 * time.Millisecond):
		}
		return &idemkit.Snapshot{Status: 201}, nil
	})
	if n := fs.CountOp(faultstore.OpExtend); n != 3 {
		t.Fatalf("%d renewals, want 3", n)
	}

	g, fs2 := faultFixture(t, func(c *idemkit.Config) { c.Policy.Lease = 30 * time.Millisecond })
	ctx := g.clock.Deadline(t, context.Background(), time.Minute)
	g.guard.Do(ctx, req("k"), func(context.Context) (*idemkit.Snapshot, error) {
		time.Sleep(40 * time.Millisecond) // over the default interval (a third of the lease)
		return &idemkit.Snapshot{Status: 201}, nil
	})
	if n := fs2.CountOp(faultstore.OpExtend); n != 0 {
		t.Fatalf("%d renewals for a request with a deadline and no Heartbeat", n)
	}
}

func explodingHandler(context.Context) (*idemkit.Snapshot, error) {
	panic("kaboom")
}

// A handler's panic reaches the caller with the handler's own frames on
// the stack, and the key is freed.
func TestHandlerPanicKeepsItsStack(t *testing.T) {
	f := newFixture(t, nil)
	var stack string
	func() {
		defer func() {
			if p := recover(); p != "kaboom" {
				t.Fatalf("recovered %v", p)
			}
			stack = string(debug.Stack())
		}()
		f.guard.Do(context.Background(), req("k"), explodingHandler)
	}()
	if !strings.Contains(stack, "explodingHandler") {
		t.Fatalf("the panic's stack lost the handler's frame:\n%s", stack)
	}
	if k := f.obs.Last().Kind; k != observe.EventReleased {
		t.Fatalf("event %s, want released", k)
	}
	if _, replayed, err := f.do(t, req("k"), respond(201, "ok")); err != nil || replayed {
		t.Fatalf("retry after panic: replayed %v err %v", replayed, err)
	}
}

// A handler that calls runtime.Goexit (t.FailNow in a test handler) frees
// the key too.
func TestHandlerGoexitReleases(t *testing.T) {
	f := newFixture(t, nil)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		f.guard.Do(context.Background(), req("k"), func(context.Context) (*idemkit.Snapshot, error) {
			runtime.Goexit()
			return nil, nil
		})
	}()
	<-exited
	if k := f.obs.Last().Kind; k != observe.EventReleased {
		t.Fatalf("event %s, want released", k)
	}
	f.mustRun(t, req("k"), respond(201, "ok"), 1, "retry after Goexit")
}

func TestRetentionShorterThanReplayWindowRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  idemkit.Config
		ok   bool
	}{
		{"policy", idemkit.Config{Policy: idemkit.Policy{RecordRetention: time.Hour}}, false},
		{"policy, both set", idemkit.Config{Policy: idemkit.Policy{ReplayWindow: 2 * time.Hour, RecordRetention: time.Hour}}, false},
		{"operation", idemkit.Config{Operations: map[string]idemkit.Policy{"POST /x": {ReplayWindow: 48 * time.Hour, RecordRetention: 24 * time.Hour}}}, false},
		{"equal", idemkit.Config{Policy: idemkit.Policy{ReplayWindow: time.Hour, RecordRetention: time.Hour}}, true},
		{"long window, default retention", idemkit.Config{Policy: idemkit.Policy{ReplayWindow: 30 * 24 * time.Hour}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Store = newFixture(t, nil).store
			g, err := idemkit.New(tc.cfg)
			if tc.ok {
				if err != nil {
					t.Fatal(err)
				}
				if p := g.Policy(""); p.RecordRetention < p.ReplayWindow {
					t.Fatalf("retention %s < window %s", p.RecordRetention, p.ReplayWindow)
				}
				return
			}
			if !errors.Is(err, idemkit.ErrInvalidConfig) || !strings.Contains(err.Error(), "RecordRetention") {
				t.Fatalf("New: %v, want an ErrInvalidConfig naming RecordRetention", err)
			}
		})
	}
}
