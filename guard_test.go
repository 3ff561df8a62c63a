package idemkit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/idemkey"
	"github.com/idemkit/idemkit/internal/policydefault"
	"github.com/idemkit/idemkit/internal/testing/eventlog"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
)

type fixture struct {
	clock *testclock.Clock
	store *memstore.Store
	obs   *eventlog.Log
	guard *idemkit.Guard
	runs  int
}

func newFixture(t *testing.T, mod func(*idemkit.Config)) *fixture {
	t.Helper()
	f := &fixture{clock: testclock.New(), store: memstore.New(), obs: &eventlog.Log{}}
	cfg := idemkit.Config{Store: f.store, Observer: f.obs, Clock: f.clock}
	if mod != nil {
		mod(&cfg)
	}
	g, err := idemkit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.guard = g
	return f
}

// resolveFailed writes an operator's failed decision on the indeterminate
// record with id, at.
func (f *fixture) resolveFailed(t *testing.T, id string, at time.Time) {
	t.Helper()
	f.resolveAs(t, id, idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops", Reason: "not charged", ResolvedAt: at})
}

// resolveAs writes the operator's decision res on the indeterminate record
// with id as idemkit.Resolve writes it, without waiting out its grace: in
// place of the version read.
func (f *fixture) resolveAs(t *testing.T, id string, res idemkit.Resolution) {
	t.Helper()
	cur, err := f.store.Get(context.Background(), id)
	if err != nil || cur.State != idemkit.StateIndeterminate {
		t.Fatalf("resolve %q: %+v %v, want an indeterminate record", id, cur, err)
	}
	out := cur.Clone()
	out.State, out.Version = res.As, cur.Version+"-resolved"
	if res.As == idemkit.StateCompleted {
		out.Snapshot, out.CompletedAt = res.Snapshot, res.ResolvedAt
	}
	res.Snapshot = nil
	out.Resolution = &res
	if met, err := f.store.Replace(context.Background(), out, cur); err != nil || met != nil {
		t.Fatalf("resolve %q: met %+v, %v", id, met, err)
	}
}

func req(key string) idemkit.Request {
	return idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: key}, Fingerprint: "v1:sha256:aa"}
}

func respond(status int, body string) idemkit.Handler {
	return func(context.Context) (*idemkit.Snapshot, error) {
		return &idemkit.Snapshot{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}, nil
	}
}

// do runs the guard with a handler that counts its runs.
func (f *fixture) do(t *testing.T, r idemkit.Request, h idemkit.Handler) (*idemkit.Snapshot, bool, error) {
	t.Helper()
	return f.guard.Do(context.Background(), r, func(ctx context.Context) (*idemkit.Snapshot, error) {
		f.runs++
		return h(ctx)
	})
}

func TestExecuteThenReplay(t *testing.T) {
	f := newFixture(t, nil)
	snap, replayed, err := f.do(t, req("k1"), respond(201, `{"id":"p1"}`))
	if err != nil || replayed || snap.Status != 201 {
		t.Fatalf("first: %+v %v %v", snap, replayed, err)
	}
	if e := f.obs.Last(); e.Kind != observe.EventExecuted || e.Usage.Calls != 2 {
		t.Fatalf("first event %s with %d store calls, want executed with 2", e.Kind, e.Usage.Calls)
	}
	f.clock.Advance(time.Hour)
	snap, replayed, err = f.do(t, req("k1"), respond(201, `{"id":"p2"}`))
	if err != nil || !replayed || string(snap.Body) != `{"id":"p1"}` {
		t.Fatalf("replay: %+v %v %v", snap, replayed, err)
	}
	if f.runs != 1 {
		t.Fatalf("handler ran %d times, want 1", f.runs)
	}
	if e := f.obs.Last(); e.Kind != observe.EventReplayed || e.Usage.Calls != 1 || e.Status != 201 {
		t.Fatalf("replay event %+v, want replayed with 1 store call", e)
	}
}

