package faultstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/memstore"
)

var errReset = &idemkit.StoreError{Op: "test", Err: errors.New("connection reset")}

func record(now time.Time) *idemkit.Record {
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k"}
	return &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v1:a", Owner: "o1", Version: "v1",
		CreatedAt: now, LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(time.Hour)}
}

// TestCreateFaults: what each fault makes of a Create, seen in its answer
// and in what the wrapped store holds afterwards.
func TestCreateFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		hook   faultstore.Hook
		err    error
		stored bool
	}{
		{name: "no hook", stored: true},
		{name: "fails", hook: faultstore.Fail(errReset), err: errReset},
		{name: "fails applied", hook: faultstore.Always(faultstore.Fault{Err: errReset, Applied: true}), err: errReset, stored: true},
		{name: "skipped", hook: faultstore.Always(faultstore.Fault{Skip: true})},
		{name: "first call fails", hook: faultstore.First(1, faultstore.Fault{Err: errReset}), err: errReset},
		{name: "passes after the first", hook: faultstore.First(0, faultstore.Fault{Err: errReset}), stored: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := faultstore.New(memstore.New())
			fs.On(faultstore.Create, tc.hook)
			rec := record(time.Now())
			met, err := fs.Create(context.Background(), rec)
			if err != tc.err || met != nil {
				t.Fatalf("Create = %+v, %v; want nil, %v", met, err, tc.err)
			}
			_, gerr := fs.Inner().Get(context.Background(), rec.ID)
			if stored := gerr == nil; stored != tc.stored {
				t.Fatalf("stored %v (%v), want %v", stored, gerr, tc.stored)
			}
		})
	}
}

// TestLostAnswerMet: a write whose answer was lost, sent again, meets its
// own version: the wrapped store's answer, passed through.
func TestLostAnswerMet(t *testing.T) {
	fs := faultstore.New(memstore.New())
	fs.On(faultstore.Replace, faultstore.First(1, faultstore.Fault{Err: errReset, Applied: true}))
	ctx := context.Background()
	rec := record(time.Now())
	if met, err := fs.Create(ctx, rec); met != nil || err != nil {
		t.Fatalf("Create = %+v, %v", met, err)
	}
	done := rec.Clone()
	done.State, done.Version, done.Snapshot = idemkit.StateCompleted, "v2", &idemkit.Snapshot{Status: 201}
	if _, err := fs.Replace(ctx, done, rec); err != errReset {
		t.Fatalf("first Replace = %v, want the fault", err)
	}
	met, err := fs.Replace(ctx, done, rec)
	if err != nil || met == nil || met.Version != "v2" || met.State != idemkit.StateCompleted {
		t.Fatalf("Replace sent again = %+v, %v; want its own version met", met, err)
	}
}

// TestCallsRecorded: every call is recorded with its number and a copy of
// its arguments, and the hook sees the same; Inner's calls are not.
func TestCallsRecorded(t *testing.T) {
	fs := faultstore.New(memstore.New())
	var seen []int
	fs.On(faultstore.Create, func(_ context.Context, c faultstore.Call) faultstore.Fault {
		seen = append(seen, c.N)
		return faultstore.Fault{}
	})
	ctx := context.Background()
	rec := record(time.Now())
	fs.Create(ctx, rec)
	rec.Owner = "changed after the call"
	fs.Create(ctx, record(time.Now()))
	rel := record(time.Now())
	rel.State, rel.Version = idemkit.StateReleased, "v2"
	fs.Replace(ctx, rel, record(time.Now()))
	fs.Inner().Get(ctx, rec.ID)
	calls := fs.Calls(faultstore.Create)
	if len(calls) != 2 || calls[0].N != 1 || calls[1].N != 2 || calls[0].Owner != "o1" || calls[0].Record.Owner != "o1" || calls[0].Op != faultstore.OpClaim {
		t.Fatalf("creates recorded %+v", calls)
	}
	if len(seen) != 2 || seen[0] != 1 || seen[1] != 2 {
		t.Fatalf("the hook saw calls %v, want [1 2]", seen)
	}
	if n, m := fs.Count(faultstore.Replace), fs.Count(faultstore.Get); n != 1 || m != 0 {
		t.Fatalf("Count: %d replaces, %d reads; want 1 and 0", n, m)
	}
	r := fs.Calls(faultstore.Replace)
	if r[0].ID != rec.ID || r[0].Op != faultstore.OpRelease || r[0].Prev == nil || r[0].Prev.Version != "v1" || r[0].Record.Version != "v2" {
		t.Fatalf("replace recorded %+v", r[0])
	}
	if n := fs.CountOp(faultstore.OpRelease); n != 1 || len(fs.CallsOp(faultstore.OpClaim)) != 2 {
		t.Fatalf("CountOp(release) = %d, CallsOp(claim) = %d; want 1 and 2", n, len(fs.CallsOp(faultstore.OpClaim)))
	}
}

