package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/uuidv7"
)

// The histories below run the engine (a Guard, Resolve) on the store: each
// is a contract the engine keeps only with the store's help.

var errReset = &idemkit.StoreError{Op: "write", Err: errors.New("connection reset")}

// fault is what a hook makes of a write: err, when not nil, is returned in
// its place, and the write reaches the store first only when applied (it
// lands and its answer is lost).
type fault struct {
	err     error
	applied bool
}

// hook decides the fault of the n-th write (from 1) of its method, before
// it is made: prev is nil for a Create.
type hook func(ctx context.Context, n int, rec, prev *idemkit.Record) fault

// hooked is a store whose writes pass through hooks, and are recorded.
type hooked struct {
	idemkit.OperatorStore
	mu                sync.Mutex
	onCreate          hook
	onReplace         hook
	creates, replaces []*idemkit.Record // copies of the records written
	createN, replaceN int
}

func (h *hooked) setCreate(f hook) {
	h.mu.Lock()
	h.onCreate = f
	h.mu.Unlock()
}

func (h *hooked) setReplace(f hook) {
	h.mu.Lock()
	h.onReplace = f
	h.mu.Unlock()
}

func (h *hooked) created() []*idemkit.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*idemkit.Record(nil), h.creates...)
}

func (h *hooked) Create(ctx context.Context, rec *idemkit.Record) (*idemkit.Record, error) {
	h.mu.Lock()
	h.creates = append(h.creates, rec.Clone())
	h.createN++
	n, f := h.createN, h.onCreate
	h.mu.Unlock()
	return h.apply(ctx, f, n, rec, nil, func() (*idemkit.Record, error) { return h.OperatorStore.Create(ctx, rec) })
}

func (h *hooked) Replace(ctx context.Context, rec, prev *idemkit.Record) (*idemkit.Record, error) {
	h.mu.Lock()
	h.replaces = append(h.replaces, rec.Clone())
	h.replaceN++
	n, f := h.replaceN, h.onReplace
	h.mu.Unlock()
	return h.apply(ctx, f, n, rec, prev, func() (*idemkit.Record, error) { return h.OperatorStore.Replace(ctx, rec, prev) })
}

func (h *hooked) apply(ctx context.Context, f hook, n int, rec, prev *idemkit.Record, write func() (*idemkit.Record, error)) (*idemkit.Record, error) {
	var ft fault
	if f != nil {
		ft = f(ctx, n, rec, prev)
	}
	if ft.err == nil {
		return write()
	}
	if ft.applied {
		write()
	}
	return nil, ft.err
}

// failing is a hook that fails the writes numbered in ns with ft.
func failing(ft fault, ns ...int) hook {
	return func(_ context.Context, n int, _, _ *idemkit.Record) fault {
		for _, m := range ns {
			if n == m {
				return ft
			}
		}
		return fault{}
	}
}

// historyRequest returns a request of a scope of its own.
func historyRequest() idemkit.Request {
	n := seq.Add(1)
	return idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /charges", Key: fmt.Sprintf("history-%d", n)},
		Fingerprint: "v1:sha256:same"}
}

func respond(body string) idemkit.Handler {
	return func(context.Context) (*idemkit.Snapshot, error) {
		return &idemkit.Snapshot{Status: 201, Body: []byte(body)}, nil
	}
}

func mustNotRun(t *testing.T) idemkit.Handler {
	return func(context.Context) (*idemkit.Snapshot, error) {
		t.Error("the handler ran")
		return nil, errors.New("ran")
	}
}