func TestScopesAreIndependent(t *testing.T) {
	f := newFixture(t, nil)
	for i, r := range []idemkit.Request{
		req("k"),
		{Scope: idemkit.Scope{Tenant: "globex", Operation: "POST /payments", Key: "k"}, Fingerprint: "v1:sha256:aa"},
		{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k"}, Fingerprint: "v1:sha256:aa"},
	} {
		snap, replayed, err := f.do(t, r, respond(201, fmt.Sprint(i)))
		if err != nil || replayed || string(snap.Body) != fmt.Sprint(i) {
			t.Fatalf("scope %+v: %+v %v %v", r.Scope, snap, replayed, err)
		}
	}
	if f.runs != 3 {
		t.Fatalf("handler ran %d times, want 3", f.runs)
	}
}

func TestFingerprintMismatch(t *testing.T) {
	f := newFixture(t, nil)
	if _, _, err := f.do(t, req("k"), respond(201, "a")); err != nil {
		t.Fatal(err)
	}
	other := req("k")
	other.Fingerprint = "v1:sha256:bb"
	_, _, err := f.do(t, other, respond(201, "b"))
	if !errors.Is(err, idemkit.ErrFingerprintMismatch) {
		t.Fatalf("err = %v, want ErrFingerprintMismatch", err)
	}
	if f.runs != 1 || f.obs.Last().Kind != observe.EventMismatch {
		t.Fatalf("runs %d, event %s", f.runs, f.obs.Last().Kind)
	}
}

// block returns a handler that signals when it starts and waits for release.
func block(started chan<- struct{}, release <-chan struct{}) idemkit.Handler {
	return func(context.Context) (*idemkit.Snapshot, error) {
		close(started)
		<-release
		return &idemkit.Snapshot{Status: 201, Body: []byte("first")}, nil
	}
}

func TestInFlight(t *testing.T) {
	f := newFixture(t, func(c *idemkit.Config) { c.Policy.Lease = 30 * time.Second })
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, _, err := f.guard.Do(context.Background(), req("k"), block(started, release))
		done <- err
	}()
	<-started

	// Precedence: a different request is a mismatch even while the first is in flight.
	other := req("k")
	other.Fingerprint = "v1:sha256:bb"
	if _, _, err := f.guard.Do(context.Background(), other, respond(201, "x")); !errors.Is(err, idemkit.ErrFingerprintMismatch) {
		t.Fatalf("different request in flight: %v, want ErrFingerprintMismatch", err)
	}

	for _, tc := range []struct {
		advance time.Duration
		want    time.Duration
	}{{0, 30 * time.Second}, {10*time.Second + 500*time.Millisecond, 20 * time.Second}, {19*time.Second + 400*time.Millisecond, time.Second}} {
		f.clock.Advance(tc.advance)
		_, _, err := f.guard.Do(context.Background(), req("k"), respond(201, "dup"))
		var ce *idemkit.ConflictError
		if !errors.As(err, &ce) || !errors.Is(err, idemkit.ErrInFlight) {
			t.Fatalf("duplicate in flight: %v, want *ConflictError", err)
		}
		if ce.RetryAfter != tc.want {
			t.Fatalf("RetryAfter = %s, want %s", ce.RetryAfter, tc.want)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.mustReplay(t, req("k"), "first", "after completion")
}

// crash leaves an in_flight record whose handler never completes, as a
// killed process would.
func crash(t *testing.T, f *fixture, r idemkit.Request, lease time.Duration) *idemkit.Record {
	t.Helper()
	now := f.clock.Now()
	rec := &idemkit.Record{ID: r.Scope.ID(false), Scope: r.Scope, State: idemkit.StateInFlight, Fingerprint: r.Fingerprint, Owner: "crashed", Version: "crashed",
		LeaseUntil: now.Add(lease), ReplayUntil: now.Add(24 * time.Hour), ExpiresAt: now.Add(7 * 24 * time.Hour), CreatedAt: now}
	if met, err := f.store.Create(context.Background(), rec); err != nil || met != nil {
		t.Fatalf("claim: %+v %v", met, err)
	}
	return rec
}

func TestStaleLeaseFailClosed(t *testing.T) {
	f := newFixture(t, nil)
	rec := crash(t, f, req("k"), 10*time.Second)
	f.clock.Advance(5 * time.Second)
	if _, _, err := f.do(t, req("k"), respond(201, "x")); !errors.Is(err, idemkit.ErrInFlight) {
		t.Fatalf("while the lease lives: %v, want ErrInFlight", err)
	}
	f.clock.Advance(5 * time.Second)
	// The run may still complete a moment after its lease: come back.
	_, _, err := f.do(t, req("k"), respond(201, "x"))
	var pe *idemkit.ConflictError
	if !errors.As(err, &pe) || pe.Reason != idemkit.ErrOutcomePending || errors.Is(err, idemkit.ErrIndeterminate) || pe.RetryAfter < time.Second {
		t.Fatalf("first request after the lease: %v, want a *ConflictError of ErrOutcomePending", err)
	}
	if k := f.obs.Last().Kind; k != observe.EventConflict {
		t.Fatalf("event %s, want conflict", k)
	}
	// The run's writes after its handler may land until LeaseMargin past
	// the lease, then 3 attempts of WriteTimeout (5 s) each and the pauses
	// between them (50 ms, then 100 ms): 17.15 s.
	if want := rec.LeaseUntil.Add(policydefault.LeaseMargin + 15*time.Second + 150*time.Millisecond); !pe.Until.Equal(want) {
		t.Fatalf("pending until %v, want %v (the lease's end + 17.15 s)", pe.Until, want)
	}
	// Past it, nobody but an operator can tell.
	f.clock.Set(pe.Until)
	for i := 0; i < 2; i++ {
		if _, _, err := f.do(t, req("k"), respond(201, "x")); !errors.Is(err, idemkit.ErrIndeterminate) {
			t.Fatalf("attempt %d after the run could complete: %v, want ErrIndeterminate", i, err)
		}
	}
	if f.runs != 0 {
		t.Fatalf("handler ran %d times under FailClosed", f.runs)
	}
	recs, _, err := f.store.ListIndeterminate(context.Background(), "acme", "", 0, f.clock.Now())
	if err != nil || len(recs) != 1 || recs[0].Owner != "crashed" || recs[0].Cause != idemkit.CauseLeaseExpired {
		t.Fatalf("indeterminate listing: %v %v", recs, err)
	}
	if k := f.obs.Last().Kind; k != observe.EventIndeterminate {
		t.Fatalf("event %s, want indeterminate", k)
	}

	// An operator resolves it as completed: the answer is replayed.
	ans := &idemkit.Snapshot{Status: 201, Body: []byte("resolved")}
	f.resolveAs(t, recs[0].ID, idemkit.Resolution{As: idemkit.StateCompleted, Snapshot: ans, Operator: "ops", ResolvedAt: f.clock.Now()})
	f.mustReplay(t, req("k"), "resolved", "after resolution")
}

func TestResolvedFailedRunsAgain(t *testing.T) {
	f := newFixture(t, nil)
	crash(t, f, req("k"), time.Second)
	f.clock.Advance(2 * time.Second)
	if _, _, err := f.do(t, req("k"), respond(201, "x")); !errors.Is(err, idemkit.ErrOutcomePending) {
		t.Fatal(err)
	}
	f.resolveFailed(t, req("k").Scope.ID(false), f.clock.Now())
	snap, replayed, err := f.do(t, req("k"), respond(201, "again"))
	if err != nil || replayed || string(snap.Body) != "again" || f.runs != 1 {
		t.Fatalf("after resolution as failed: %+v %v %v runs %d", snap, replayed, err, f.runs)
	}
}

func TestStaleLeaseTakeover(t *testing.T) {
	f := newFixture(t, func(c *idemkit.Config) {
		c.Operations = map[string]idemkit.Policy{"POST /payments": {OnStaleLease: idemkit.Takeover}}
	})
	crashed := crash(t, f, req("k"), 10*time.Second)
	if _, _, err := f.do(t, req("k"), respond(201, "x")); !errors.Is(err, idemkit.ErrInFlight) {
		t.Fatalf("while the lease lives: %v", err)
	}
	f.clock.Advance(10 * time.Second)
	snap, replayed, err := f.do(t, req("k"), respond(201, "takeover"))
	if err != nil || replayed || string(snap.Body) != "takeover" || f.runs != 1 {
		t.Fatalf("takeover: %+v %v %v runs %d", snap, replayed, err, f.runs)
	}
	ks := f.obs.Kinds()
	if len(ks) < 2 || ks[len(ks)-2] != observe.EventTakeover || ks[len(ks)-1] != observe.EventExecuted {
		t.Fatalf("events %v, want ... takeover, executed", ks)
	}
	// The crashed owner can no longer complete over the new result: its
	// completion replaces only the version it claimed.
	stale := crashed.Clone()
	stale.State, stale.Version = idemkit.StateCompleted, "crashed-done"
	stale.Snapshot = &idemkit.Snapshot{Status: 201, Body: []byte("stale")}
	if met, err := f.store.Replace(context.Background(), stale, crashed); err != nil || met == nil || met.Owner == "crashed" {
		t.Fatalf("stale completion: met %+v, %v; want the new owner's record met", met, err)
	}
	if _, replayed, _ := f.do(t, req("k"), respond(201, "x")); !replayed || f.runs != 1 {
		t.Fatal("the taken-over result is not replayed")
	}
}

func TestCacheableStatuses(t *testing.T) {
	for _, tc := range []struct {
		status int
		stored bool
	}{
		{200, true}, {201, true}, {202, true}, {204, true}, {400, true}, {402, true}, {404, true}, {409, true}, {422, true}, {500, true},
		{401, false}, {403, false}, {408, false}, {429, false}, {502, false}, {503, false}, {504, false},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			f := newFixture(t, nil)
			for i := 0; i < 2; i++ {
				snap, replayed, err := f.do(t, req("k"), respond(tc.status, fmt.Sprint(i)))
				if err != nil || snap.Status != tc.status {
					t.Fatalf("attempt %d: %+v %v", i, snap, err)
				}
				if wantReplay := tc.stored && i == 1; replayed != wantReplay {
					t.Fatalf("attempt %d: replayed = %v, want %v", i, replayed, wantReplay)
				}
			}
			want := 2
			if tc.stored {
				want = 1
			}
			if f.runs != want {
				t.Fatalf("handler ran %d times, want %d", f.runs, want)
			}
		})
	}
}