// TestOnOp: a hook set on an Op applies to the writes of that change only,
// in place of the method's hook, and counts them.
func TestOnOp(t *testing.T) {
	fs := faultstore.New(memstore.New())
	var methodSaw []string
	fs.On(faultstore.Replace, func(_ context.Context, c faultstore.Call) faultstore.Fault {
		methodSaw = append(methodSaw, c.Op)
		return faultstore.Fault{}
	})
	var opSaw []int
	fs.OnOp(faultstore.OpExtend, func(_ context.Context, c faultstore.Call) faultstore.Fault {
		opSaw = append(opSaw, c.N)
		if c.N == 2 {
			return faultstore.Fault{Err: errReset}
		}
		return faultstore.Fault{}
	})
	ctx := context.Background()
	now := time.Now()
	cur := record(now)
	fs.Create(ctx, cur)
	for i := range 3 {
		ext := cur.Clone()
		ext.Version, ext.LeaseUntil = fmt.Sprintf("e%d", i), cur.LeaseUntil.Add(time.Second)
		met, err := fs.Replace(ctx, ext, cur)
		if (err == errReset) != (i == 1) || met != nil {
			t.Fatalf("extend %d = %+v, %v", i+1, met, err)
		}
		if err == nil {
			cur = ext
		}
	}
	done := cur.Clone()
	done.State, done.Version, done.Snapshot = idemkit.StateCompleted, "done", &idemkit.Snapshot{Status: 200}
	if met, err := fs.Replace(ctx, done, cur); met != nil || err != nil {
		t.Fatalf("complete = %+v, %v", met, err)
	}
	if len(opSaw) != 3 || opSaw[0] != 1 || opSaw[2] != 3 {
		t.Fatalf("the extend hook saw %v, want [1 2 3]", opSaw)
	}
	if len(methodSaw) != 1 || methodSaw[0] != faultstore.OpComplete {
		t.Fatalf("the Replace hook saw %v, want only the completion", methodSaw)
	}
	fs.OnOp(faultstore.OpExtend, nil)
	if c := fs.CallsOp(faultstore.OpExtend); len(c) != 3 || c[1].N != 2 || fs.Calls(faultstore.Replace)[3].N != 4 {
		t.Fatalf("extends recorded %+v", c)
	}
}