// testRefusedClaimNeverHoldsTheKey: request A runs; its duplicate B is
// refused (409), but B's first claim attempt was held in the network (B's
// retry of it met A). A's handler fails and frees the key; B's held copy
// lands then. It must find A's tombstone and take nothing: A's retry runs
// at once, not 409 for the whole lease and then, under FailClosed,
// indeterminate on a key on which nothing ran.
func testRefusedClaimNeverHoldsTheKey(t *testing.T, s idemkit.OperatorStore) {
	clock := testclock.New()
	fs := &hooked{OperatorStore: s}
	g, err := idemkit.New(idemkit.Config{Store: fs, Clock: clock, ClaimBackoff: time.Millisecond, Policy: idemkit.Policy{Lease: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := historyRequest()
	var bErr error
	_, _, err = g.Do(ctx, req, func(context.Context) (*idemkit.Snapshot, error) {
		clock.Advance(100 * time.Millisecond)
		fs.setCreate(failing(fault{err: errReset}, 2))
		_, _, bErr = g.Do(ctx, req, mustNotRun(t))
		fs.setCreate(nil)
		clock.Advance(400 * time.Millisecond)
		return nil, errors.New("downstream failed")
	})
	if err == nil || !errors.Is(bErr, idemkit.ErrInFlight) {
		t.Fatalf("A: %v; B: %v, want B refused in flight", err, bErr)
	}
	held := fs.created()[1]
	tomb := mustGet(t, s, held.ID)
	if tomb.State != idemkit.StateReleased || tomb.Owner == held.Owner {
		t.Fatalf("after A's release: %+v, want A's tombstone", tomb)
	}
	met, err := s.Create(ctx, held)
	metOnly(t, s, "B's held claim after A's release", met, err, tomb)
	snap, replayed, err := g.Do(ctx, req, respond("retry ran"))
	if err != nil || replayed || string(snap.Body) != "retry ran" {
		t.Fatalf("A's retry: %+v %v %v; want it run at once", snap, replayed, err)
	}
}

// testTakeoverOnAChangedRecord: under Takeover, requests B and C find the
// same stale lease. B decides to take it over, but before B's write lands
// C takes it over, runs and completes. B's takeover, decided on the stale
// lease, must store nothing: B replays C's answer, and the handler ran
// once.
func testTakeoverOnAChangedRecord(t *testing.T, s idemkit.OperatorStore) {
	clock := testclock.New()
	pol := idemkit.Policy{Lease: time.Minute, OnStaleLease: idemkit.Takeover}
	fs := &hooked{OperatorStore: s}
	gb, err := idemkit.New(idemkit.Config{Store: fs, Clock: clock, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	gc, err := idemkit.New(idemkit.Config{Store: s, Clock: clock, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := historyRequest()
	now := clock.Now()
	stale := &idemkit.Record{ID: req.Scope.ID(false), Scope: req.Scope, State: idemkit.StateInFlight, Fingerprint: req.Fingerprint,
		Owner: "crashed", Version: version(), LeaseUntil: now.Add(-time.Second), ReplayUntil: now.Add(time.Hour),
		ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now.Add(-time.Minute)}
	mustCreate(t, s, stale)
	var runs atomic.Int32
	fs.setReplace(func(ctx context.Context, n int, rec, prev *idemkit.Record) fault {
		if n != 1 {
			return fault{}
		}
		if prev.Version != stale.Version {
			t.Errorf("B's first write replaces version %q, want the stale lease's", prev.Version)
		}
		snap, replayed, err := gc.Do(ctx, req, func(context.Context) (*idemkit.Snapshot, error) {
			runs.Add(1)
			return &idemkit.Snapshot{Status: 201, Body: []byte("by C")}, nil
		})
		if err != nil || replayed || string(snap.Body) != "by C" {
			t.Errorf("C: %+v %v %v; want C's takeover run", snap, replayed, err)
		}
		return fault{}
	})
	snap, replayed, err := gb.Do(ctx, req, func(context.Context) (*idemkit.Snapshot, error) {
		runs.Add(1)
		return &idemkit.Snapshot{Status: 201, Body: []byte("by B")}, nil
	})
	if err != nil || !replayed || string(snap.Body) != "by C" {
		t.Fatalf("B: %+v %v %v; want C's answer replayed", snap, replayed, err)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
	if got := mustGet(t, s, stale.ID); got.State != idemkit.StateCompleted || string(got.Snapshot.Body) != "by C" {
		t.Fatalf("the record: %+v, want C's completion", got)
	}
}

// testDecisionOnTheRunChecked: an operator's decision applies only to the
// run the operator checked. Run O1's outcome is unknown; operator X reads
// it and decides completed; before X's write lands, operator Y resolves
// O1 failed, the retry O2 claims the key and its outcome is unknown too.
// X's decision must not land on O2's record.
func testDecisionOnTheRunChecked(t *testing.T, s idemkit.OperatorStore) {
	clock := testclock.New()
	fs := &hooked{OperatorStore: s}
	g, err := idemkit.New(idemkit.Config{Store: s, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := historyRequest()
	id := req.Scope.ID(false)
	unknown := func(context.Context) (*idemkit.Snapshot, error) {
		return nil, fmt.Errorf("processor timed out: %w", idemkit.ErrOutcomeUnknown)
	}
	if _, _, err := g.Do(ctx, req, unknown); !errors.Is(err, idemkit.ErrOutcomeUnknown) {
		t.Fatalf("O1: %v, want ErrOutcomeUnknown", err)
	}
	o1 := mustGet(t, s, id)
	clock.Advance(idemkit.MaxWriteDelay + 2*time.Minute)
	var o2 *idemkit.Record
	fs.setReplace(func(ctx context.Context, n int, _, _ *idemkit.Record) fault {
		if n != 1 {
			return fault{}
		}
		// Before X's write lands: Y frees the key, O2 runs and ends
		// unknown.
		if _, _, err := idemkit.Resolve(ctx, s, id, idemkit.Resolution{As: idemkit.StateFailed, Operator: "y"}, clock.Now()); err != nil {
			t.Errorf("Y: %v", err)
		}
		if _, _, err := g.Do(ctx, req, unknown); !errors.Is(err, idemkit.ErrOutcomeUnknown) {
			t.Errorf("O2: %v, want ErrOutcomeUnknown", err)
		}
		o2, _ = s.Get(ctx, id)
		return fault{}
	})
	_, _, err = idemkit.Resolve(ctx, fs, id, idemkit.Resolution{As: idemkit.StateCompleted, Operator: "x", Snapshot: sampleSnapshot()}, clock.Now())
	if err == nil {
		t.Fatal("X's decision on O1 was applied after the key ran again")
	}
	if o2 == nil || o2.Owner == o1.Owner {
		t.Fatalf("O2 did not run: %+v", o2)
	}
	if got := mustGet(t, s, id); got.Owner != o2.Owner || got.State != idemkit.StateIndeterminate || got.Resolution != nil {
		t.Fatalf("O2's record after X's decision: %+v; want O2's, indeterminate, unresolved (X: %v)", got, err)
	}
}

// testOldKeyFreedAgain: a UUIDv7 key older than the record retention
// whose record is live and lets the key run again (resolved failed under
// FailClosed; a stale lease under Takeover) runs again, bound to the
// fingerprint it was first claimed with, even when the retry's
// fingerprint is of a newer version: the claim in place of the record
// carries the stored fingerprint, which the engine reads first for such a
// key. The retry's answer is then replayed.
func testOldKeyFreedAgain(t *testing.T, s idemkit.OperatorStore) {
	day := 24 * time.Hour
	for _, policy := range []idemkit.StalePolicy{idemkit.FailClosed, idemkit.Takeover} {
		t.Run(policy.String(), func(t *testing.T) {
			ctx := context.Background()
			clock := testclock.New()
			g, err := idemkit.New(idemkit.Config{Store: s, Clock: clock,
				Policy: idemkit.Policy{OnStaleLease: policy, Lease: time.Minute, RecordRetention: 7 * day}})
			if err != nil {
				t.Fatal(err)
			}
			first := historyRequest()
			first.Scope.Key = uuidv7.At(clock.Now().Add(-time.Hour))
			first.Fingerprint = "v1:sha256:aa"
			id := first.Scope.ID(false)
			endFirstRun(t, s, g, clock, policy, first)
			clock.Advance(50 * time.Minute) // the key is now past retention and skew
			retry := first
			retry.Fingerprint = "v2:sha256:bb"
			retry.FingerprintAs = testkit.FingerprintAs("v1", "v1:sha256:aa")
			snap, replayed, err := g.Do(ctx, retry, respond("retry"))
			if err != nil || replayed || string(snap.Body) != "retry" {
				t.Fatalf("retry: %+v replayed %v, %v; want it run", snap, replayed, err)
			}
			if got := mustGet(t, s, id); got.Fingerprint != "v1:sha256:aa" || got.State != idemkit.StateCompleted {
				t.Fatalf("record %+v: want completed, still bound to the first fingerprint", got)
			}
			if snap, replayed, err := g.Do(ctx, retry, mustNotRun(t)); err != nil || !replayed || string(snap.Body) != "retry" {
				t.Fatalf("the retry's retry: %+v replayed %v, %v; want the replay", snap, replayed, err)
			}
		})
	}
}

// endFirstRun runs first on g and leaves its record live, letting the key
// run again after a week: resolved failed under FailClosed, a crashed
// run's stale lease under Takeover.
func endFirstRun(t *testing.T, s idemkit.OperatorStore, g *idemkit.Guard, clock *testclock.Clock, policy idemkit.StalePolicy, first idemkit.Request) {
	t.Helper()
	ctx := context.Background()
	day := 24 * time.Hour
	id := first.Scope.ID(false)
	if policy == idemkit.FailClosed {
		if _, _, err := g.Do(ctx, first, func(context.Context) (*idemkit.Snapshot, error) {
			return nil, fmt.Errorf("charge timed out: %w", idemkit.ErrOutcomeUnknown)
		}); !errors.Is(err, idemkit.ErrOutcomeUnknown) {
			t.Fatalf("first run: %v, want ErrOutcomeUnknown", err)
		}
		clock.Advance(6*day + 23*time.Hour)
		res := idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops", Reason: "not charged"}
		if _, _, err := idemkit.Resolve(ctx, s, id, res, clock.Now()); err != nil {
			t.Fatalf("resolve: %v", err)
		}
	} else {
		// A run that crashed: its claim stays, never completed
		// (its release never lands).
		h := &hooked{OperatorStore: s}
		h.setReplace(func(context.Context, int, *idemkit.Record, *idemkit.Record) fault { return fault{err: errReset} })
		crashed, err := idemkit.New(idemkit.Config{Store: h, Clock: clock, WriteAttempts: 1,
			Policy: idemkit.Policy{OnStaleLease: policy, Lease: time.Minute, RecordRetention: 7 * day}})
		if err != nil {
			t.Fatal(err)
		}
		crashed.Do(ctx, first, func(context.Context) (*idemkit.Snapshot, error) { return nil, errors.New("crashed") })
		if got := mustGet(t, s, id); got.State != idemkit.StateInFlight {
			t.Fatalf("the crashed run's record: %+v, want in_flight", got)
		}
		clock.Advance(6*day + 23*time.Hour)
	}
}

// testLostAnswers: a claim and a completion whose writes landed with
// their answers lost are sent again, meet their own Version, and are
// recognised: the handler runs once, its answer is returned and stored,
// and a retry replays it.
func testLostAnswers(t *testing.T, s idemkit.OperatorStore) {
	clock := testclock.New()
	fs := &hooked{OperatorStore: s}
	fs.setCreate(failing(fault{err: errReset, applied: true}, 1))
	fs.setReplace(failing(fault{err: errReset, applied: true}, 1))
	g, err := idemkit.New(idemkit.Config{Store: fs, Clock: clock, ClaimBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := historyRequest()
	var runs atomic.Int32
	snap, replayed, err := g.Do(ctx, req, func(context.Context) (*idemkit.Snapshot, error) {
		runs.Add(1)
		return &idemkit.Snapshot{Status: 201, Body: []byte("charged")}, nil
	})
	if err != nil || replayed || string(snap.Body) != "charged" || runs.Load() != 1 {
		t.Fatalf("first: %+v %v %v, %d runs; want run once", snap, replayed, err, runs.Load())
	}
	got := mustGet(t, s, req.Scope.ID(false))
	if got.State != idemkit.StateCompleted || got.Owner != fs.created()[0].Owner {
		t.Fatalf("the record: %+v, want the claim's, completed", got)
	}
	snap, replayed, err = g.Do(ctx, req, mustNotRun(t))
	if err != nil || !replayed || string(snap.Body) != "charged" {
		t.Fatalf("retry: %+v %v %v, want the replay", snap, replayed, err)
	}
}

// testLostClaimMarkedEarly: a claim lands with its answer lost; before
// its retry, a request from a host whose clock runs ahead (past the lease)
// marks the lease ended, under FailClosed. The retry meets its own claim,
// marked: it runs the handler once, and its completion lands over the
// mark. It is not refused by its own record (the key would be kept for an
// operator, on which nothing ran).
func testLostClaimMarkedEarly(t *testing.T, s idemkit.OperatorStore) {
	clock := testclock.New()
	ahead := testclock.New()
	ahead.Advance(45 * time.Second)
	other, err := idemkit.New(idemkit.Config{Store: s, Clock: ahead})
	if err != nil {
		t.Fatal(err)
	}
	req := historyRequest()
	var marked error
	fs := &hooked{OperatorStore: s}
	fs.setCreate(lostThenBefore(2, func(ctx context.Context) { _, _, marked = other.Do(ctx, req, mustNotRun(t)) }))
	g, err := idemkit.New(idemkit.Config{Store: fs, Clock: clock, ClaimBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	snap, replayed, err := g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
		runs.Add(1)
		return &idemkit.Snapshot{Status: 201, Body: []byte("charged")}, nil
	})
	if !errors.Is(marked, idemkit.ErrOutcomePending) && !errors.Is(marked, idemkit.ErrIndeterminate) {
		t.Fatalf("the request from the host ahead: %v, want the lease marked (pending or indeterminate)", marked)
	}
	if err != nil || replayed || snap == nil || string(snap.Body) != "charged" || runs.Load() != 1 {
		t.Fatalf("the claim's retry: %+v %v %v, %d runs; want its own claim run once", snap, replayed, err, runs.Load())
	}
	got := mustGet(t, s, req.Scope.ID(false))
	if got.State != idemkit.StateCompleted || got.Owner != fs.created()[0].Owner {
		t.Fatalf("the record: %+v, want the claim's, completed", got)
	}
	snap, replayed, err = other.Do(context.Background(), req, mustNotRun(t))
	if err != nil || !replayed || string(snap.Body) != "charged" {
		t.Fatalf("the host ahead again: %+v %v %v, want the replay", snap, replayed, err)
	}
}

// lostThenBefore is a hook that lands the first write and loses its
// answer, and calls f before the write numbered n.
func lostThenBefore(n int, f func(context.Context)) hook {
	return func(ctx context.Context, m int, _, _ *idemkit.Record) fault {
		switch m {
		case 1:
			return fault{err: errReset, applied: true}
		case n:
			f(ctx)
		}
		return fault{}
	}
}

// testLateCompletionAfterPending: a retry that meets a run whose lease ran
// out marks it and is told to come back (ErrOutcomePending, not
// ErrIndeterminate); the run's late completion lands over the mark, and
// the retry replays it.
func testLateCompletionAfterPending(t *testing.T, s idemkit.OperatorStore) {
	clock := testclock.New()
	// A lease shorter than the run, and a deadline so that no renewal
	// runs: the lease ends while the handler still works.
	g, err := idemkit.New(idemkit.Config{Store: s, Clock: clock, Policy: idemkit.Policy{Lease: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	req := historyRequest()
	running, finish := make(chan struct{}), make(chan struct{})
	type result struct {
		snap *idemkit.Snapshot
		err  error
	}
	first := make(chan result, 1)
	go func() {
		snap, _, err := g.Do(ctx, req, func(context.Context) (*idemkit.Snapshot, error) {
			close(running)
			<-finish
			return &idemkit.Snapshot{Status: 201, Body: []byte("charged")}, nil
		})
		first <- result{snap, err}
	}()
	<-running
	clock.Advance(2 * time.Second)
	_, _, err = g.Do(ctx, req, mustNotRun(t))
	var pe *idemkit.ConflictError
	if !errors.As(err, &pe) || pe.Reason != idemkit.ErrOutcomePending || errors.Is(err, idemkit.ErrIndeterminate) {
		t.Fatalf("retry after the lease: %v, want a *ConflictError of ErrOutcomePending", err)
	}
	got := mustGet(t, s, req.Scope.ID(false))
	if got.State != idemkit.StateIndeterminate || got.Cause != idemkit.CauseLeaseExpired {
		t.Fatalf("record after the retry: %+v; want indeterminate, cause %q", got, idemkit.CauseLeaseExpired)
	}
	close(finish)
	if r := <-first; r.err != nil || string(r.snap.Body) != "charged" {
		t.Fatalf("first run: %+v", r)
	}
	snap, replayed, err := g.Do(ctx, req, mustNotRun(t))
	if err != nil || !replayed || string(snap.Body) != "charged" {
		t.Fatalf("retry after the late completion: %+v %v %v, want the replay", snap, replayed, err)
	}
}