// TestDefaultCacheableRange: DefaultCacheable, which a custom Cacheable
// may call, accepts no value outside 100-999: it is not an HTTP status.
func TestDefaultCacheableRange(t *testing.T) {
	for _, status := range []int{-1, 0, 99, 1000, 2010} {
		if idemkit.DefaultCacheable(status) {
			t.Errorf("DefaultCacheable(%d) = true, want false", status)
		}
	}
	for _, status := range []int{100, 201, 999} {
		if !idemkit.DefaultCacheable(status) {
			t.Errorf("DefaultCacheable(%d) = false, want true", status)
		}
	}
}

func TestHandlerErrorReleases(t *testing.T) {
	f := newFixture(t, nil)
	boom := errors.New("processor timeout")
	_, _, err := f.do(t, req("k"), func(context.Context) (*idemkit.Snapshot, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the handler's error", err)
	}
	if k := f.obs.Last().Kind; k != observe.EventReleased {
		t.Fatalf("event %s, want released", k)
	}
	f.mustRun(t, req("k"), respond(201, "ok"), 2, "retry after error")
}

func TestHandlerPanicReleases(t *testing.T) {
	f := newFixture(t, nil)
	func() {
		defer func() {
			if p := recover(); p != "kaboom" {
				t.Fatalf("recovered %v, want the handler's panic", p)
			}
		}()
		f.do(t, req("k"), func(context.Context) (*idemkit.Snapshot, error) { panic("kaboom") })
		t.Fatal("Do returned after a panic")
	}()
	f.mustRun(t, req("k"), respond(201, "ok"), 2, "retry after panic")
}

func TestNilResponseIsAnError(t *testing.T) {
	f := newFixture(t, nil)
	if _, _, err := f.do(t, req("k"), func(context.Context) (*idemkit.Snapshot, error) { return nil, nil }); err == nil {
		t.Fatal("nil response accepted")
	}
	if _, replayed, err := f.do(t, req("k"), respond(201, "ok")); err != nil || replayed {
		t.Fatalf("retry: %v %v", replayed, err)
	}
}

// faultFixture is newFixture with the guard's store, f.store, wrapped in
// the faultstore.Store it returns. Claims are tried again after a
// millisecond, so that tests of failing claims run fast.
func faultFixture(t *testing.T, mod func(*idemkit.Config)) (*fixture, *faultstore.Store) {
	t.Helper()
	var fs *faultstore.Store
	f := newFixture(t, func(c *idemkit.Config) {
		fs = faultstore.New(c.Store.(*memstore.Store))
		c.Store, c.ClaimBackoff = fs, time.Millisecond
		if mod != nil {
			mod(c)
		}
	})
	return f, fs
}

func TestStoreUnavailableBeforeHandler(t *testing.T) {
	f, fs := faultFixture(t, nil)
	fs.OnOp(faultstore.OpClaim, faultstore.Fail(errors.New("connection reset")))
	_, _, err := f.do(t, req("k"), respond(201, "x"))
	if !errors.Is(err, idemkit.ErrStoreUnavailable) || f.runs != 0 {
		t.Fatalf("err %v runs %d, want ErrStoreUnavailable and no run", err, f.runs)
	}
	var se *idemkit.StoreError
	if !errors.As(err, &se) || se.Op != "claim" {
		t.Fatalf("err %v is not a claim *StoreError", err)
	}
}

func TestLostClaimAnswerFreesTheKey(t *testing.T) {
	f, fs := faultFixture(t, nil)
	fs.OnOp(faultstore.OpClaim, faultstore.Always(faultstore.Fault{Err: errors.New("connection reset"), Applied: true}))
	if _, _, err := f.do(t, req("k"), respond(201, "x")); !errors.Is(err, idemkit.ErrStoreUnavailable) {
		t.Fatal(err)
	}
	fs.OnOp(faultstore.OpClaim, nil)
	f.mustRun(t, req("k"), respond(201, "x"), 1, "retry after a lost claim answer")
}

func TestCompletionFailure(t *testing.T) {
	f, fs := faultFixture(t, nil)
	fs.OnOp(faultstore.OpComplete, faultstore.Fail(errors.New("throttled")))
	snap, replayed, err := f.do(t, req("k"), respond(201, "real"))
	if err != nil || replayed || string(snap.Body) != "real" {
		t.Fatalf("the caller must get the real response: %+v %v %v", snap, replayed, err)
	}
	if n := fs.CountOp(faultstore.OpComplete); n != 3 {
		t.Fatalf("completion attempted %d times, want 3", n)
	}
	e := f.obs.Last()
	if e.Kind != observe.EventCompletionFailed || !errors.Is(e.Err, idemkit.ErrStoreUnavailable) {
		t.Fatalf("event %+v, want completion_failed", e)
	}
	// The record is left to the lease policy: in flight, then indeterminate.
	if _, _, err := f.do(t, req("k"), respond(201, "x")); !errors.Is(err, idemkit.ErrInFlight) {
		t.Fatalf("retry while leased: %v", err)
	}
	f.clock.Advance(policydefault.Lease)
	if _, _, err := f.do(t, req("k"), respond(201, "x")); !errors.Is(err, idemkit.ErrOutcomePending) || f.runs != 1 {
		t.Fatalf("retry after the lease: %v runs %d", err, f.runs)
	}
}

// TestCompletionAttemptsEachGetWriteTimeout: each attempt of a completion
// has a WriteTimeout of its own, so two that hang until theirs ends leave
// the third to store the outcome, and a retry replays it.
func TestCompletionAttemptsEachGetWriteTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	f, fs := faultFixture(t, func(c *idemkit.Config) { c.WriteTimeout = timeout })
	var hung []time.Duration
	fs.OnOp(faultstore.OpComplete, func(ctx context.Context, c faultstore.Call) faultstore.Fault {
		if c.N > 2 {
			return faultstore.Fault{}
		}
		start := time.Now()
		<-ctx.Done()
		hung = append(hung, time.Since(start))
		return faultstore.Fault{Err: ctx.Err()}
	})
	snap, replayed, err := f.do(t, req("k"), respond(201, "real"))
	if err != nil || replayed || string(snap.Body) != "real" {
		t.Fatalf("the caller must get the real response: %+v %v %v", snap, replayed, err)
	}
	if n := fs.CountOp(faultstore.OpComplete); n != 3 || len(hung) != 2 {
		t.Fatalf("completion attempted %d times, %d hung; want 3, 2 of them hung", n, len(hung))
	}
	for i, d := range hung {
		if d < timeout {
			t.Errorf("hung attempt %d ended after %v, before its WriteTimeout %v", i+1, d, timeout)
		}
	}

	if e := f.obs.Last(); e.Kind != observe.EventExecuted {
		t.Fatalf("event %+v, want executed", e)
	}
	f.mustReplay(t, req("k"), "real", "a retry")
}