// TestOp: each change names itself by what it writes.
func TestOp(t *testing.T) {
	now := time.Now()
	claim := record(now)
	with := func(r *idemkit.Record, f func(*idemkit.Record)) *idemkit.Record {
		r = r.Clone()
		f(r)
		return r
	}
	other := with(claim, func(r *idemkit.Record) { r.Owner = "o2" })
	failed := with(claim, func(r *idemkit.Record) {
		r.State, r.Resolution = idemkit.StateFailed, &idemkit.Resolution{As: idemkit.StateFailed}
	})
	released := with(claim, func(r *idemkit.Record) { r.State = idemkit.StateReleased })
	unknown := with(claim, func(r *idemkit.Record) { r.State, r.Cause = idemkit.StateIndeterminate, idemkit.CauseOutcomeUnknown })
	stale := with(claim, func(r *idemkit.Record) { r.State, r.Cause = idemkit.StateIndeterminate, idemkit.CauseLeaseExpired })
	done := with(claim, func(r *idemkit.Record) { r.State, r.Snapshot = idemkit.StateCompleted, &idemkit.Snapshot{Status: 201} })
	resolvedDone := with(stale, func(r *idemkit.Record) {
		r.State, r.Resolution = idemkit.StateCompleted, &idemkit.Resolution{As: idemkit.StateCompleted}
	})
	extended := with(claim, func(r *idemkit.Record) { r.LeaseUntil = r.LeaseUntil.Add(time.Minute) })
	for _, tc := range []struct {
		name      string
		rec, prev *idemkit.Record
		want      string
	}{
		{"create a claim", claim, nil, faultstore.OpClaim},
		{"claim over a released key", claim, released, faultstore.OpClaim},
		{"claim over a failed record", other, failed, faultstore.OpClaim},
		{"take over a stale lease", other, claim, faultstore.OpClaim},
		{"renew", extended, claim, faultstore.OpExtend},
		{"complete", done, claim, faultstore.OpComplete},
		{"late completion over a mark", done, stale, faultstore.OpComplete},
		{"release", released, claim, faultstore.OpRelease},
		{"release of no record", released, nil, faultstore.OpRelease},
		{"mark unknown", unknown, claim, faultstore.OpMarkUnknown},
		{"mark a stale lease", stale, claim, faultstore.OpMarkIndeterminate},
		{"resolve completed", resolvedDone, stale, faultstore.OpResolve},
		{"resolve failed", failed, unknown, faultstore.OpResolve},
		{"nothing the engine writes", with(claim, func(r *idemkit.Record) { r.State = idemkit.StateFailed }), claim, ""},
	} {
		if got := faultstore.Op(tc.rec, tc.prev); got != tc.want {
			t.Errorf("%s: Op = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestEngineOps: the writes a Guard and Resolve make are named as Op names
// them, so hooks set on an Op meet the engine's changes.
func TestEngineOps(t *testing.T) {
	clock := testclock.New()
	fs := faultstore.New(memstore.New())
	g, err := idemkit.New(idemkit.Config{Store: fs, Clock: clock, Policy: idemkit.Policy{Lease: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := func(key string) idemkit.Request {
		return idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: key}, Fingerprint: "v1:a"}
	}
	ok := func(context.Context) (*idemkit.Snapshot, error) { return &idemkit.Snapshot{Status: 201}, nil }
	var log []string
	failComplete := false
	logged := func(m faultstore.Method) {
		fs.On(m, func(_ context.Context, c faultstore.Call) faultstore.Fault {
			if m == faultstore.Create {
				log = append(log, "create "+c.Op)
			} else {
				log = append(log, c.Op)
			}
			if failComplete && c.Op == faultstore.OpComplete {
				return faultstore.Fault{Err: errReset}
			}
			return faultstore.Fault{}
		})
	}
	logged(faultstore.Create)
	logged(faultstore.Replace)
	ops := func() []string {
		got := log
		log = nil
		return got
	}
	check := func(name string, want ...string) {
		t.Helper()
		if got := ops(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s wrote %q, want %q", name, got, want)
		}
	}
	newGuard := func(p idemkit.Policy) {
		if g, err = idemkit.New(idemkit.Config{Store: fs, Clock: clock, Policy: p}); err != nil {
			t.Fatal(err)
		}
	}
	g.Do(ctx, req("done"), ok)
	check("a run", "create "+faultstore.OpClaim, faultstore.OpComplete)
	newGuard(idemkit.Policy{Lease: time.Minute})
	g.Do(ctx, req("released"), func(context.Context) (*idemkit.Snapshot, error) { return nil, errors.New("downstream") })
	check("a failed run", "create "+faultstore.OpClaim, faultstore.OpRelease)
	newGuard(idemkit.Policy{Lease: time.Minute})
	g.Do(ctx, req("released"), ok)
	check("a run over a tombstone", "create "+faultstore.OpClaim, faultstore.OpClaim, faultstore.OpComplete)
	newGuard(idemkit.Policy{Lease: time.Minute})
	g.Do(ctx, req("unknown"), func(context.Context) (*idemkit.Snapshot, error) { return nil, idemkit.ErrOutcomeUnknown })
	check("an unknown outcome", "create "+faultstore.OpClaim, faultstore.OpMarkUnknown)
	clock.Advance(idemkit.MaxWriteDelay + 2*time.Minute)
	if _, _, err := idemkit.Resolve(ctx, fs, req("unknown").Scope.ID(false), idemkit.Resolution{As: idemkit.StateFailed, Operator: "op"}, clock.Now()); err != nil {
		t.Fatal(err)
	}
	check("a resolution", faultstore.OpResolve)

	// A stale lease: a run that never settles (its completion fails), then
	// a retry after its lease marks it (FailClosed) or takes it over.
	for _, pol := range []idemkit.StalePolicy{idemkit.FailClosed, idemkit.Takeover} {
		// A clock at the wall clock's time: the completion's attempts
		// pause on it within a real deadline.
		clock = testclock.New()
		newGuard(idemkit.Policy{Lease: time.Minute, OnStaleLease: pol})
		key := fmt.Sprint("stale-", pol)
		failComplete = true
		g.Do(ctx, req(key), ok)
		failComplete = false
		clock.Advance(2 * time.Minute)
		g.Do(ctx, req(key), ok)
		if pol == idemkit.FailClosed {
			check("a retry of a stale lease, FailClosed", "create "+faultstore.OpClaim, faultstore.OpComplete, faultstore.OpComplete, faultstore.OpComplete,
				"create "+faultstore.OpClaim, faultstore.OpMarkIndeterminate)
		} else {
			check("a retry of a stale lease, Takeover", "create "+faultstore.OpClaim, faultstore.OpComplete, faultstore.OpComplete, faultstore.OpComplete,
				"create "+faultstore.OpClaim, faultstore.OpClaim, faultstore.OpComplete)
		}
	}
}

// TestEngineRenewalOps: a renewal is an extend.
func TestEngineRenewalOps(t *testing.T) {
	fs := faultstore.New(memstore.New())
	g, err := idemkit.New(idemkit.Config{Store: fs, Policy: idemkit.Policy{Lease: time.Minute, Heartbeat: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "renewed"}, Fingerprint: "v1:a"}
	extended := make(chan struct{}, 1)
	fs.OnOp(faultstore.OpExtend, func(context.Context, faultstore.Call) faultstore.Fault {
		return faultstore.Fault{Then: func(err error) {
			if err == nil {
				select {
				case extended <- struct{}{}:
				default:
				}
			}
		}}
	})
	if _, _, err := g.Do(context.Background(), req, func(context.Context) (*idemkit.Snapshot, error) {
		<-extended
		return &idemkit.Snapshot{Status: 201}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if fs.CountOp(faultstore.OpExtend) == 0 || fs.CountOp(faultstore.OpComplete) != 1 || fs.CountOp(faultstore.OpClaim) != 1 {
		t.Fatalf("renewed run: %d extends, %d completions, %d claims", fs.CountOp(faultstore.OpExtend), fs.CountOp(faultstore.OpComplete), fs.CountOp(faultstore.OpClaim))
	}
}

// TestOnNilPasses: a hook set to nil lets the next call pass.
func TestOnNilPasses(t *testing.T) {
	fs := faultstore.New(memstore.New())
	fs.On(faultstore.Get, faultstore.Fail(errReset))
	if _, err := fs.Get(context.Background(), "id"); err != errReset {
		t.Fatalf("Get = %v, want the fault", err)
	}
	fs.On(faultstore.Get, nil)
	if _, err := fs.Get(context.Background(), "id"); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("Get = %v, want the store's ErrNotFound", err)
	}
}

// TestDelay: a delayed call waits, then passes; one whose ctx ends first
// returns at once with ctx's error, as a store failure, and changes
// nothing.
func TestDelay(t *testing.T) {
	fs := faultstore.New(memstore.New())
	fs.On(faultstore.Create, faultstore.Always(faultstore.Fault{Delay: 20 * time.Millisecond}))
	now := time.Now()
	start := time.Now()
	if met, err := fs.Create(context.Background(), record(now)); err != nil || met != nil {
		t.Fatalf("delayed Create = %+v, %v; want stored", met, err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("the delayed create returned after %s", d)
	}

	fs = faultstore.New(memstore.New())
	fs.On(faultstore.Create, faultstore.Always(faultstore.Fault{Delay: time.Hour}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := fs.Create(ctx, record(now))
	if !errors.Is(err, idemkit.ErrStoreUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Create on a done ctx = %v, want ErrStoreUnavailable and context.Canceled", err)
	}
	if _, err := fs.Inner().Get(context.Background(), record(now).ID); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("a create that never reached the store is stored: %v", err)
	}
}

// TestThen: Then is called once the call is done, with its error: the
// wrapped store's, or the fault's.
func TestThen(t *testing.T) {
	fs := faultstore.New(memstore.New())
	var got []error
	fs.On(faultstore.Replace, func(_ context.Context, c faultstore.Call) faultstore.Fault {
		f := faultstore.Fault{Then: func(err error) { got = append(got, err) }}
		if c.N == 2 {
			f.Err = errReset
		}
		return f
	})
	now := time.Now()
	for range 2 {
		fs.Replace(context.Background(), record(now), record(now))
	}
	if len(got) != 2 || !errors.Is(got[0], idemkit.ErrNotFound) || got[1] != errReset {
		t.Fatalf("Then saw %v, want [ErrNotFound, the fault]", got)
	}
}

// TestHookRunsFirst: what a hook writes to the wrapped store lands before
// the call it was called for.
func TestHookRunsFirst(t *testing.T) {
	fs := faultstore.New(memstore.New())
	now := time.Now()
	rec := record(now)
	other := record(now)
	other.Owner, other.Version = "o2", "v2"
	fs.On(faultstore.Create, func(ctx context.Context, c faultstore.Call) faultstore.Fault {
		if _, err := fs.Inner().Create(ctx, other); err != nil {
			t.Error(err)
		}
		return faultstore.Fault{}
	})
	met, err := fs.Create(context.Background(), rec)
	if err != nil || met == nil || met.Owner != "o2" {
		t.Fatalf("Create = %+v, %v; want the hook's record met", met, err)
	}
}

// notStale is an OperatorStore that is no idemkit.StaleLister.
type notStale struct{ idemkit.OperatorStore }

// TestListStaleUnsupported: over a store that lists no stale leases, the
// Store says so as the contract asks.
func TestListStaleUnsupported(t *testing.T) {
	fs := faultstore.New(notStale{memstore.New()})
	if fs.ListsStale() {
		t.Fatal("ListsStale over a store that is no StaleLister")
	}
	if recs, next, err := fs.ListStale(context.Background(), "", "", 0, time.Now()); !errors.Is(err, errors.ErrUnsupported) || recs != nil || next != "" {
		t.Fatalf("ListStale = %v, %q, %v; want errors.ErrUnsupported", recs, next, err)
	}
	if !faultstore.New(memstore.New()).ListsStale() {
		t.Fatal("ListsStale over a memstore is false")
	}
}

// TestEveryMethodHooked: a hook set on each of Methods fails that method's
// calls, and only them.
func TestEveryMethodHooked(t *testing.T) {
	now := time.Now()
	ctx := context.Background()
	calls := map[faultstore.Method]func(*faultstore.Store) error{
		faultstore.Get: func(s *faultstore.Store) error {
			_, err := s.Get(ctx, "id")
			return err
		},
		faultstore.Create: func(s *faultstore.Store) error {
			_, err := s.Create(ctx, record(now))
			return err
		},
		faultstore.Replace: func(s *faultstore.Store) error {
			_, err := s.Replace(ctx, record(now), record(now))
			return err
		},
		faultstore.ListIndeterminate: func(s *faultstore.Store) error {
			_, _, err := s.ListIndeterminate(ctx, "", "", 0, now)
			return err
		},
		faultstore.ListStale: func(s *faultstore.Store) error {
			_, _, err := s.ListStale(ctx, "", "", 0, now)
			return err
		},
	}
	if len(calls) != len(faultstore.Methods()) {
		t.Fatalf("%d methods tested, Methods has %d", len(calls), len(faultstore.Methods()))
	}
	for _, m := range faultstore.Methods() {
		t.Run(string(m), func(t *testing.T) {
			fs := faultstore.New(memstore.New())
			fs.On(m, faultstore.Fail(errReset))
			for other, call := range calls {
				err := call(fs)
				if hooked := err == errReset; hooked != (other == m) {
					t.Errorf("%s with a hook on %s: %v", other, m, err)
				}
				if n := fs.Count(other); n != 1 {
					t.Errorf("%s counted %d calls, want 1", other, n)
				}
			}
		})
	}
}