// TestCompletionAttemptsEndWithinTheSpan: a store that overruns each
// attempt's WriteTimeout does not stretch a completion past the span of
// its attempts, 3 × WriteTimeout and the pauses between them (50 ms, then
// 100 ms): the last attempt's deadline is the span's end.
func TestCompletionAttemptsEndWithinTheSpan(t *testing.T) {
	const timeout = 200 * time.Millisecond
	const span = 3*timeout + 150*time.Millisecond
	f, fs := faultFixture(t, func(c *idemkit.Config) { c.WriteTimeout = timeout })
	var deadlines []time.Time
	fs.OnOp(faultstore.OpComplete, func(ctx context.Context, c faultstore.Call) faultstore.Fault {
		dl, _ := ctx.Deadline()
		deadlines = append(deadlines, dl)
		time.Sleep(timeout + 100*time.Millisecond) // deaf to ctx
		return faultstore.Fault{Err: errors.New("slow store")}
	})
	if _, _, err := f.do(t, req("k"), respond(201, "real")); err != nil {
		t.Fatal(err)
	}
	// How many attempts fit depends on how late the machine wakes the
	// store; without the span, three are made, the last past its end.
	if e := f.obs.Last(); e.Kind != observe.EventCompletionFailed || len(deadlines) == 0 {
		t.Fatalf("event %+v after %d attempts, want completion_failed", e, len(deadlines))
	}
	// The first attempt's deadline is its WriteTimeout, begun no earlier
	// than the span.
	end := deadlines[0].Add(span - timeout)
	for i, dl := range deadlines {
		if dl.IsZero() || dl.After(end) {
			t.Errorf("attempt %d's deadline %v, past the span's end %v", i+1, dl, end)
		}
	}
}

func TestReleaseFailureKeepsHandlerError(t *testing.T) {
	f, fs := faultFixture(t, nil)
	fs.OnOp(faultstore.OpRelease, faultstore.Fail(errors.New("unreachable")))
	boom := errors.New("boom")
	_, _, err := f.do(t, req("k"), func(context.Context) (*idemkit.Snapshot, error) { return nil, boom })
	if !errors.Is(err, boom) || !errors.Is(err, idemkit.ErrStoreUnavailable) {
		t.Fatalf("err = %v, want the handler's error joined with the store's", err)
	}
}

func TestMissingTenant(t *testing.T) {
	f := newFixture(t, nil)
	r := req("k")
	r.Scope.Tenant = ""
	if _, _, err := f.do(t, r, respond(201, "x")); !errors.Is(err, idemkit.ErrTenantMissing) || f.runs != 0 {
		t.Fatalf("err %v runs %d", err, f.runs)
	}
	if recs, _, _ := f.store.ListIndeterminate(context.Background(), "", "", 0, f.clock.Now()); len(recs) != 0 {
		t.Fatal("something was stored")
	}
	if _, err := getLive(context.Background(), f.store, r.Scope.ID(false), f.clock.Now()); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("a record was stored for a request without tenant: %v", err)
	}
}

// TestEmptyKeyRefused: a request whose scope has no key is refused before
// the store, like one without a tenant: all such requests of a tenant and
// operation would share one record, and an identical second request (a
// second intent) would get the first one's response.
func TestEmptyKeyRefused(t *testing.T) {
	f := newFixture(t, nil)
	r := req("")
	if _, _, err := f.do(t, r, respond(201, "x")); !errors.Is(err, idemkey.ErrEmpty) || f.runs != 0 {
		t.Fatalf("err %v runs %d, want idemkey.ErrEmpty", err, f.runs)
	}
	if _, err := getLive(context.Background(), f.store, r.Scope.ID(false), f.clock.Now()); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("a record was stored for a request without a key: %v", err)
	}
	if ks := f.obs.Kinds(); len(ks) != 1 || ks[0] != observe.EventRefused {
		t.Fatalf("events %v, want [refused]", ks)
	}
}

func TestAccountWideKeys(t *testing.T) {
	f := newFixture(t, func(c *idemkit.Config) { c.AccountWide = true })
	if _, _, err := f.do(t, req("k"), respond(201, "pay")); err != nil {
		t.Fatal(err)
	}
	other := req("k")
	other.Scope.Operation = "POST /refunds"
	if _, _, err := f.do(t, other, respond(201, "refund")); !errors.Is(err, idemkit.ErrOperationMismatch) {
		t.Fatalf("another operation: %v, want ErrOperationMismatch", err)
	}
	// Operation mismatch takes precedence over a fingerprint mismatch.
	other.Fingerprint = "v1:sha256:zz"
	if _, _, err := f.do(t, other, respond(201, "refund")); !errors.Is(err, idemkit.ErrOperationMismatch) {
		t.Fatalf("another operation and body: %v, want ErrOperationMismatch", err)
	}
	if _, replayed, err := f.do(t, req("k"), respond(201, "x")); err != nil || !replayed || f.runs != 1 {
		t.Fatalf("same operation: %v %v", replayed, err)
	}
}

func TestFingerprintVersionChange(t *testing.T) {
	f := newFixture(t, nil)
	old := req("k")
	old.Fingerprint = "v0:sha256:old"
	if _, _, err := f.do(t, old, respond(201, "x")); err != nil {
		t.Fatal(err)
	}
	cur := req("k") // v1 fingerprint of the same request
	if _, _, err := f.do(t, cur, respond(201, "y")); !errors.Is(err, idemkit.ErrFingerprintMismatch) {
		t.Fatalf("without FingerprintAs: %v, want a mismatch", err)
	}
	cur.FingerprintAs = testkit.FingerprintAs("v0", "v0:sha256:old")
	if _, replayed, err := f.do(t, cur, respond(201, "y")); err != nil || !replayed {
		t.Fatalf("with FingerprintAs: %v %v", replayed, err)
	}
	cur.FingerprintAs = func(string) (string, error) { return "v0:sha256:other", nil }
	if _, _, err := f.do(t, cur, respond(201, "y")); !errors.Is(err, idemkit.ErrFingerprintMismatch) {
		t.Fatalf("a different request under the old version: %v", err)
	}

	// A stored fingerprint without a version names no rules to compute
	// under: a mismatch, and FingerprintAs is not asked.
	unversioned := req("u")
	unversioned.Fingerprint = "legacy"
	if _, _, err := f.do(t, unversioned, respond(201, "x")); err != nil {
		t.Fatal(err)
	}
	cur = req("u")
	cur.FingerprintAs = func(v string) (string, error) {
		t.Errorf("FingerprintAs(%q) asked for a stored fingerprint without a version", v)
		return "legacy", nil
	}
	if _, _, err := f.do(t, cur, respond(201, "y")); !errors.Is(err, idemkit.ErrFingerprintMismatch) {
		t.Fatalf("a stored fingerprint without a version: %v, want a mismatch", err)
	}
}

func TestReplayWindowAndRetention(t *testing.T) {
	f := newFixture(t, func(c *idemkit.Config) {
		c.Policy.ReplayWindow = 24 * time.Hour
		c.Policy.RecordRetention = 7 * 24 * time.Hour
	})
	created := f.clock.Now()
	h := func(context.Context) (*idemkit.Snapshot, error) {
		return &idemkit.Snapshot{Status: 201, Header: http.Header{"Location": {"/payments/p1"}}, Body: []byte("p1")}, nil
	}
	if _, _, err := f.do(t, req("k"), h); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(24*time.Hour - time.Second)
	if _, replayed, err := f.do(t, req("k"), h); err != nil || !replayed {
		t.Fatalf("inside the replay window: %v %v", replayed, err)
	}
	f.clock.Advance(time.Second)
	_, _, err := f.do(t, req("k"), h)
	var oe *idemkit.OutcomeError
	if !errors.As(err, &oe) || !errors.Is(err, idemkit.ErrReplayWindowPassed) {
		t.Fatalf("after the replay window: %v, want *OutcomeError", err)
	}
	if oe.Status != 201 || oe.Location != "/payments/p1" || !oe.CompletedAt.Equal(created) {
		t.Fatalf("outcome %+v", oe)
	}
	f.clock.Advance(6 * 24 * time.Hour)
	f.mustRun(t, req("k"), h, 2, "after the record retention")
}

func TestOmittedSnapshot(t *testing.T) {
	f := newFixture(t, nil)
	// The handler takes 3 s: the outcome names when it completed, not
	// when it started.
	var done time.Time
	if _, _, err := f.do(t, req("k"), func(context.Context) (*idemkit.Snapshot, error) {
		f.clock.Advance(3 * time.Second)
		done = f.clock.Now()
		return &idemkit.Snapshot{Status: 201, Omitted: true}, nil
	}); err != nil {
		t.Fatal(err)
	}
	_, _, err := f.do(t, req("k"), respond(201, "x"))
	var oe *idemkit.OutcomeError
	if !errors.As(err, &oe) || !errors.Is(err, idemkit.ErrSnapshotOmitted) || oe.Status != 201 || f.runs != 1 {
		t.Fatalf("replay of an omitted body: %v runs %d", err, f.runs)
	}
	if !oe.CompletedAt.Equal(done) {
		t.Fatalf("outcome completed at %v, want %v (when the handler returned)", oe.CompletedAt, done)
	}
	// Once the replay window has passed, the reason is the window, as for
	// any other response: the body would not be replayed either way.
	f.clock.Advance(policydefault.ReplayWindow)
	_, _, err = f.do(t, req("k"), respond(201, "x"))
	if !errors.As(err, &oe) || !errors.Is(err, idemkit.ErrReplayWindowPassed) || errors.Is(err, idemkit.ErrSnapshotOmitted) || oe.Status != 201 || f.runs != 1 {
		t.Fatalf("an omitted body after the replay window: %v runs %d, want ErrReplayWindowPassed", err, f.runs)
	}
}

// uuidV7At returns a UUIDv7 key whose embedded time is ts.
func uuidV7At(t *testing.T, ts time.Time) string {
	t.Helper()
	u, err := uuid.NewV7FromReader(zeroReader{})
	if err != nil {
		t.Fatal(err)
	}
	ms := uint64(ts.UnixMilli())
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	return u.String()
}

func TestUUIDv7KeyAge(t *testing.T) {
	f := newFixture(t, nil)
	at := func(ts time.Time) string { return uuidV7At(t, ts) }
	now := f.clock.Now()
	for _, tc := range []struct {
		name string
		key  string
		err  error
	}{
		{"fresh v7", at(now.Add(-time.Minute)), nil},
		{"v7 inside retention", at(now.Add(-policydefault.RecordRetention + time.Hour)), nil},
		{"v7 inside skew", at(now.Add(-policydefault.RecordRetention - time.Minute)), nil},
		{"v7 older than retention", at(now.Add(-policydefault.RecordRetention - time.Hour)), idemkit.ErrKeyExpired},
		{"v4 is not dated", uuid.NewString(), nil},
		// Read as a v7 or in the v1 layout, the bits of this v4 name a
		// time long past: only a v7 key carries a time.
		{"v4 whose bits read as a past time", "1b4e28ba-2fa1-41d2-883f-0016d3cca427", nil},
		// Only the canonical 36-character form is dated: 32 hex digits
		// are a random token to most clients, and one in sixteen has a 7
		// where a UUID keeps its version.
		{"old v7 without its dashes", strings.ReplaceAll(at(now.Add(-policydefault.RecordRetention-time.Hour)), "-", ""), nil},
		{"not a uuid", "order-1001", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := f.runs
			_, _, err := f.do(t, req(tc.key), respond(201, "x"))
			if !errors.Is(err, tc.err) || (err == nil && f.runs != runs+1) || (err != nil && f.runs != runs) {
				t.Fatalf("err %v (want %v), runs %d -> %d", err, tc.err, runs, f.runs)
			}
		})
	}
	g, _ := idemkit.New(idemkit.Config{Store: memstore.New(), Clock: f.clock, Policy: idemkit.Policy{IgnoreKeyTime: true}})
	if _, _, err := g.Do(context.Background(), req(at(now.Add(-30*24*time.Hour))), respond(201, "x")); err != nil {
		t.Fatalf("IgnoreKeyTime: %v", err)
	}
}

// TestUUIDv7KeyAgeLiveRecord: a UUIDv7 key older than the record retention
// whose record is still live (made an hour before its first request, or
// kept longer by a late resolution) is answered from its record as any
// retry is, never refused as expired: a live record wins over the key's
// age. Only a key with no live record is refused, with one read and
// nothing stored; a read that fails is an outage, not a refusal.
func TestUUIDv7KeyAgeLiveRecord(t *testing.T) {
	day := 24 * time.Hour
	unknown := func(context.Context) (*idemkit.Snapshot, error) {
		return nil, fmt.Errorf("charge timed out: %w", idemkit.ErrOutcomeUnknown)
	}
	answer := &idemkit.Snapshot{Status: 201, Body: []byte(`{"id":"by-operator"}`)}
	for _, tc := range []struct {
		name     string
		first    idemkit.Handler     // the first request's handler; nil: none
		decision *idemkit.Resolution // an operator's, six days and 23 hours later
		outage   bool                // the retry's read fails
		err      error
		replayed string // the body replayed
		runs     int    // handler runs in all
	}{
		{name: "no record", err: idemkit.ErrKeyExpired},
		{name: "no record, read fails", outage: true, err: idemkit.ErrStoreUnavailable},
		{name: "indeterminate", first: unknown, err: idemkit.ErrIndeterminate, runs: 1},
		{name: "resolved completed", first: unknown, decision: &idemkit.Resolution{As: idemkit.StateCompleted, Snapshot: answer}, replayed: `{"id":"by-operator"}`, runs: 1},
		{name: "resolved failed", first: unknown, decision: &idemkit.Resolution{As: idemkit.StateFailed}, replayed: "", runs: 2},
		{name: "completed past its replay window", first: respond(201, `{"id":"p1"}`), err: idemkit.ErrReplayWindowPassed, runs: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			start := f.clock.Now()
			r := req(uuidV7At(t, start.Add(-time.Hour)))
			if tc.first != nil {
				f.do(t, r, tc.first)
			}
			f.clock.Advance(6*day + 23*time.Hour)
			if tc.decision != nil {
				res := *tc.decision
				res.Operator, res.Reason = "ops", "checked the processor"
				if _, _, err := idemkit.Resolve(context.Background(), f.store, r.Scope.ID(false), res, f.clock.Now()); err != nil {
					t.Fatalf("resolve: %v", err)
				}
			}
			// The key is now 7 days 50 minutes old: past the retention and
			// its skew. The first request's record lives until 7 days.
			f.clock.Advance(50 * time.Minute)
			if tc.outage {
				// The read fails as an outage does.
				fs := faultstore.New(f.store)
				fs.On(faultstore.Get, faultstore.Fail(&idemkit.StoreError{Op: "get", Err: errors.New("throttled")}))
				g, err := idemkit.New(idemkit.Config{Store: fs, Clock: f.clock})
				if err != nil {
					t.Fatal(err)
				}
				f.guard = g
			}
			snap, replayed, err := f.do(t, r, respond(201, `{"id":"retry"}`))
			switch {
			case tc.err != nil && !errors.Is(err, tc.err):
				t.Fatalf("retry: %v, want %v", err, tc.err)
			case tc.err == nil && err != nil:
				t.Fatalf("retry: %v", err)
			case tc.err == nil && tc.replayed != "" && (!replayed || string(snap.Body) != tc.replayed):
				t.Fatalf("retry: %+v replayed %v, want %s replayed", snap, replayed, tc.replayed)
			case tc.err == nil && tc.replayed == "" && (replayed || string(snap.Body) != `{"id":"retry"}`):
				t.Fatalf("retry: %+v replayed %v, want a run", snap, replayed)
			case f.runs != tc.runs:
				t.Fatalf("handler ran %d times, want %d", f.runs, tc.runs)
			}
			if tc.first == nil && !tc.outage {
				if e := f.obs.Last(); e.Kind != observe.EventRefused || e.Usage.Calls != 1 {
					t.Errorf("event %s with %d store calls, want refused after one read", e.Kind, e.Usage.Calls)
				}
				if _, err := getLive(context.Background(), f.store, r.Scope.ID(false), f.clock.Now()); !errors.Is(err, idemkit.ErrNotFound) {
					t.Errorf("after the refusal: %v, want nothing stored", err)
				}
			}
		})
	}
}

// TestUUIDv7OldKeyFreedAgain: an old UUIDv7 key whose record an operator
// freed (failed), or whose stale lease a Takeover retry may take, runs
// again when the retry's fingerprint matches the stored one only under an
// older version (FingerprintAs): the key stays bound to the fingerprint it
// was first claimed with, which the claim must carry, as the ordinary
// path's does. Sent in the request's own version, the store refuses it and
// every retry gets 409 until the record expires.
func TestUUIDv7OldKeyFreedAgain(t *testing.T) {
	day := 24 * time.Hour
	for _, policy := range []idemkit.StalePolicy{idemkit.FailClosed, idemkit.Takeover} {
		t.Run(policy.String(), func(t *testing.T) {
			f := newFixture(t, func(c *idemkit.Config) { c.Policy.OnStaleLease = policy })
			start := f.clock.Now()
			first := req(uuidV7At(t, start.Add(-time.Hour)))
			// The first run never ends: its lease expires with the record
			// still live (Lease one minute, retention seven days).
			first.Fingerprint = "v1:sha256:aa"
			g, err := idemkit.New(idemkit.Config{Store: f.store, Clock: f.clock,
				Policy: idemkit.Policy{OnStaleLease: policy, Lease: time.Minute, RecordRetention: 7 * day}})
			if err != nil {
				t.Fatal(err)
			}
			f.guard = g
			if policy == idemkit.FailClosed {
				f.do(t, first, func(context.Context) (*idemkit.Snapshot, error) {
					return nil, fmt.Errorf("charge timed out: %w", idemkit.ErrOutcomeUnknown)
				})
				f.clock.Advance(6*day + 23*time.Hour)
				res := idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops", Reason: "not charged"}
				if _, _, err := idemkit.Resolve(context.Background(), f.store, first.Scope.ID(false), res, f.clock.Now()); err != nil {
					t.Fatalf("resolve: %v", err)
				}
			} else {
				// A claim whose run crashed: stored, never completed.
				rec := &idemkit.Record{ID: first.Scope.ID(false), Scope: first.Scope, State: idemkit.StateInFlight, Fingerprint: first.Fingerprint,
					Owner: "crashed", Version: "crashed", LeaseUntil: start.Add(time.Minute), ReplayUntil: start.Add(day), ExpiresAt: start.Add(7 * day), CreatedAt: start}
				if met, err := f.store.Create(context.Background(), rec); err != nil || met != nil {
					t.Fatalf("claim: %+v %v", met, err)
				}
				f.clock.Advance(6*day + 23*time.Hour)
			}
			f.clock.Advance(50 * time.Minute) // the key is now past retention and skew
			retry := first
			retry.Fingerprint = "v2:sha256:bb"
			retry.FingerprintAs = testkit.FingerprintAs("v1", "v1:sha256:aa")
			runs := f.runs
			snap, replayed, err := f.do(t, retry, respond(201, `{"id":"retry"}`))
			if err != nil || replayed || snap.Status != 201 || f.runs != runs+1 {
				t.Fatalf("retry: %+v replayed %v err %v, runs %d -> %d; want a run", snap, replayed, err, runs, f.runs)
			}
			got, err := getLive(context.Background(), f.store, first.Scope.ID(false), f.clock.Now())
			if err != nil || got.Fingerprint != "v1:sha256:aa" || got.State != idemkit.StateCompleted {
				t.Fatalf("record %+v %v: want completed, still bound to the first fingerprint", got, err)
			}
		})
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 0
	}
	return len(p), nil
}

func TestLease(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policy   idemkit.Policy
		deadline time.Duration // 0: no deadline
		want     time.Duration
	}{
		{"default without deadline", idemkit.Policy{}, 0, policydefault.Lease},
		{"context deadline plus margin", idemkit.Policy{}, 10 * time.Second, 10*time.Second + policydefault.LeaseMargin},
		{"custom margin", idemkit.Policy{LeaseMargin: 5 * time.Second}, 10 * time.Second, 15 * time.Second},
		{"explicit lease", idemkit.Policy{Lease: time.Minute}, 10 * time.Second, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(c *idemkit.Config) { c.Policy = tc.policy })
			ctx := context.Background()
			if tc.deadline > 0 {
				ctx = f.clock.Deadline(t, ctx, tc.deadline)
			}
			var rec *idemkit.Record
			if _, _, err := f.guard.Do(ctx, req("k"), seeing(f.store, req("k").Scope.ID(false), f.clock.Now, &rec)); err != nil {
				t.Fatal(err)
			}
			if got := rec.LeaseUntil.Sub(f.clock.Now()); got != tc.want {
				t.Fatalf("lease = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestMarkRaceLooksAgain(t *testing.T) {
	// The stale record is completed by its owner between our lost claim and
	// our mark of its stale lease: the guard must look again and replay it.
	f := newFixture(t, nil)
	crash(t, f, req("k"), time.Second)
	f.clock.Advance(2 * time.Second)
	rs := faultstore.New(f.store)
	rs.OnOp(faultstore.OpMarkIndeterminate, func(ctx context.Context, c faultstore.Call) faultstore.Fault {
		// The crashed owner completes just in time, in place of the
		// record the mark replaces.
		done := c.Prev.Clone()
		done.State, done.Version = idemkit.StateCompleted, "late"
		done.Snapshot = &idemkit.Snapshot{Status: 201, Body: []byte("late")}
		done.CompletedAt = f.clock.Now()
		if met, err := f.store.Replace(ctx, done, c.Prev); err != nil || met != nil {
			return faultstore.Fault{Err: fmt.Errorf("the late completion: met %+v, %v", met, err)}
		}
		return faultstore.Fault{}
	})
	g, _ := idemkit.New(idemkit.Config{Store: rs, Clock: f.clock})
	snap, replayed, err := g.Do(context.Background(), req("k"), respond(201, "x"))
	if err != nil || !replayed || string(snap.Body) != "late" {
		t.Fatalf("%+v %v %v, want the late completion replayed", snap, replayed, err)
	}
}

func TestRefuseIsObserved(t *testing.T) {
	f := newFixture(t, nil)
	f.guard.Refuse(context.Background(), req("k").Scope, idemkey.ErrMalformed)
	if e := f.obs.Last(); e.Kind != observe.EventRefused || !errors.Is(e.Err, idemkey.ErrMalformed) || e.Tenant != "acme" {
		t.Fatalf("event %+v, want refused", e)
	}
	if _, err := getLive(context.Background(), f.store, req("k").Scope.ID(false), f.clock.Now()); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatal("Refuse stored a record")
	}
}

// TestMaxRetryAfterWholeSeconds: Retry-After is whole seconds; it never
// exceeds the cap, and is at least one second.
func TestMaxRetryAfterWholeSeconds(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lease, max time.Duration
		want       time.Duration
	}{
		{"no cap, rounded up", 5500 * time.Millisecond, 0, 6 * time.Second},
		{"cap above the lease", 5500 * time.Millisecond, 10 * time.Second, 6 * time.Second},
		{"lease rounded up past the cap", 5500 * time.Millisecond, 5700 * time.Millisecond, 5 * time.Second},
		{"whole cap", 15 * time.Minute, 2 * time.Second, 2 * time.Second},
		{"cap 1.5s", 15 * time.Minute, 1500 * time.Millisecond, time.Second},
		{"cap 2.999s", 15 * time.Minute, 2999 * time.Millisecond, 2 * time.Second},
		{"cap below a second", 15 * time.Minute, 500 * time.Millisecond, time.Second},
		{"cap 1ns", 15 * time.Minute, time.Nanosecond, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, func(c *idemkit.Config) {
				c.Policy.Lease = 15 * time.Minute
				c.Policy.MaxRetryAfter = tc.max
			})
			crash(t, f, req("k"), tc.lease)
			_, _, err := f.do(t, req("k"), respond(201, "x"))
			var ce *idemkit.ConflictError
			if !errors.As(err, &ce) || ce.RetryAfter != tc.want {
				t.Fatalf("err %v, want a conflict with Retry-After %s", err, tc.want)
			}
			if tc.max >= time.Second && ce.RetryAfter > tc.max {
				t.Fatalf("Retry-After %s exceeds the cap %s", ce.RetryAfter, tc.max)
			}
		})
	}
}

func TestMaxRetryAfter(t *testing.T) {
	f := newFixture(t, func(c *idemkit.Config) {
		c.Policy.Lease = 15 * time.Minute
		c.Policy.MaxRetryAfter = 2 * time.Second
	})
	crash(t, f, req("k"), 15*time.Minute)
	_, _, err := f.do(t, req("k"), respond(201, "x"))
	var ce *idemkit.ConflictError
	if !errors.As(err, &ce) || ce.RetryAfter != 2*time.Second {
		t.Fatalf("err %v, want a conflict with Retry-After capped at 2s", err)
	}
}

func TestReleaseIsRetried(t *testing.T) {
	// A transient failure of the release after a handler error must not
	// leave the key held: the write is tried again.
	f, fs := faultFixture(t, nil)
	fs.OnOp(faultstore.OpRelease, faultstore.First(2, faultstore.Fault{Err: errors.New("timeout")}))
	boom := errors.New("processor said: try later")
	if _, _, err := f.do(t, req("k"), func(context.Context) (*idemkit.Snapshot, error) { return nil, boom }); !errors.Is(err, boom) || errors.Is(err, idemkit.ErrStoreUnavailable) {
		t.Fatalf("err = %v, want only the handler's error", err)
	}
	if n := fs.CountOp(faultstore.OpRelease); n != 3 {
		t.Fatalf("release tried %d times, want 3", n)
	}
	f.mustRun(t, req("k"), respond(201, "ok"), 2, "retry after the handler error")
}

func TestWriteAttempts(t *testing.T) {
	// WriteAttempts bounds releases too.
	for _, tc := range []struct {
		name  string
		write int
		want  int
	}{
		{"defaults", 0, 3},
		{"write attempts", 1, 1},
		{"two write attempts", 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, fs := faultFixture(t, func(c *idemkit.Config) { c.WriteAttempts = tc.write })
			fs.OnOp(faultstore.OpRelease, faultstore.Fail(errors.New("timeout")))
			boom := errors.New("handler failed")
			if _, _, err := f.do(t, req("k"), func(context.Context) (*idemkit.Snapshot, error) { return nil, boom }); !errors.Is(err, boom) {
				t.Fatalf("err = %v, want the handler's error", err)
			}
			if n := fs.CountOp(faultstore.OpRelease); n != tc.want {
				t.Fatalf("release tried %d times, want %d", n, tc.want)
			}
		})
	}
}

// TestNewNilStore: a Config without a Store is an invalid configuration,
// testable with errors.Is like every other one New refuses.
func TestNewNilStore(t *testing.T) {
	g, err := idemkit.New(idemkit.Config{})
	if g != nil || !errors.Is(err, idemkit.ErrInvalidConfig) || !strings.Contains(err.Error(), "Store") {
		t.Fatalf("New(Config{}) = %v, %v; want nil and an ErrInvalidConfig naming Store", g, err)
	}
}

// TestStatusOutsideHTTPNeverStored: a Cacheable that accepts every status
// still cannot make the guard store one outside 100-999, which no store
// is bound to read back: the key is freed and a retry runs.
func TestStatusOutsideHTTPNeverStored(t *testing.T) {
	for _, status := range []int{0, 99, 1000, 1 << 20, -1} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			g, err := idemkit.New(idemkit.Config{Store: memstore.New(), Policy: idemkit.Policy{Cacheable: func(int) bool { return true }}})
			if err != nil {
				t.Fatal(err)
			}
			req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k-status"}, Fingerprint: "v2:sha256:a"}
			runs := 0
			h := func(context.Context) (*idemkit.Snapshot, error) {
				runs++
				return &idemkit.Snapshot{Status: status}, nil
			}
			for i := 0; i < 2; i++ {
				snap, replayed, err := g.Do(context.Background(), req, h)
				if err != nil || replayed || snap.Status != status {
					t.Fatalf("Do %d: %+v replayed %v err %v; want the handler's response, not stored", i, snap, replayed, err)
				}
			}
			if runs != 2 {
				t.Fatalf("the handler ran %d times, want 2: the status must not be stored", runs)
			}
		})
	}
}

// TestCancelledClaimIsNoStoreFailure: a claim that fails because the caller
// cancelled the request (a client that hung up) is observed as
// EventCancelled, not as a store failure, so that alarms on store failures
// do not fire on hang-ups. A store that fails, or a claim that cannot be
// freed, is still a store failure.
func TestCancelledClaimIsNoStoreFailure(t *testing.T) {
	for _, tc := range []struct {
		name         string
		fails        string // the change whose writes fail (faultstore.Op), if any
		cancel       bool
		want         observe.EventKind
		claimUnknown bool
	}{
		{name: "cancelled", cancel: true, want: observe.EventCancelled},
		{name: "store down", fails: faultstore.OpClaim, want: observe.EventStoreError},
		{name: "cancelled, store down", fails: faultstore.OpClaim, cancel: true, want: observe.EventStoreError},
		{name: "cancelled, claim not freed", fails: faultstore.OpRelease, cancel: true,
			want: observe.EventStoreError, claimUnknown: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, fs := faultFixture(t, nil)
			if tc.fails != "" {
				fs.OnOp(tc.fails, faultstore.Fail(errors.New("connection reset")))
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			_, _, err := f.guard.Do(ctx, req("k"), respond(201, "x"))
			if !errors.Is(err, idemkit.ErrStoreUnavailable) || errors.Is(err, idemkit.ErrClaimUnknown) != tc.claimUnknown {
				t.Fatalf("err %v, want ErrStoreUnavailable (ErrClaimUnknown %v)", err, tc.claimUnknown)
			}
			e := f.obs.Last()
			if e.Kind != tc.want || e.Err != err {
				t.Fatalf("event %s (err %v), want %s with the returned error", e.Kind, e.Err, tc.want)
			}
			if tc.want == observe.EventCancelled && !errors.Is(e.Err, context.Canceled) {
				t.Fatalf("cancelled event's error %v is not context.Canceled", e.Err)
			}
		})
	}
}

// seeing returns a handler that reads, as it runs, the live record id in
// s at now() (getLive) into *rec, and answers 201.
func seeing(s idemkit.Store, id string, now func() time.Time, rec **idemkit.Record) idemkit.Handler {
	return func(context.Context) (*idemkit.Snapshot, error) {
		r, err := getLive(context.Background(), s, id, now())
		if err != nil {
			return nil, err
		}
		*rec = r
		return &idemkit.Snapshot{Status: 201}, nil
	}
}

// mustReplay sends r and fails t unless it is answered with the replay
// of body; after says after what.
func (f *fixture) mustReplay(t *testing.T, r idemkit.Request, body, after string) {
	t.Helper()
	if snap, replayed, err := f.do(t, r, respond(201, "again")); err != nil || !replayed || string(snap.Body) != body {
		t.Fatalf("%s: %+v replayed %v err %v, want the replay of %q", after, snap, replayed, err, body)
	}
}

// mustRun sends r with h and fails t unless the handler runs, the
// fixture's runs-th run; after says after what.
func (f *fixture) mustRun(t *testing.T, r idemkit.Request, h idemkit.Handler, runs int, after string) {
	t.Helper()
	if _, replayed, err := f.do(t, r, h); err != nil || replayed || f.runs != runs {
		t.Fatalf("%s: replayed %v err %v runs %d, want run %d", after, replayed, err, f.runs, runs)
	}
}

// getLive reads the live record with id at now, as a request sees it: a
// released key's tombstone and an expired record count as none
// (ErrNotFound).
func getLive(ctx context.Context, s idemkit.Store, id string, now time.Time) (*idemkit.Record, error) {
	rec, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if rec.State == idemkit.StateReleased || !rec.Live(now) {
		return nil, idemkit.ErrNotFound
	}
	return rec, nil
}
