// Package storetest is the conformance suite for idemkit stores. Every
// store runs it in one line:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) idemkit.OperatorStore { return memstore.New() })
//	}
//
// newStore is called once per subtest and must return an empty store. The
// suite checks the contract written on idemkit.Store and
// idemkit.OperatorStore (its time precision included), and on
// idemkit.StaleLister for a store that implements it: the listing when
// ListsStale is true, the refusal when it is false. [Options] name the
// capabilities a store has or lacks. A store that is only an
// idemkit.Store, such as a cache in front of another, runs the suite with
// the operator methods of the store it wraps.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
)

// Options tunes the suite for slow servers. The zero value runs the full
// suite.
type Options struct {
	// DistinctKeys is how many distinct keys the bulk test claims.
	// Zero: 10,000.
	DistinctKeys int
	// Racers is how many goroutines race for one key. Zero: 200.
	Racers int

	// The store's capabilities.

	// SnapshotLimit is the size in bytes of an incompressible body the store
	// cannot keep: Complete must store such a snapshot Omitted, without its
	// body, and succeed. Zero: the store keeps bodies of any size, and the
	// check is skipped.
	SnapshotLimit int
	// NonAtomic says the store's conditional writes are not atomic under
	// concurrency (an emulator that checks and writes in two steps): the
	// checks that race writers on one record are skipped, since they prove
	// nothing there. Such a store falls short of the idemkit.OperatorStore contract.
	NonAtomic bool
}

// Run runs the conformance suite against the stores newStore returns.
func Run(t *testing.T, newStore func(t *testing.T) idemkit.OperatorStore) {
	RunWith(t, newStore, Options{})
}

// RunWith is Run with options.
func RunWith(t *testing.T, newStore func(t *testing.T) idemkit.OperatorStore, opts Options) {
	if opts.DistinctKeys <= 0 {
		opts.DistinctKeys = 10000
	}
	if opts.Racers <= 0 {
		opts.Racers = 200
	}
	tests := []struct {
		name string
		fn   func(*testing.T, idemkit.OperatorStore)
	}{
		{"FirstClaim", testFirstClaim},
		{"ClaimLiveRecord", testClaimLive},
		{"ClaimAfterExpiry", testClaimAfterExpiry},
		{"ExpiredInFlightIsAbsent", testExpiredInFlight},
		{"ExpiryBoundary", testExpiryBoundary},
		{"LeaseBoundary", testLeaseBoundary},
		{"StaleLeaseTakeover", testStaleLeaseTakeover},
		{"FencingRefusesStaleToken", testFencing},
		{"RetriedClaimIsOurs", testRetriedClaim},
		{"RetriedWrites", testRetriedWrites},
		{"CompleteAndRetriedComplete", testComplete},
		{"CompleteRefused", testCompleteRefused},
		{"Release", testRelease},
		{"ClaimReplacesNothing", testClaimReplacesNothing},
		{"ReclaimTheRecordRead", testReclaim},
		{"ReleaseLeavesTombstone", testReleaseTombstone},
		{"LateClaimAfterFailed", testLateClaimAfterFailed},
		{"MarkIndeterminate", testMarkIndeterminate},
		{"ResolveCompleted", testResolveCompleted},
		{"ResolveFailed", testResolveFailed},
		{"ListIndeterminate", testListIndeterminate},
		{"ListStale", testListStale},
		{"Extend", testExtend},
		{"MarkUnknown", testMarkUnknown},
		{"LateCompletion", testLateCompletion},
		{"LateCompletionRacesResolve", testLateCompletionRacesResolve},
		{"SnapshotRoundTrip", testSnapshotRoundTrip},
		{"RecordRoundTrip", testRecordRoundTrip},
		{"CanceledContext", testCanceled},
		{"CanceledContextEveryMethod", testCanceledEveryMethod},
		{"NoAliasing", testNoAliasing},
		{"ResolvedAtDefaultsToNow", testResolvedAtDefault},
		{"BadArguments", testBadArguments},
		{"SnapshotLimit", func(t *testing.T, s idemkit.OperatorStore) { testSnapshotLimit(t, s, opts.SnapshotLimit) }},
		{"LongScope", testLongScope},
		{"RaceOneKey", func(t *testing.T, s idemkit.OperatorStore) { testRace(t, s, opts.Racers) }},
		{"RaceTakeover", func(t *testing.T, s idemkit.OperatorStore) { testRaceOver(t, s, opts.Racers, staleRecord) }},
		{"RaceResolvedFailed", func(t *testing.T, s idemkit.OperatorStore) { testRaceOver(t, s, opts.Racers, failedRecord) }},
		{"DistinctKeys", func(t *testing.T, s idemkit.OperatorStore) { testDistinct(t, s, opts.DistinctKeys) }},
		{"HistoryRefusedClaimNeverHoldsTheKey", testRefusedClaimNeverHoldsTheKey},
		{"HistoryDecisionOnTheRunChecked", testDecisionOnTheRunChecked},
		{"HistoryLateCompletionAfterPending", testLateCompletionAfterPending},
	}
	races := map[string]bool{"LateCompletionRacesResolve": true, "RaceOneKey": true, "RaceTakeover": true, "RaceResolvedFailed": true}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if opts.NonAtomic && races[tc.name] {
				t.Skip("storetest: the store's conditional writes are not atomic under concurrency (Options.NonAtomic)")
			}
			tc.fn(t, newStore(t))
		})
	}
}

var seq atomic.Int64

// base is a whole-second time near the real clock, so that servers with a
// real TTL sweeper do not delete the records mid-test.
func base() time.Time { return time.Now().Truncate(time.Second).Add(time.Second) }

// newRecord returns a fresh in_flight record for a unique scope.
func newRecord(now time.Time, owner string) *idemkit.Record {
	n := seq.Add(1)
	sc := idemkit.Scope{Tenant: fmt.Sprintf("tenant|%d", n), Operation: "POST /orders", Key: fmt.Sprintf("key:%d", n)}
	return &idemkit.Record{
		ID:          sc.ID(false),
		Scope:       sc,
		State:       idemkit.StateInFlight,
		Fingerprint: "v1:sha256:" + fmt.Sprint(n),
		Owner:       owner,
		LeaseUntil:  now.Add(30 * time.Second),
		ReplayUntil: now.Add(24 * time.Hour),
		ExpiresAt:   now.Add(48 * time.Hour),
		CreatedAt:   now,
	}
}

// withOwner returns a claim by owner of r's scope, with r's fingerprint
// and times: in_flight, without an answer or a resolution.
func withOwner(r *idemkit.Record, owner string) *idemkit.Record {
	c := r.Clone()
	c.Owner, c.State = owner, idemkit.StateInFlight
	c.Snapshot, c.Resolution, c.CompletedAt = nil, nil, time.Time{}
	return c
}

func completed(r *idemkit.Record, at time.Time, snap *idemkit.Snapshot) *idemkit.Record {
	c := r.Clone()
	c.State = idemkit.StateCompleted
	c.CompletedAt = at
	c.Snapshot = snap
	return c
}

func sampleSnapshot() *idemkit.Snapshot {
	return &idemkit.Snapshot{
		Status: 201,
		Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/orders/1"}},
		Body:   []byte(`{"id":"1"}`),
	}
}

// claim claims r at now as the engine does: a Claim, then, when the record
// that refused it lets r run (see replaceable), a Reclaim in its place.
// It returns what the last call returned.
func claim(t *testing.T, s idemkit.OperatorStore, r *idemkit.Record, now time.Time, takeover bool) idemkit.ClaimResult {
	t.Helper()
	res, err := claimOrReclaim(s, r, now, takeover)
	if err != nil {
		t.Fatalf("claim %s, owner %s: %v", r.ID, r.Owner, err)
	}
	return res
}

// claimOrReclaim is claim, for a goroutine: it returns the error.
func claimOrReclaim(s idemkit.OperatorStore, r *idemkit.Record, now time.Time, takeover bool) (idemkit.ClaimResult, error) {
	res, err := s.Claim(context.Background(), r, now)
	if err != nil || res.Won || res.Existing == nil || !replaceable(res.Existing, r, now, takeover) {
		return res, err
	}
	return s.Reclaim(context.Background(), r, res.Existing, now)
}

// replaceable reports whether a claim of r may replace ex, the record that
// refused it, as the engine decides: a released key's tombstone or an
// expired record, by any request; a failed record, or with takeover an
// in_flight one whose lease has ended, by a request of its fingerprint
// and operation.
func replaceable(ex, r *idemkit.Record, now time.Time, takeover bool) bool {
	bound := ex.Fingerprint == r.Fingerprint && ex.Scope.Operation == r.Scope.Operation
	switch {
	case ex.State == idemkit.StateReleased || !ex.Live(now):
		return true
	case ex.State == idemkit.StateFailed:
		return bound
	case ex.State == idemkit.StateInFlight && ex.Owner != r.Owner && takeover:
		return bound && ex.LeaseExpired(now)
	}
	return false
}

func mustGet(t *testing.T, s idemkit.OperatorStore, id string, now time.Time) *idemkit.Record {
	t.Helper()
	r, err := s.Get(context.Background(), id, now)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return r
}

// staleLister returns s as an idemkit.StaleLister when it lists stale
// leases.
func staleLister(s idemkit.OperatorStore) (idemkit.StaleLister, bool) {
	sl, ok := s.(idemkit.StaleLister)
	return sl, ok && sl.ListsStale()
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

func testFirstClaim(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	r := newRecord(now, "a")
	res := claim(t, s, r, now, false)
	if !res.Won {
		t.Fatalf("first claim lost to %+v", res.Existing)
	}
	if res.Existing != nil {
		t.Fatalf("first claim replaced %+v", res.Existing)
	}
	sameRecord(t, mustGet(t, s, r.ID, now), r)
	if _, err := s.Get(context.Background(), "o1|0:0:0:", now); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("Get of an absent id: %v, want ErrNotFound", err)
	}
}

func testClaimLive(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	r := newRecord(now, "a")
	claim(t, s, r, now, false)
	for _, takeover := range []bool{false, true} {
		res := claim(t, s, withOwner(r, "b"), now.Add(time.Second), takeover)
		if res.Won {
			t.Fatalf("takeover=%v: a claim won over a live lease", takeover)
		}
		if res.Existing == nil {
			t.Fatal("a lost claim returned no existing record")
		}
		sameRecord(t, res.Existing, r)
	}
	if got := mustGet(t, s, r.ID, now); got.Owner != "a" {
		t.Fatalf("owner after a lost claim = %q, want a", got.Owner)
	}
}

func testClaimAfterExpiry(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	r := newRecord(now, "a")
	r.LeaseUntil = now.Add(5 * time.Second)
	r.ExpiresAt = now.Add(10 * time.Second)
	claim(t, s, r, now, false)
	c := completed(r, now.Add(time.Second), sampleSnapshot())
	if err := s.Complete(context.Background(), c, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	later := now.Add(11 * time.Second)
	if _, err := s.Get(context.Background(), r.ID, later); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("Get of an expired record: %v, want ErrNotFound", err)
	}
	// Completing, releasing or marking an expired record is refused.
	wantErr(t, "Complete of an expired record", s.Complete(context.Background(), c, later), idemkit.ErrNotOwner)
	n := newRecord(later, "b")
	n.ID, n.Scope = r.ID, r.Scope
	res := claim(t, s, n, later, false)
	if !res.Won {
		t.Fatalf("claim over an expired record lost to %+v", res.Existing)
	}
	got := mustGet(t, s, r.ID, later)
	if got.Owner != "b" || got.State != idemkit.StateInFlight || got.Snapshot != nil {
		t.Fatalf("after re-claim: owner %q state %q snapshot %v", got.Owner, got.State, got.Snapshot)
	}
}

// testExpiredInFlight: an in_flight record past its ExpiresAt is absent to
// its own owner too, even under a lease that runs past it: renewing,
// marking or completing it is refused and does not bring it back, and its
// release is the no-op of an absent record.
func testExpiredInFlight(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	r := newRecord(now, "a")
	r.LeaseUntil = now.Add(5 * time.Second)
	r.ExpiresAt = now.Add(10 * time.Second)
	claim(t, s, r, now, false)
	// A lease that outlives the record: the store must not honour it.
	if err := s.Extend(ctx, r.ID, "a", now.Add(time.Minute), now.Add(time.Second)); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	later := now.Add(11 * time.Second) // expired, inside the renewed lease
	wantErr(t, "Extend of an expired record", s.Extend(ctx, r.ID, "a", later.Add(time.Minute), later), idemkit.ErrNotOwner)
	err := s.MarkUnknown(ctx, r.ID, "a", later)
	wantErr(t, "MarkUnknown of an expired record", err, idemkit.ErrNotOwner)
	err = s.MarkIndeterminate(ctx, r.ID, "a", later.Add(time.Minute))
	wantErr(t, "MarkIndeterminate of an expired record", err, idemkit.ErrNotOwner)
	wantErr(t, "Complete of an expired record", s.Complete(ctx, completed(r, later, sampleSnapshot()), later), idemkit.ErrNotOwner)
	if _, err := s.Get(ctx, r.ID, later); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("Get of an expired in_flight record after refused writes: %v, want ErrNotFound", err)
	}
	if err := s.Release(ctx, r.ID, "a", later); err != nil {
		t.Fatalf("Release of an expired record: %v, want nil (absent)", err)
	}
	if res := claim(t, s, withOwner(r, "b"), later, false); !res.Won {
		t.Fatalf("claim over an expired in_flight record lost to %+v", res.Existing)
	}
}

// testExpiryBoundary: a record counts as absent from the instant of its
// ExpiresAt (live means now before ExpiresAt), not a moment later, in
// every state and to every method; a millisecond before, it is there.
// The times are whole seconds, exact at any precision a store may keep.
func testExpiryBoundary(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	exp := now.Add(5 * time.Second)
	before := exp.Add(-time.Millisecond)

	done := newRecord(now, "a")
	done.LeaseUntil, done.ExpiresAt = now.Add(2*time.Second), exp
	claim(t, s, done, now, false)
	c := completed(done, now, sampleSnapshot())
	if err := s.Complete(ctx, c, now); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	m := newRecord(now, "a")
	m.LeaseUntil, m.ExpiresAt = now.Add(time.Second), exp
	claim(t, s, m, now, false)
	if err := s.MarkIndeterminate(ctx, m.ID, "a", now.Add(2*time.Second)); err != nil {
		t.Fatalf("MarkIndeterminate: %v", err)
	}

	sameRecord(t, mustGet(t, s, done.ID, before), c)
	if res := claim(t, s, withOwner(done, "b"), before, true); res.Won {
		t.Fatal("a claim won over a completed record a millisecond before it expires")
	}
	if !listed(t, s, m.Scope.Tenant, before)[m.ID] {
		t.Fatal("an indeterminate record is not listed a millisecond before it expires")
	}

	if _, err := s.Get(ctx, done.ID, exp); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("Get at ExpiresAt: %v, want ErrNotFound", err)
	}
	wantErr(t, "retried Complete at ExpiresAt", s.Complete(ctx, c, exp), idemkit.ErrNotOwner)
	if listed(t, s, m.Scope.Tenant, exp)[m.ID] {
		t.Fatal("an indeterminate record is listed at its ExpiresAt")
	}
	_, err := s.Resolve(ctx, m.ID, m.Owner, idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops"}, exp)
	wantErr(t, "Resolve at ExpiresAt", err, idemkit.ErrNotIndeterminate)
	// Releasing an absent record is the no-op of a retried release, by
	// any owner, whatever state the expired record was left in.
	for _, r := range []*idemkit.Record{done, m} {
		if err := s.Release(ctx, r.ID, "x", exp); err != nil {
			t.Fatalf("Release of a %s record at its ExpiresAt: %v, want nil (absent)", r.State, err)
		}
	}
	for _, r := range []*idemkit.Record{done, m} {
		n := withOwner(r, "b")
		n.State, n.Snapshot, n.CompletedAt = idemkit.StateInFlight, nil, time.Time{}
		n.LeaseUntil, n.ExpiresAt = exp.Add(30*time.Second), exp.Add(time.Hour)
		if res := claim(t, s, n, exp, false); !res.Won {
			t.Fatalf("a claim at the ExpiresAt of a %s record lost to %+v", r.State, res.Existing)
		}
		sameRecord(t, mustGet(t, s, r.ID, exp), n)
	}
}

// testLeaseBoundary: a lease has ended at its LeaseUntil exactly (ended
// means now not before LeaseUntil): then a takeover wins, the record can
// be marked indeterminate and it is listed stale; a millisecond before,
// none of these. The times are whole seconds.
func testLeaseBoundary(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	lease := now.Add(5 * time.Second)
	before := lease.Add(-time.Millisecond)
	taken, marked := newRecord(now, "a"), newRecord(now, "a")
	for _, r := range []*idemkit.Record{taken, marked} {
		r.LeaseUntil = lease
		claim(t, s, r, now, false)
	}
	b := withOwner(taken, "b")
	b.LeaseUntil = lease.Add(30 * time.Second)
	sl, lists := staleLister(s)
	stale := func(at time.Time) bool {
		t.Helper()
		recs, _, err := sl.ListStale(ctx, marked.Scope.Tenant, "", 10, at)
		if err != nil {
			t.Fatalf("ListStale: %v", err)
		}
		return len(recs) == 1 && recs[0].ID == marked.ID
	}

	if res := claim(t, s, b, before, true); res.Won {
		t.Fatal("a takeover won a millisecond before the lease ends")
	}
	err := s.MarkIndeterminate(ctx, marked.ID, "a", before)
	wantErr(t, "MarkIndeterminate a millisecond before the lease ends", err, idemkit.ErrNotOwner)
	if lists && stale(before) {
		t.Fatal("listed stale a millisecond before its lease ends")
	}

	if lists && !stale(lease) {
		t.Fatal("not listed stale at its LeaseUntil")
	}
	if res := claim(t, s, b, lease, true); !res.Won {
		t.Fatalf("a takeover at LeaseUntil lost to %+v", res.Existing)
	}
	if got := mustGet(t, s, taken.ID, lease); got.Owner != "b" {
		t.Fatalf("after a takeover at LeaseUntil the owner is %q, want b", got.Owner)
	}
	if err := s.MarkIndeterminate(ctx, marked.ID, "a", lease); err != nil {
		t.Fatalf("MarkIndeterminate at LeaseUntil: %v", err)
	}
}

func testStaleLeaseTakeover(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	r := newRecord(now, "a")
	r.LeaseUntil = now.Add(5 * time.Second)
	claim(t, s, r, now, false)
	after := now.Add(6 * time.Second)
	if res := claim(t, s, withOwner(r, "b"), after, false); res.Won {
		t.Fatal("a claim without Takeover won over an expired lease")
	} else if res.Existing == nil || res.Existing.Owner != "a" {
		t.Fatalf("lost claim reported %+v, want owner a", res.Existing)
	}
	b := withOwner(r, "b")
	b.LeaseUntil = after.Add(30 * time.Second)
	res := claim(t, s, b, after, true)
	if !res.Won {
		t.Fatalf("takeover of an expired lease lost to %+v", res.Existing)
	}
	if res.Existing != nil && res.Existing.Owner != "a" {
		t.Fatalf("takeover replaced owner %q, want a", res.Existing.Owner)
	}
	if got := mustGet(t, s, r.ID, after); got.Owner != "b" || !got.LeaseUntil.Equal(b.LeaseUntil) {
		t.Fatalf("after takeover: owner %q lease %v", got.Owner, got.LeaseUntil)
	}
	// The new lease is live: a third claimer loses even with Takeover.
	if res := claim(t, s, withOwner(r, "c"), after.Add(time.Second), true); res.Won {
		t.Fatal("takeover won over a live lease")
	}
}

func testFencing(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	r := newRecord(now, "a")
	r.LeaseUntil = now.Add(5 * time.Second)
	claim(t, s, r, now, false)
	after := now.Add(6 * time.Second)
	b := withOwner(r, "b")
	b.LeaseUntil = after.Add(30 * time.Second)
	if !claim(t, s, b, after, true).Won {
		t.Fatal("takeover lost")
	}
	ctx := context.Background()
	wantErr(t, "Complete by the old owner", s.Complete(ctx, completed(r, after, sampleSnapshot()), after), idemkit.ErrNotOwner)
	wantErr(t, "Release by the old owner", s.Release(ctx, r.ID, "a", after), idemkit.ErrNotOwner)
	err := s.MarkIndeterminate(ctx, r.ID, "a", after.Add(time.Minute))
	wantErr(t, "MarkIndeterminate of the old owner", err, idemkit.ErrNotOwner)
	got := mustGet(t, s, r.ID, after)
	if got.Owner != "b" || got.State != idemkit.StateInFlight || got.Snapshot != nil {
		t.Fatalf("a stale token changed the record: owner %q state %q", got.Owner, got.State)
	}
	// The new owner completes.
	if err := s.Complete(ctx, completed(b, after, sampleSnapshot()), after); err != nil {
		t.Fatalf("Complete by the new owner: %v", err)
	}
	// And the old owner still cannot overwrite the new result.
	wantErr(t, "Complete by the old owner after the new one", s.Complete(ctx, completed(r, after, &idemkit.Snapshot{Status: 500}), after), idemkit.ErrNotOwner)
	if got := mustGet(t, s, r.ID, after); got.Snapshot == nil || got.Snapshot.Status != 201 {
		t.Fatalf("result after a stale completion: %+v", got.Snapshot)
	}
}

func testRetriedClaim(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	r := newRecord(now, "a")
	claim(t, s, r, now, false)
	res := claim(t, s, r, now.Add(time.Second), false)
	if !res.Won {
		t.Fatalf("a retried claim with our own token lost to %+v", res.Existing)
	}
	// A late copy of the claim, after the lease was extended, is refused:
	// the lease stays extended.
	ctx := context.Background()
	if err := s.Extend(ctx, r.ID, r.Owner, r.LeaseUntil.Add(time.Minute), now.Add(2*time.Second)); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	res = claim(t, s, r, now.Add(3*time.Second), false)
	if res.Won || res.Existing == nil || res.Existing.Owner != r.Owner || !timeEq(res.Existing.LeaseUntil, r.LeaseUntil.Add(time.Minute)) {
		t.Fatalf("a late copy of the claim after an Extend: %+v; want lost to our own record, lease extended", res)
	}
	late := r.LeaseUntil.Add(time.Second) // after the first lease, inside the extended one
	if res := claim(t, s, r, late, true); res.Won {
		t.Fatal("a late copy of the claim with Takeover won after an Extend")
	}
	if got := mustGet(t, s, r.ID, late); !timeEq(got.LeaseUntil, r.LeaseUntil.Add(time.Minute)) || got.State != idemkit.StateInFlight {
		t.Fatalf("after a late copy of the claim: lease %v state %q; want the extended lease", got.LeaseUntil, got.State)
	}
	// Once completed, the same token cannot claim again.
	if err := s.Complete(ctx, completed(r, now, sampleSnapshot()), now.Add(4*time.Second)); err != nil {
		t.Fatal(err)
	}
	if res := claim(t, s, r, now.Add(5*time.Second), false); res.Won {
		t.Fatal("a claim with the owner token won over the completed record")
	}
}

// testRetriedWrites: every write made again a second later, as a caller
// does after its first answer was lost, gets the answer the contract
// gives a retry (the lost answers of idemkit.Store) and leaves the record
// as the first call left it, which tells the caller its own change: Claim
// wins, Complete, Release and Extend return nil; MarkUnknown and
// MarkIndeterminate return ErrNotOwner, the record indeterminate with the
// same owner, its lease as the mark set it, no resolution; Resolve
// returns ErrNotIndeterminate, the record holding the first resolution.
func testRetriedWrites(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	again := now.Add(time.Second)
	claimed := func() *idemkit.Record {
		r := newRecord(now, "a")
		r.LeaseUntil = now.Add(time.Minute)
		claim(t, s, r, now, false)
		return r
	}
	for _, tc := range []struct {
		name string
		// first makes the write and returns the record it leaves (nil:
		// none) and the retry, made at again.
		first func() (*idemkit.Record, func() error)
		want  error
	}{
		{"Claim", func() (*idemkit.Record, func() error) {
			r := claimed()
			return r, func() error {
				if res := claim(t, s, r, again, false); !res.Won {
					return fmt.Errorf("lost to %+v", res.Existing)
				}
				return nil
			}
		}, nil},
		{"Complete", func() (*idemkit.Record, func() error) {
			c := completed(claimed(), now, sampleSnapshot())
			if err := s.Complete(ctx, c, now); err != nil {
				t.Fatal(err)
			}
			return c, func() error { return s.Complete(ctx, c, again) }
		}, nil},
		{"Release", func() (*idemkit.Record, func() error) {
			r := claimed()
			if err := s.Release(ctx, r.ID, "a", now); err != nil {
				t.Fatal(err)
			}
			return nil, func() error {
				if err := s.Release(ctx, r.ID, "a", again); err != nil {
					return err
				}
				if _, err := s.Get(ctx, r.ID, again); !errors.Is(err, idemkit.ErrNotFound) {
					return fmt.Errorf("a read after the retried release: %v, want ErrNotFound", err)
				}
				return nil
			}
		}, nil},
		{"Extend", func() (*idemkit.Record, func() error) {
			r := claimed()
			r.LeaseUntil = now.Add(time.Hour)
			if err := s.Extend(ctx, r.ID, "a", r.LeaseUntil, now); err != nil {
				t.Fatal(err)
			}
			return r, func() error { return s.Extend(ctx, r.ID, "a", r.LeaseUntil, again) }
		}, nil},
		{"MarkUnknown", func() (*idemkit.Record, func() error) {
			r := claimed()
			if err := s.MarkUnknown(ctx, r.ID, "a", now); err != nil {
				t.Fatal(err)
			}
			r.State, r.LeaseUntil, r.Cause = idemkit.StateIndeterminate, now, idemkit.CauseOutcomeUnknown
			return r, func() error { return s.MarkUnknown(ctx, r.ID, "a", again) }
		}, idemkit.ErrNotOwner},
		{"MarkIndeterminate", func() (*idemkit.Record, func() error) {
			r := claimed()
			at := r.LeaseUntil.Add(time.Second)
			if err := s.MarkIndeterminate(ctx, r.ID, "a", at); err != nil {
				t.Fatal(err)
			}
			r.State, r.Cause = idemkit.StateIndeterminate, idemkit.CauseLeaseExpired
			return r, func() error { return s.MarkIndeterminate(ctx, r.ID, "a", at.Add(time.Second)) }
		}, idemkit.ErrNotOwner},
		{"Resolve", func() (*idemkit.Record, func() error) {
			m := markedRecord(t, s, now)
			res := idemkit.Resolution{As: idemkit.StateCompleted, Snapshot: sampleSnapshot(), Operator: "ops", Reason: "checked", ResolvedAt: now.Add(time.Minute)}
			got, err := s.Resolve(ctx, m.ID, m.Owner, res, res.ResolvedAt)
			if err != nil {
				t.Fatal(err)
			}
			return got, func() error {
				_, err := s.Resolve(ctx, m.ID, m.Owner, res, res.ResolvedAt.Add(time.Second))
				return err
			}
		}, idemkit.ErrNotIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, retry := tc.first()
			err := retry()
			if tc.want == nil && err != nil {
				t.Fatalf("retried %s: %v, want nil", tc.name, err)
			}
			if tc.want != nil {
				wantErr(t, "retried "+tc.name, err, tc.want)
			}
			if want == nil {
				return
			}
			got := mustGet(t, s, want.ID, again)
			sameRecord(t, got, want)
			if (got.Resolution == nil) != (want.Resolution == nil) {
				t.Fatalf("resolution %+v, want %+v", got.Resolution, want.Resolution)
			}
			if r := want.Resolution; r != nil && (got.Resolution.Operator != r.Operator || got.Resolution.Reason != r.Reason ||
				!timeEq(got.Resolution.ResolvedAt, r.ResolvedAt)) {
				t.Fatalf("resolution %+v, want the first one, %+v", got.Resolution, r)
			}
		})
	}
}

func testComplete(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	r := newRecord(now, "a")
	claim(t, s, r, now, false)
	c := completed(r, now.Add(time.Second), sampleSnapshot())
	ctx := context.Background()
	if err := s.Complete(ctx, c, now.Add(time.Second)); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if err := s.Complete(ctx, c, now.Add(2*time.Second)); err != nil {
		t.Fatalf("retried Complete: %v", err)
	}
	got := mustGet(t, s, r.ID, now.Add(2*time.Second))
	sameRecord(t, got, c)
	res := claim(t, s, withOwner(r, "b"), now.Add(3*time.Second), true)
	if res.Won {
		t.Fatal("a claim won over a completed record")
	}
	sameRecord(t, res.Existing, c)
}

func testCompleteRefused(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	ctx := context.Background()
	r := newRecord(now, "a")
	wantErr(t, "Complete of an absent record", s.Complete(ctx, completed(r, now, sampleSnapshot()), now), idemkit.ErrNotOwner)
	if _, err := s.Get(ctx, r.ID, now); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("Complete of an absent record created it: %v", err)
	}
	claim(t, s, r, now, false)
	wantErr(t, "Complete with another token", s.Complete(ctx, completed(withOwner(r, "x"), now, sampleSnapshot()), now), idemkit.ErrNotOwner)
}

func testRelease(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	ctx := context.Background()
	r := newRecord(now, "a")
	claim(t, s, r, now, false)
	wantErr(t, "Release with another token", s.Release(ctx, r.ID, "x", now), idemkit.ErrNotOwner)
	if err := s.Release(ctx, r.ID, "a", now); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, err := s.Get(ctx, r.ID, now); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("Get after Release: %v, want ErrNotFound", err)
	}
	if err := s.Release(ctx, r.ID, "a", now); err != nil {
		t.Fatalf("retried Release: %v", err)
	}
	if !claim(t, s, withOwner(r, "b"), now, false).Won {
		t.Fatal("claim after Release lost")
	}
	// A completed record cannot be released, even by its owner.
	b := withOwner(r, "b")
	if err := s.Complete(ctx, completed(b, now, sampleSnapshot()), now); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Release of a completed record", s.Release(ctx, r.ID, "b", now), idemkit.ErrNotOwner)
	if got := mustGet(t, s, r.ID, now); got.State != idemkit.StateCompleted {
		t.Fatalf("state after refused Release = %q", got.State)
	}
}

func testMarkIndeterminate(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	ctx := context.Background()
	r := newRecord(now, "a")
	r.LeaseUntil = now.Add(5 * time.Second)
	claim(t, s, r, now, false)
	err := s.MarkIndeterminate(ctx, r.ID, "a", now.Add(time.Second))
	wantErr(t, "MarkIndeterminate of a live lease", err, idemkit.ErrNotOwner)
	after := now.Add(6 * time.Second)
	err = s.MarkIndeterminate(ctx, r.ID, "x", after)
	wantErr(t, "MarkIndeterminate with another token", err, idemkit.ErrNotOwner)
	if err := s.MarkIndeterminate(ctx, r.ID, "a", after); err != nil {
		t.Fatalf("MarkIndeterminate: %v", err)
	}
	if got := mustGet(t, s, r.ID, after); got.State != idemkit.StateIndeterminate || got.Owner != "a" || got.Cause != idemkit.CauseLeaseExpired || !timeEq(got.LeaseUntil, r.LeaseUntil) {
		t.Fatalf("marked record: state %q owner %q cause %q lease %v, want indeterminate, a, %q, the lease kept (%v)", got.State, got.Owner, got.Cause, got.LeaseUntil, idemkit.CauseLeaseExpired, r.LeaseUntil)
	}
	for _, l := range listedRecords(t, s, r.Scope.Tenant, after) {
		if l.ID == r.ID && l.Cause != idemkit.CauseLeaseExpired {
			t.Fatalf("listed record's cause %q, want %q", l.Cause, idemkit.CauseLeaseExpired)
		}
	}
	err = s.MarkIndeterminate(ctx, r.ID, "a", after)
	wantErr(t, "second MarkIndeterminate", err, idemkit.ErrNotOwner)
	res := claim(t, s, withOwner(r, "b"), after, true)
	if res.Won {
		t.Fatal("a takeover claim won over an indeterminate record")
	}
	if res.Existing == nil || res.Existing.State != idemkit.StateIndeterminate {
		t.Fatalf("lost claim reported %+v, want the indeterminate record", res.Existing)
	}
	wantErr(t, "Release of an indeterminate record", s.Release(ctx, r.ID, "a", after), idemkit.ErrNotOwner)
	wantErr(t, "Complete of an indeterminate record with another token", s.Complete(ctx, completed(withOwner(r, "x"), after, sampleSnapshot()), after), idemkit.ErrNotOwner)
	if got := mustGet(t, s, r.ID, after); got.State != idemkit.StateIndeterminate {
		t.Fatalf("state = %q, want indeterminate", got.State)
	}
	// The owner's late completion heals the record (see LateCompletion).
	c := completed(r, after, sampleSnapshot())
	if err := s.Complete(ctx, c, after); err != nil {
		t.Fatalf("owner's late Complete of an indeterminate record: %v", err)
	}
	sameRecord(t, mustGet(t, s, r.ID, after), c)
}

// testLateCompletion: the owner's completion replaces an indeterminate
// record no operator resolved, and removes it from the listing; once an
// operator resolved it (either way) the late completion is refused.
func testLateCompletion(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	m := markedRecord(t, s, now)
	at := now.Add(time.Minute)
	c := completed(m, at, sampleSnapshot())
	c.State = idemkit.StateCompleted
	if err := s.Complete(ctx, c, at); err != nil {
		t.Fatalf("late Complete: %v", err)
	}
	sameRecord(t, mustGet(t, s, m.ID, at), c)
	if err := s.Complete(ctx, c, at); err != nil {
		t.Fatalf("retried late Complete: %v", err)
	}
	_, err := s.Resolve(ctx, m.ID, m.Owner, idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops"}, at)
	wantErr(t, "Resolve after a late completion", err, idemkit.ErrNotIndeterminate)
	if listed(t, s, m.Scope.Tenant, at)[m.ID] {
		t.Fatal("a healed record is still listed as indeterminate")
	}

	for _, as := range []idemkit.State{idemkit.StateCompleted, idemkit.StateFailed} {
		m := markedRecord(t, s, now)
		res := idemkit.Resolution{As: as, Operator: "ops", Reason: "checked"}
		if as == idemkit.StateCompleted {
			res.Snapshot = &idemkit.Snapshot{Status: 200, Body: []byte("operator")}
		}
		if _, err := s.Resolve(ctx, m.ID, m.Owner, res, at); err != nil {
			t.Fatalf("Resolve as %s: %v", as, err)
		}
		wantErr(t, "late Complete after Resolve as "+string(as), s.Complete(ctx, completed(m, at, sampleSnapshot()), at), idemkit.ErrNotOwner)
		got := mustGet(t, s, m.ID, at)
		if got.State != as || got.Resolution == nil {
			t.Fatalf("after a refused late completion: state %q resolution %+v", got.State, got.Resolution)
		}
		if got.Cause != m.Cause || m.Cause == "" {
			t.Fatalf("resolved record's cause %q, want the mark's %q kept", got.Cause, m.Cause)
		}
	}
}

// testLateCompletionRacesResolve: the owner's late completion and an
// operator's resolution race for one indeterminate record: exactly one
// wins and the record is what the winner wrote.
func testLateCompletionRacesResolve(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	at := now.Add(time.Minute)
	for i := 0; i < 20; i++ {
		m := markedRecord(t, s, now)
		c := completed(m, at, sampleSnapshot())
		res := idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops", Reason: "race"}
		if i%2 == 1 {
			res = idemkit.Resolution{As: idemkit.StateCompleted, Operator: "ops", Reason: "race", Snapshot: &idemkit.Snapshot{Status: 200, Body: []byte("operator")}}
		}
		var cerr, rerr error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); <-start; cerr = s.Complete(ctx, c, at) }()
		go func() { defer wg.Done(); <-start; _, rerr = s.Resolve(ctx, m.ID, m.Owner, res, at) }()
		close(start)
		wg.Wait()
		got := mustGet(t, s, m.ID, at)
		switch {
		case cerr == nil && rerr == nil, cerr != nil && rerr != nil:
			t.Fatalf("round %d: complete %v, resolve %v: want exactly one winner", i, cerr, rerr)
		case cerr == nil:
			wantErr(t, "losing Resolve", rerr, idemkit.ErrNotIndeterminate)
			sameRecord(t, got, c)
		default:
			wantErr(t, "losing late Complete", cerr, idemkit.ErrNotOwner)
			if got.State != res.As || got.Resolution == nil || got.Resolution.Reason != "race" {
				t.Fatalf("round %d: resolve won, record state %q resolution %+v", i, got.State, got.Resolution)
			}
		}
	}
}

// listed returns the IDs ListIndeterminate lists for tenant at now.
func listed(t *testing.T, s idemkit.OperatorStore, tenant string, now time.Time) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for page, n := "", 0; ; n++ {
		recs, next, err := s.ListIndeterminate(context.Background(), tenant, page, 100, now)
		if err != nil {
			t.Fatalf("ListIndeterminate: %v", err)
		}
		for _, r := range recs {
			ids[r.ID] = true
		}
		if next == "" || n > 100 {
			return ids
		}
		page = next
	}
}

// testExtend: only the owner extends a live in_flight lease; a renewed
// lease protects the key from a takeover and from being marked.
func testExtend(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	r := newRecord(now, "a")
	r.LeaseUntil = now.Add(2 * time.Second)
	wantErr(t, "Extend of an absent record", s.Extend(ctx, r.ID, "a", now.Add(time.Minute), now), idemkit.ErrNotOwner)
	claim(t, s, r, now, false)
	wantErr(t, "Extend with another token", s.Extend(ctx, r.ID, "x", now.Add(time.Minute), now), idemkit.ErrNotOwner)
	if err := s.Extend(ctx, r.ID, "a", now.Add(time.Minute), now.Add(time.Second)); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if err := s.Extend(ctx, r.ID, "a", now.Add(time.Minute), now.Add(time.Second)); err != nil {
		t.Fatalf("retried Extend: %v", err)
	}
	// A late copy of an earlier renewal, landing after this one, does not
	// move the lease back.
	if err := s.Extend(ctx, r.ID, "a", now.Add(30*time.Second), now.Add(time.Second)); err != nil {
		t.Fatalf("Extend to an earlier end: %v, want nil (the lease is ours and ends later)", err)
	}
	got := mustGet(t, s, r.ID, now.Add(time.Second))
	if !timeEq(got.LeaseUntil, now.Add(time.Minute)) || got.State != idemkit.StateInFlight || got.Owner != "a" {
		t.Fatalf("after Extend: lease %v state %q owner %q", got.LeaseUntil, got.State, got.Owner)
	}
	later := now.Add(10 * time.Second) // after the first lease, inside the renewed one
	if res := claim(t, s, withOwner(r, "b"), later, true); res.Won {
		t.Fatal("a takeover won over a renewed lease")
	}
	err := s.MarkIndeterminate(ctx, r.ID, "a", later)
	wantErr(t, "MarkIndeterminate of a renewed lease", err, idemkit.ErrNotOwner)
	// An expired lease not yet taken over may still be renewed by its owner.
	if err := s.Extend(ctx, r.ID, "a", now.Add(2*time.Minute), now.Add(90*time.Second)); err != nil {
		t.Fatalf("Extend after the lease ended: %v", err)
	}
	if err := s.Complete(ctx, completed(r, later, sampleSnapshot()), later); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Extend of a completed record", s.Extend(ctx, r.ID, "a", now.Add(time.Hour), later), idemkit.ErrNotOwner)
	m := markedRecord(t, s, now)
	wantErr(t, "Extend of an indeterminate record", s.Extend(ctx, m.ID, "a", now.Add(time.Hour), now.Add(time.Minute)), idemkit.ErrNotOwner)
}

// testMarkUnknown: the owner turns its live in_flight record indeterminate
// whatever its lease; nobody else can, and it happens once.
func testMarkUnknown(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	r := newRecord(now, "a")
	claim(t, s, r, now, false)
	err := s.MarkUnknown(ctx, r.ID, "x", now)
	wantErr(t, "MarkUnknown with another token", err, idemkit.ErrNotOwner)
	at := now.Add(time.Second)
	if err := s.MarkUnknown(ctx, r.ID, "a", at); err != nil {
		t.Fatalf("MarkUnknown of a live lease: %v", err)
	}
	if got := mustGet(t, s, r.ID, at); got.State != idemkit.StateIndeterminate || got.Owner != "a" || got.LeaseUntil.After(at.Add(time.Millisecond)) || got.Cause != idemkit.CauseOutcomeUnknown {
		t.Fatalf("marked record: state %q owner %q lease %v cause %q (marked at %v, want cause %q)", got.State, got.Owner, got.LeaseUntil, got.Cause, at, idemkit.CauseOutcomeUnknown)
	}
	err = s.MarkUnknown(ctx, r.ID, "a", at)
	wantErr(t, "second MarkUnknown", err, idemkit.ErrNotOwner)
	if res := claim(t, s, withOwner(r, "b"), at, true); res.Won {
		t.Fatal("a takeover won over a record marked unknown")
	}
	if !listed(t, s, r.Scope.Tenant, at.Add(time.Second))[r.ID] {
		t.Fatal("a record marked unknown is not listed as indeterminate")
	}
	err = s.MarkUnknown(ctx, "o1|1:x1:y1:z", "a", at)
	wantErr(t, "MarkUnknown of an absent record", err, idemkit.ErrNotOwner)
}

// testListStale: in_flight records whose lease ended are listed, oldest
// lease first, paged; live leases, completed, released, indeterminate and
// expired records are not.
func testListStale(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	ctx := context.Background()
	sl, ok := s.(idemkit.StaleLister)
	if !ok {
		t.Skip("store does not implement idemkit.StaleLister")
	}
	if !sl.ListsStale() {
		// It says so, and its listing refuses rather than list nothing.
		if _, _, err := sl.ListStale(ctx, "", "", 1, now); !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("ListStale of a store whose ListsStale is false: %v, want errors.ErrUnsupported", err)
		}
		t.Skip("store does not list stale leases as configured (ListsStale is false)")
	}
	n0 := seq.Load()
	tenants := []string{fmt.Sprintf("stale:%d", n0), fmt.Sprintf("stale:%d:x", n0)}
	want := map[string]map[string]bool{"": {}, tenants[0]: {}, tenants[1]: {}}
	for i := 0; i < 5; i++ {
		r := newRecord(now, "a")
		r.Scope.Tenant = tenants[i%2]
		r.ID = r.Scope.ID(false)
		r.LeaseUntil = now.Add(time.Duration(i+1) * time.Second)
		claim(t, s, r, now, false)
		want[""][r.ID] = true
		want[r.Scope.Tenant][r.ID] = true
	}
	at := now.Add(2 * time.Minute)
	other := notStale(t, s, tenants[0], now, at)
	for _, tenant := range []string{"", tenants[0], tenants[1]} {
		list := func(page string) ([]*idemkit.Record, string, error) { return sl.ListStale(ctx, tenant, page, 2, at) }
		got, pages := listPages(t, "ListStale("+tenant+")", list, want[""], func(r *idemkit.Record) {
			if r.State != idemkit.StateInFlight || !r.LeaseExpired(at) {
				t.Fatalf("listed a %q record with lease until %v at %v", r.State, r.LeaseUntil, at)
			}
			if tenant != "" && r.Scope.Tenant != tenant {
				t.Fatalf("listing for %q returned tenant %q", tenant, r.Scope.Tenant)
			}
			if other[r.ID] {
				t.Fatalf("listed record %s, which is not a stale lease", r.ID)
			}
		})
		if len(got) != len(want[tenant]) {
			t.Fatalf("tenant %q: listed %d of %d stale records", tenant, len(got), len(want[tenant]))
		}
		if tenant == "" && pages < 2 {
			t.Fatalf("%d records in %d page(s) of 2", len(got), pages)
		}
	}
	// Before the leases end nothing of ours is listed.
	noneListed(t, sl, tenants[1], now, want[""])
	for _, page := range foreignPages {
		if _, _, err := sl.ListStale(ctx, "", page, 2, at); !errors.Is(err, idemkit.ErrInvalidPage) {
			t.Fatalf("ListStale with the foreign page token %q: %v, want ErrInvalidPage", page, err)
		}
	}
}

// noneListed checks that ListStale for tenant at now lists none of ours.
func noneListed(t *testing.T, s idemkit.StaleLister, tenant string, now time.Time, ours map[string]bool) {
	t.Helper()
	recs, _, err := s.ListStale(context.Background(), tenant, "", 100, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if ours[r.ID] {
			t.Fatalf("listed %s before its lease ended", r.ID)
		}
	}
}

// notStale claims, in tenant, records that are not stale leases at at:
// a live lease (extended past at), a completed, a released, an
// indeterminate and an expired record. It returns their IDs.
func notStale(t *testing.T, s idemkit.OperatorStore, tenant string, now, at time.Time) map[string]bool {
	t.Helper()
	ctx := context.Background()
	other := map[string]bool{}
	add := func(r *idemkit.Record) *idemkit.Record {
		r.Scope.Tenant = tenant
		r.ID = r.Scope.ID(false)
		claim(t, s, r, now, false)
		other[r.ID] = true
		return r
	}
	live := newRecord(now, "a") // lease still running at the listing
	live.LeaseUntil = now.Add(time.Hour)
	add(live)
	done := add(newRecord(now, "a"))
	done.LeaseUntil = now.Add(time.Second)
	if err := s.Complete(ctx, completed(done, now, sampleSnapshot()), now); err != nil {
		t.Fatal(err)
	}
	freed := newRecord(now, "a")
	freed.LeaseUntil = now.Add(time.Second)
	add(freed)
	if err := s.Release(ctx, freed.ID, "a", now); err != nil {
		t.Fatal(err)
	}
	marked := newRecord(now, "a")
	marked.LeaseUntil = now.Add(time.Second)
	add(marked)
	if err := s.MarkIndeterminate(ctx, marked.ID, "a", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	gone := newRecord(now, "a")
	gone.LeaseUntil, gone.ExpiresAt = now.Add(time.Second), now.Add(90*time.Second)
	add(gone)
	if err := s.Extend(ctx, live.ID, "a", at.Add(time.Hour), now); err != nil {
		t.Fatal(err)
	}
	return other
}

// listPages reads every page of list, at most 2 records each, checks
// every record with check, and returns the records of ours listed (others
// may be another test's in a shared store) and the number of pages. Ours
// must be listed once each, ordered by lease.
func listPages(t *testing.T, name string, list func(page string) ([]*idemkit.Record, string, error), ours map[string]bool, check func(*idemkit.Record)) (got map[string]bool, pages int) {
	t.Helper()
	got = map[string]bool{}
	var last time.Time
	for page := ""; ; {
		recs, next, err := list(page)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pages++
		if len(recs) > 2 {
			t.Fatalf("page of %d records, limit 2", len(recs))
		}
		for _, r := range recs {
			check(r)
			if !ours[r.ID] {
				continue // another test's record in a shared store
			}
			if got[r.ID] {
				t.Fatalf("record %s listed twice", r.ID)
			}
			if r.LeaseUntil.Before(last) {
				t.Fatal("listing is not ordered by lease")
			}
			last = r.LeaseUntil
			got[r.ID] = true
		}
		if next == "" {
			return got, pages
		}
		page = next
		if pages > 100 {
			t.Fatal("listing does not end")
		}
	}
}

func markedRecord(t *testing.T, s idemkit.OperatorStore, now time.Time) *idemkit.Record {
	t.Helper()
	r := newRecord(now, "a")
	r.LeaseUntil = now.Add(time.Second)
	claim(t, s, r, now, false)
	at := now.Add(2 * time.Second)
	if err := s.MarkIndeterminate(context.Background(), r.ID, "a", at); err != nil {
		t.Fatalf("MarkIndeterminate: %v", err)
	}
	return mustGet(t, s, r.ID, at)
}

func testResolveCompleted(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	ctx := context.Background()
	r := newRecord(now, "a")
	claim(t, s, r, now, false)
	_, err := s.Resolve(ctx, r.ID, r.Owner, idemkit.Resolution{As: idemkit.StateCompleted, Snapshot: sampleSnapshot()}, now)
	wantErr(t, "Resolve of an in_flight record", err, idemkit.ErrNotIndeterminate)
	_, err = s.Resolve(ctx, "o1|1:x1:y1:z", "a", idemkit.Resolution{As: idemkit.StateFailed}, now)
	wantErr(t, "Resolve of an absent record", err, idemkit.ErrNotIndeterminate)

	m := markedRecord(t, s, now)
	// A decision on another run than the one the record holds (the
	// operator checked an earlier run of the key) changes nothing.
	_, err = s.Resolve(ctx, m.ID, m.Owner+"-earlier-run", idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops"}, now.Add(time.Minute))
	wantErr(t, "Resolve of another run", err, idemkit.ErrNotIndeterminate)
	if got := mustGet(t, s, m.ID, now); got.State != idemkit.StateIndeterminate || got.Resolution != nil {
		t.Fatalf("after a decision on another run the record is %s with resolution %+v, want indeterminate, unresolved", got.State, got.Resolution)
	}
	at := now.Add(time.Minute)
	res := idemkit.Resolution{As: idemkit.StateCompleted, Snapshot: sampleSnapshot(), Operator: "arn:aws:iam::1:user/ops", Reason: "charge found in the processor", ResolvedAt: at,
		ReplayUntil: m.ReplayUntil.Add(time.Hour), ExpiresAt: m.ExpiresAt.Add(2 * time.Hour)}
	got, err := s.Resolve(ctx, m.ID, m.Owner, res, at)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	stored := mustGet(t, s, m.ID, at)
	for _, g := range []*idemkit.Record{got, stored} {
		checkResolvedCompleted(t, g, res, at)
	}
	_, err = s.Resolve(ctx, m.ID, m.Owner, res, at)
	wantErr(t, "second Resolve", err, idemkit.ErrNotIndeterminate)
	if c := claim(t, s, withOwner(m, "b"), at, true); c.Won {
		t.Fatal("a claim won over a record resolved as completed")
	}
}

// checkResolvedCompleted checks a record resolved as completed by res at
// at.
func checkResolvedCompleted(t *testing.T, g *idemkit.Record, res idemkit.Resolution, at time.Time) {
	t.Helper()
	if g.State != idemkit.StateCompleted || g.Snapshot == nil || g.Snapshot.Status != 201 || !bytes.Equal(g.Snapshot.Body, res.Snapshot.Body) {
		t.Fatalf("resolved record: state %q snapshot %+v", g.State, g.Snapshot)
	}
	if g.Resolution == nil || g.Resolution.Operator != res.Operator || g.Resolution.Reason != res.Reason || g.Resolution.As != idemkit.StateCompleted || !timeEq(g.Resolution.ResolvedAt, at) {
		t.Fatalf("resolution kept: %+v", g.Resolution)
	}
	if !timeEq(g.CompletedAt, at) {
		t.Fatalf("CompletedAt %v, want the resolution's time %v", g.CompletedAt, at)
	}
	// The resolution names its answer too (Resolution.Snapshot).
	if g.Resolution.Snapshot == nil {
		t.Fatal("a completed resolution without its answer")
	}
	sameSnapshot(t, g.Resolution.Snapshot, g.Snapshot)
	if !timeEq(g.ReplayUntil, res.ReplayUntil) || g.ExpiresAt.Before(res.ExpiresAt) || !g.ExpiresAt.Before(res.ExpiresAt.Add(time.Second)) {
		t.Fatalf("replay until %v, expires %v; want the resolution's %v, %v", g.ReplayUntil, g.ExpiresAt, res.ReplayUntil, res.ExpiresAt)
	}
}

func testResolveFailed(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	ctx := context.Background()
	m := markedRecord(t, s, now)
	at := now.Add(time.Minute)
	// A snapshot given with a failed resolution is ignored: a failed
	// record has no answer to replay.
	got, err := s.Resolve(ctx, m.ID, m.Owner, idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops", Reason: "no charge", ResolvedAt: at, Snapshot: sampleSnapshot()}, at)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	for _, g := range []*idemkit.Record{got, mustGet(t, s, m.ID, at)} {
		if g.State != idemkit.StateFailed || g.Resolution == nil || g.Resolution.Reason != "no charge" {
			t.Fatalf("resolved record: %+v", g)
		}
		if g.Snapshot != nil || g.Resolution.Snapshot != nil || !g.CompletedAt.IsZero() {
			t.Fatalf("a failed resolution kept an answer: snapshot %+v, resolution's %+v, completed at %v", g.Snapshot, g.Resolution.Snapshot, g.CompletedAt)
		}
	}
	if !timeEq(got.ReplayUntil, m.ReplayUntil) || d(got.ExpiresAt, m.ExpiresAt) >= time.Second {
		t.Fatalf("a resolution without times changed them: replay until %v, expires %v; want %v, %v", got.ReplayUntil, got.ExpiresAt, m.ReplayUntil, m.ExpiresAt)
	}
	n := withOwner(m, "b")
	n.State = idemkit.StateInFlight
	n.Resolution = nil
	n.LeaseUntil = at.Add(time.Minute)
	if res := claim(t, s, n, at, false); !res.Won {
		t.Fatalf("a claim lost to a record resolved as failed: %+v", res.Existing)
	}
	if got := mustGet(t, s, m.ID, at); got.Owner != "b" || got.State != idemkit.StateInFlight {
		t.Fatalf("after re-claim: %+v", got)
	}
}

func testListIndeterminate(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	ctx := context.Background()
	n0 := seq.Load()
	tenants := []string{fmt.Sprintf("acme:%d", n0), fmt.Sprintf("acme:%d:x", n0)}
	want := map[string]map[string]bool{"": {}, tenants[0]: {}, tenants[1]: {}}
	for i := 0; i < 7; i++ {
		r := newRecord(now, "a")
		r.Scope.Tenant = tenants[i%2]
		r.ID = r.Scope.ID(false)
		r.LeaseUntil = now.Add(time.Duration(i+1) * time.Second)
		claim(t, s, r, now, false)
		if err := s.MarkIndeterminate(ctx, r.ID, "a", now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		want[""][r.ID] = true
		want[r.Scope.Tenant][r.ID] = true
	}
	// Neither an in_flight, a completed nor an expired indeterminate record is listed.
	claim(t, s, newRecord(now, "a"), now, false)
	gone := newRecord(now, "a")
	gone.LeaseUntil, gone.ExpiresAt = now.Add(time.Second), now.Add(90*time.Second)
	claim(t, s, gone, now, false)
	if err := s.MarkIndeterminate(ctx, gone.ID, "a", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	at := now.Add(2 * time.Minute)
	for _, tenant := range []string{"", tenants[0], tenants[1]} {
		list := func(page string) ([]*idemkit.Record, string, error) {
			return s.ListIndeterminate(ctx, tenant, page, 2, at)
		}
		got, pages := listPages(t, "ListIndeterminate("+tenant+")", list, want[""], func(r *idemkit.Record) {
			if r.State != idemkit.StateIndeterminate {
				t.Fatalf("listed a %q record", r.State)
			}
			if tenant != "" && r.Scope.Tenant != tenant {
				t.Fatalf("listing for %q returned tenant %q", tenant, r.Scope.Tenant)
			}
			if r.ID == gone.ID {
				t.Fatal("listed an expired record")
			}
		})
		if len(got) != len(want[tenant]) {
			t.Fatalf("tenant %q: listed %d of %d records", tenant, len(got), len(want[tenant]))
		}
		if pages < 2 {
			t.Fatalf("tenant %q: %d records in %d page(s) of 2", tenant, len(got), pages)
		}
	}
	// A limit of zero or less is the store's default: the listing is
	// paged as usual and ends with every record listed.
	for _, limit := range []int{0, -1} {
		got := map[string]bool{}
		page := ""
		for n := 0; ; n++ {
			recs, next, err := s.ListIndeterminate(ctx, tenants[0], page, limit, at)
			if err != nil {
				t.Fatalf("ListIndeterminate(limit %d): %v", limit, err)
			}
			for _, r := range recs {
				got[r.ID] = true
			}
			if next == "" {
				break
			}
			if n > 100 {
				t.Fatalf("ListIndeterminate(limit %d) does not end: %d pages, %d records", limit, n, len(got))
			}
			page = next
		}
		if len(got) != len(want[tenants[0]]) {
			t.Fatalf("ListIndeterminate(limit %d) listed %d of %d records", limit, len(got), len(want[tenants[0]]))
		}
	}
	for _, page := range foreignPages {
		if _, _, err := s.ListIndeterminate(ctx, "", page, 2, at); !errors.Is(err, idemkit.ErrInvalidPage) {
			t.Fatalf("ListIndeterminate with the foreign page token %q: %v, want ErrInvalidPage", page, err)
		}
	}
}

// foreignPages are page tokens no store issues: an operator's typo, a
// number out of range. Each must be refused with ErrInvalidPage, never
// read as a position (nor panic).
var foreignPages = []string{"not a token we issued", "-1", "-"}

func testSnapshotRoundTrip(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	large := make([]byte, 200<<10)
	rand.New(rand.NewSource(1)).Read(large)
	text := bytes.Repeat([]byte(`{"sku":"A-1","quantity":1},`), 4000)
	snaps := map[string]*idemkit.Snapshot{
		"empty":     {Status: 204, Header: http.Header{}},
		"binary":    {Status: 200, Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: binary},
		"base64":    {Status: 200, Header: http.Header{"Content-Type": {"image/png"}}, Body: []byte("iVBORw0KGgo="), Base64: true},
		"large":     {Status: 200, Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: large},
		"text":      {Status: 201, Header: http.Header{"Content-Type": {"application/json"}, "X-Multi": {"a", "b, c"}}, Body: text},
		"omitted":   {Status: 201, Header: http.Header{"Location": {"/orders/9"}}, Omitted: true},
		"problem":   {Status: 402, Header: http.Header{"Content-Type": {"application/problem+json"}}, Body: []byte(`{"title":"declined"}`)},
		"no-header": {Status: 500, Body: []byte("x")},
		// HTTP allows bytes 0x80-0xFF in a field value (obs-text, often
		// Latin-1): they are replayed as they were, not as U+FFFD.
		"latin-1-header": {Status: 201, Header: http.Header{
			"Content-Disposition": {"attachment; filename=\"caf\xe9.pdf\""},
			"Location":            {"/files/caf\xe9", "/files/\xff\xfe"},
			"X-Empty":             {""},
		}, Body: []byte("x")},
	}
	for name, snap := range snaps {
		t.Run(name, func(t *testing.T) {
			r := newRecord(now, "a")
			claim(t, s, r, now, false)
			c := completed(r, now, snap)
			before := snap.Clone()
			if err := s.Complete(context.Background(), c, now); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			// The caller's snapshot is read, never written: its body may
			// be a response string's own bytes.
			sameSnapshot(t, snap, before)
			for _, got := range []*idemkit.Record{mustGet(t, s, r.ID, now), claim(t, s, withOwner(r, "b"), now, false).Existing} {
				if got == nil || got.Snapshot == nil {
					t.Fatal("no snapshot stored")
				}
				sameSnapshot(t, got.Snapshot, snap)
			}
		})
	}
}

func testRecordRoundTrip(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	r := newRecord(now, "owner-token-\u00e9")
	r.Scope = idemkit.Scope{Tenant: "t|1:2 \u00fc", Operation: "PATCH /orders/1", Key: `"quoted" key`}
	r.ID = r.Scope.ID(true)
	r.LeaseUntil = now.Add(1234 * time.Millisecond)
	claim(t, s, r, now, false)
	sameRecord(t, mustGet(t, s, r.ID, now), r)
}

// testLongScope: scopes whose readable ID would pass DynamoDB's 2048-byte
// partition key limit (a 1 KB tenant, a 1.5 KB operation, a 255-byte key)
// are claimed, read back whole, completed, marked indeterminate and listed
// like any other, per operation and account-wide; scopes differing in one
// byte stay apart.
func testLongScope(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	ctx := context.Background()
	for _, aw := range []bool{false, true} {
		n := seq.Add(1)
		tenant := fmt.Sprintf("tenant:%d:", n)
		tenant += strings.Repeat("t", idemkit.MaxTenantLen-len(tenant))
		sc := idemkit.Scope{Tenant: tenant, Operation: "POST /" + strings.Repeat("o", 1500), Key: strings.Repeat("k", 255)}
		rec := func(sc idemkit.Scope) *idemkit.Record {
			r := newRecord(now, "a")
			r.Scope, r.ID = sc, sc.ID(aw)
			return r
		}
		r := rec(sc)
		if len(r.ID) > idemkit.MaxIDLen {
			t.Fatalf("ID of %d bytes, over idemkit.MaxIDLen", len(r.ID))
		}
		if res := claim(t, s, r, now, false); !res.Won {
			t.Fatalf("account-wide %v: claim of a long scope lost to %+v", aw, res.Existing)
		}
		sameRecord(t, mustGet(t, s, r.ID, now), r)

		// One byte more in the key (or, per operation, the operation) is
		// another record.
		other := sc
		other.Key += "!"
		if !aw {
			other = sc
			other.Operation += "!"
		}
		o := rec(other)
		if o.ID == r.ID {
			t.Fatalf("account-wide %v: two scopes share ID %q", aw, r.ID)
		}
		if res := claim(t, s, o, now, false); !res.Won {
			t.Fatalf("account-wide %v: a scope one byte apart lost to %+v", aw, res.Existing)
		}

		c := completed(r, now.Add(time.Second), sampleSnapshot())
		if err := s.Complete(ctx, c, now.Add(time.Second)); err != nil {
			t.Fatalf("Complete of a long scope: %v", err)
		}
		sameRecord(t, mustGet(t, s, r.ID, now.Add(time.Second)), c)

		after := o.LeaseUntil.Add(time.Second)
		if err := s.MarkIndeterminate(ctx, o.ID, "a", after); err != nil {
			t.Fatalf("MarkIndeterminate of a long scope: %v", err)
		}
		recs, _, err := s.ListIndeterminate(ctx, tenant, "", 10, after)
		if err != nil {
			t.Fatalf("ListIndeterminate of a long tenant: %v", err)
		}
		if len(recs) != 1 || recs[0].ID != o.ID || recs[0].Scope != o.Scope {
			t.Fatalf("ListIndeterminate(%d-byte tenant) = %+v, want the record of %q", len(tenant), recs, o.ID)
		}
	}
}

func testCanceled(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := newRecord(now, "a")
	_, err := s.Claim(ctx, r, now)
	wantErr(t, "Claim with a canceled context", err, idemkit.ErrStoreUnavailable)
	_, err = s.Get(ctx, r.ID, now)
	wantErr(t, "Get with a canceled context", err, idemkit.ErrStoreUnavailable)
}

func testRace(t *testing.T, s idemkit.OperatorStore, n int) {
	now := base()
	r := newRecord(now, "")
	winners, seen := race(t, n, func(i int) (idemkit.ClaimResult, error) {
		return claimOrReclaim(s, withOwner(r, fmt.Sprintf("owner-%d", i)), now, true)
	})
	if winners != 1 {
		t.Fatalf("%d of %d racers won the claim, want exactly 1", winners, n)
	}
	owner := mustGet(t, s, r.ID, now).Owner
	if len(seen) > 1 || (len(seen) == 1 && seen[owner] == 0) {
		t.Fatalf("losers saw owners %v, want only the winner %q", seen, owner)
	}
}

// race runs claim(i) for i in [0, n) from n goroutines released together,
// and returns how many won and, of the losers, how many saw each owner in
// the existing record. An error, or a loss without the existing record,
// fails the test.
func race(t *testing.T, n int, claim func(i int) (idemkit.ClaimResult, error)) (winners int, seen map[string]int) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		won   atomic.Int64
		mu    sync.Mutex
		errs  = make(chan error, n)
		start = make(chan struct{})
	)
	seen = map[string]int{}
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			res, err := claim(i)
			switch {
			case err != nil:
				errs <- err
			case res.Won:
				won.Add(1)
			case res.Existing == nil:
				errs <- errors.New("lost claim without the existing record")
			default:
				mu.Lock()
				seen[res.Existing.Owner]++
				mu.Unlock()
			}
		}(i)
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return int(won.Load()), seen
}

// staleRecord stores an in_flight record whose lease has ended at the
// time it returns, by owner "crashed".
func staleRecord(t *testing.T, s idemkit.OperatorStore) (*idemkit.Record, time.Time) {
	now := base()
	r := newRecord(now, "crashed")
	r.LeaseUntil = now.Add(time.Second)
	claim(t, s, r, now, false)
	return r, now.Add(2 * time.Second)
}

// failedRecord stores an indeterminate record an operator resolved as
// failed (claimable again), and returns it with a time it is live.
func failedRecord(t *testing.T, s idemkit.OperatorStore) (*idemkit.Record, time.Time) {
	m := markedRecord(t, s, base())
	at := m.LeaseUntil.Add(time.Second)
	if _, err := s.Resolve(context.Background(), m.ID, m.Owner, idemkit.Resolution{As: idemkit.StateFailed, Operator: "op", Reason: "not charged"}, at); err != nil {
		t.Fatalf("Resolve as failed: %v", err)
	}
	return m, at
}

// testRaceOver: n racers claim, with Takeover and each its own owner, a
// key whose live record may be replaced (a stale lease, a failed
// resolution): exactly one wins, and every loser is shown the winner's
// record. A store that checked and wrote in two steps would let several
// replace it, and each would run the handler.
func testRaceOver(t *testing.T, s idemkit.OperatorStore, n int, setup func(*testing.T, idemkit.OperatorStore) (*idemkit.Record, time.Time)) {
	old, now := setup(t, s)
	racers := make([]*idemkit.Record, n)
	for i := range racers {
		r := newRecord(now, fmt.Sprintf("racer-%d", i))
		r.ID, r.Scope, r.Fingerprint = old.ID, old.Scope, old.Fingerprint
		racers[i] = r
	}
	winners, seen := race(t, n, func(i int) (idemkit.ClaimResult, error) {
		return claimOrReclaim(s, racers[i], now, true)
	})
	if winners != 1 {
		t.Fatalf("%d of %d racers replaced the record, want exactly 1", winners, n)
	}
	got := mustGet(t, s, old.ID, now)
	if got.State != idemkit.StateInFlight || got.Owner == old.Owner {
		t.Fatalf("after the race: state %q owner %q, want in_flight by a racer", got.State, got.Owner)
	}
	if len(seen) > 1 || (len(seen) == 1 && seen[got.Owner] == 0) {
		t.Fatalf("losers saw owners %v, want only the winner %q", seen, got.Owner)
	}
}

func testDistinct(t *testing.T, s idemkit.OperatorStore, n int) {
	now := base()
	const workers = 16
	var (
		wg   sync.WaitGroup
		won  atomic.Int64
		errc = make(chan error, workers)
		jobs = make(chan int)
	)
	prefix := fmt.Sprintf("bulk-%d-", seq.Add(1))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				sc := idemkit.Scope{Tenant: "bulk", Operation: "POST /orders", Key: prefix + fmt.Sprint(i)}
				r := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o", LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(time.Hour), CreatedAt: now}
				res, err := s.Claim(context.Background(), r, now)
				if err != nil {
					select {
					case errc <- err:
					default:
					}
					continue
				}
				if res.Won {
					won.Add(1)
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if got := won.Load(); got != int64(n) {
		t.Fatalf("%d of %d distinct keys claimed, want all", got, n)
	}
}

func d(a, b time.Time) time.Duration {
	if a.After(b) {
		return a.Sub(b)
	}
	return b.Sub(a)
}

// timeEq compares at millisecond precision.
func timeEq(a, b time.Time) bool {
	d := a.Sub(b)
	return d > -time.Millisecond && d < time.Millisecond
}

func sameRecord(t *testing.T, got, want *idemkit.Record) {
	t.Helper()
	if got == nil {
		t.Fatal("record is nil")
	}
	if got.ID != want.ID || got.Scope != want.Scope || got.State != want.State || got.Fingerprint != want.Fingerprint || got.Owner != want.Owner || got.Cause != want.Cause {
		t.Fatalf("record = %+v\nwant %+v", got, want)
	}
	for _, c := range []struct {
		name      string
		got, want time.Time
	}{
		{"LeaseUntil", got.LeaseUntil, want.LeaseUntil},
		{"ReplayUntil", got.ReplayUntil, want.ReplayUntil},
		{"CreatedAt", got.CreatedAt, want.CreatedAt},
		{"CompletedAt", got.CompletedAt, want.CompletedAt},
	} {
		if c.got.IsZero() != c.want.IsZero() || !timeEq(c.got, c.want) {
			t.Fatalf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if d := got.ExpiresAt.Sub(want.ExpiresAt); d < 0 || d >= time.Second {
		t.Fatalf("ExpiresAt = %v, want %v (rounded up to the second at most)", got.ExpiresAt, want.ExpiresAt)
	}
	if (got.Snapshot == nil) != (want.Snapshot == nil) {
		t.Fatalf("Snapshot = %+v, want %+v", got.Snapshot, want.Snapshot)
	}
	if want.Snapshot != nil {
		sameSnapshot(t, got.Snapshot, want.Snapshot)
	}
}

func sameSnapshot(t *testing.T, got, want *idemkit.Snapshot) {
	t.Helper()
	if got.Status != want.Status || got.Base64 != want.Base64 || got.Omitted != want.Omitted {
		t.Fatalf("snapshot status/flags = %d/%v/%v, want %d/%v/%v", got.Status, got.Base64, got.Omitted, want.Status, want.Base64, want.Omitted)
	}
	if !bytes.Equal(got.Body, want.Body) {
		t.Fatalf("snapshot body differs: %d bytes, want %d", len(got.Body), len(want.Body))
	}
	if len(got.Header) != len(want.Header) {
		t.Fatalf("snapshot header = %v, want %v", got.Header, want.Header)
	}
	for k, v := range want.Header {
		g := got.Header[k]
		if len(g) != len(v) {
			t.Fatalf("header %s = %q, want %q", k, g, v)
		}
		for i := range v {
			if g[i] != v[i] {
				t.Fatalf("header %s = %q, want %q", k, g, v)
			}
		}
	}
}

// testCanceledEveryMethod: every method called with a done context returns
// an error that is ErrStoreUnavailable, and does not block. ListStale is
// called when the store lists stale leases.
func testCanceledEveryMethod(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	r := newRecord(now, "a")
	claim(t, s, r, now, false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	at := now.Add(time.Minute)
	calls := []struct {
		name string
		call func() error
	}{
		{"Claim", func() error { _, err := s.Claim(ctx, withOwner(r, "b"), now); return err }},
		{"Complete", func() error { return s.Complete(ctx, completed(r, now, sampleSnapshot()), now) }},
		{"Release", func() error { return s.Release(ctx, r.ID, "a", now) }},
		{"Extend", func() error { return s.Extend(ctx, r.ID, "a", at, now) }},
		{"MarkUnknown", func() error { return s.MarkUnknown(ctx, r.ID, "a", now) }},
		{"MarkIndeterminate", func() error { return s.MarkIndeterminate(ctx, r.ID, "a", at) }},
		{"Resolve", func() error {
			_, err := s.Resolve(ctx, r.ID, r.Owner, idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops"}, at)
			return err
		}},
		{"Get", func() error { _, err := s.Get(ctx, r.ID, now); return err }},
		{"ListIndeterminate", func() error { _, _, err := s.ListIndeterminate(ctx, "", "", 10, now); return err }},
	}
	if sl, ok := staleLister(s); ok {
		calls = append(calls, struct {
			name string
			call func() error
		}{"ListStale", func() error { _, _, err := sl.ListStale(ctx, "", "", 10, at); return err }})
	}
	for _, c := range calls {
		done := make(chan error, 1)
		go func() { done <- c.call() }()
		timer := time.NewTimer(30 * time.Second)
		select {
		case err := <-done:
			timer.Stop()
			wantErr(t, c.name+" with a canceled context", err, idemkit.ErrStoreUnavailable)
		case <-timer.C:
			t.Fatalf("%s with a canceled context did not return within 30 s", c.name)
		}
	}
	// Nothing was changed: the record is still a's, in flight.
	sameRecord(t, mustGet(t, s, r.ID, now), r)
}

// testNoAliasing: a store keeps no reference to what it is given and
// shares nothing it returns: changing a record after Claim, Complete or
// Resolve, or a record returned by Get, Claim or Resolve, leaves what is
// stored as it was.
func testNoAliasing(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	ctx := context.Background()
	r := newRecord(now, "a")
	want := r.Clone()
	claim(t, s, r, now, false)
	scribble(r)
	sameRecord(t, mustGet(t, s, want.ID, now), want)
	scribble(mustGet(t, s, want.ID, now))
	sameRecord(t, mustGet(t, s, want.ID, now), want)

	c := completed(want, now, sampleSnapshot())
	want = c.Clone()
	if err := s.Complete(ctx, c, now); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	// The caller changes the response it completed with (an adapter
	// adding headers of its own): a lost claim is shown the response as
	// stored. A store or cache keeping the caller's snapshot would replay
	// the changed one.
	scribbleSnapshot(c.Snapshot)
	sameRecord(t, claim(t, s, withOwner(want, "b"), now, false).Existing, want)
	scribble(c)
	sameRecord(t, mustGet(t, s, want.ID, now), want)
	scribble(mustGet(t, s, want.ID, now))
	scribble(claim(t, s, withOwner(want, "b"), now, false).Existing)
	sameRecord(t, mustGet(t, s, want.ID, now), want)
	sameRecord(t, claim(t, s, withOwner(want, "b"), now, false).Existing, want)

	m := markedRecord(t, s, now)
	at := now.Add(time.Minute)
	res := idemkit.Resolution{As: idemkit.StateCompleted, Snapshot: sampleSnapshot(), Operator: "ops", ResolvedAt: at}
	got, err := s.Resolve(ctx, m.ID, m.Owner, res, at)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	resolved := got.Clone()
	// The record returned shares nothing with the resolution given.
	scribbleSnapshot(res.Snapshot)
	sameRecord(t, got, resolved)
	scribble(got)
	stored := mustGet(t, s, m.ID, at)
	sameRecord(t, stored, resolved)
	if stored.Resolution == nil || stored.Resolution.Operator != "ops" {
		t.Fatalf("resolution changed through a returned record: %+v", stored.Resolution)
	}

	// The records the listings return are the caller's own too.
	u := newRecord(now, "a")
	claim(t, s, u, now, false)
	if err := s.MarkUnknown(ctx, u.ID, "a", now); err != nil {
		t.Fatalf("MarkUnknown: %v", err)
	}
	wantU := mustGet(t, s, u.ID, now)
	for _, r := range listedRecords(t, s, u.Scope.Tenant, at) {
		scribble(r)
	}
	sameRecord(t, mustGet(t, s, u.ID, at), wantU)

	k := newRecord(now, "a")
	k.LeaseUntil = now.Add(time.Second)
	claim(t, s, k, now, false)
	if sl, ok := staleLister(s); ok {
		recs, _, err := sl.ListStale(ctx, k.Scope.Tenant, "", 10, at)
		if err != nil {
			t.Fatalf("ListStale: %v", err)
		}
		for _, r := range recs {
			scribble(r)
		}
		sameRecord(t, mustGet(t, s, k.ID, at), k)
	}
	if err := s.MarkIndeterminate(ctx, k.ID, "a", at); err != nil {
		t.Fatalf("MarkIndeterminate: %v", err)
	}
	for _, r := range listedRecords(t, s, k.Scope.Tenant, at) {
		scribble(r)
	}
	wantK := k.Clone()
	wantK.State, wantK.Cause = idemkit.StateIndeterminate, idemkit.CauseLeaseExpired
	sameRecord(t, mustGet(t, s, k.ID, at), wantK)
}

// listedRecords returns the records ListIndeterminate lists for tenant.
func listedRecords(t *testing.T, s idemkit.OperatorStore, tenant string, now time.Time) []*idemkit.Record {
	t.Helper()
	recs, _, err := s.ListIndeterminate(context.Background(), tenant, "", 100, now)
	if err != nil {
		t.Fatalf("ListIndeterminate: %v", err)
	}
	if len(recs) == 0 {
		t.Fatal("ListIndeterminate listed nothing")
	}
	return recs
}

// scribble changes every part of r a store could share.
func scribble(r *idemkit.Record) {
	if r == nil {
		return
	}
	r.Owner, r.Fingerprint, r.State = "scribbled", "scribbled", idemkit.StateFailed
	r.Scope.Key = "scribbled"
	r.LeaseUntil = r.LeaseUntil.Add(time.Hour)
	scribbleSnapshot(r.Snapshot)
	if r.Resolution != nil {
		r.Resolution.Operator = "scribbled"
		scribbleSnapshot(r.Resolution.Snapshot)
	}
}

func scribbleSnapshot(s *idemkit.Snapshot) {
	if s == nil {
		return
	}
	s.Status = 599
	for i := range s.Body {
		s.Body[i] = 'X'
	}
	for k, vs := range s.Header {
		for i := range vs {
			vs[i] = "scribbled"
		}
		s.Header[k] = vs
	}
	s.Header.Set("X-Scribbled", "1")
}

// testResolvedAtDefault: a Resolution without ResolvedAt is stored as
// resolved at the call's now.
func testResolvedAtDefault(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	m := markedRecord(t, s, now)
	at := now.Add(time.Minute)
	got, err := s.Resolve(context.Background(), m.ID, m.Owner, idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops", Reason: "no charge"}, at)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	for _, g := range []*idemkit.Record{got, mustGet(t, s, m.ID, at)} {
		if g.Resolution == nil || !timeEq(g.Resolution.ResolvedAt, at) {
			t.Fatalf("resolution %+v, want ResolvedAt %v (the call's now)", g.Resolution, at)
		}
	}
}

// testBadArguments: every call that breaks a precondition of the
// contract (an empty ID or owner, a record without a tenant or in another
// state than the method's, a completion without a snapshot, a resolution
// neither completed nor failed or completed without a snapshot) is
// refused as ErrRecordInvalid (never ErrStoreUnavailable), whatever the
// store holds, and nothing is stored.
func testBadArguments(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	ctx := context.Background()
	check := func(what string, err error) {
		t.Helper()
		switch {
		case err == nil:
			t.Fatalf("%s: no error", what)
		case errors.Is(err, idemkit.ErrStoreUnavailable):
			t.Fatalf("%s: %v is ErrStoreUnavailable: a retry cannot help", what, err)
		case !errors.Is(err, idemkit.ErrRecordInvalid):
			t.Fatalf("%s: %v, want ErrRecordInvalid", what, err)
		}
	}
	claimOf := func(what string, r *idemkit.Record) {
		t.Helper()
		_, err := s.Claim(ctx, r, now)
		check("Claim of "+what, err)
	}
	claimOf("a nil record", nil)
	noOwner := newRecord(now, "")
	claimOf("a record without an owner", noOwner)
	if _, err := s.Get(ctx, noOwner.ID, now); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("Get after a refused claim: %v, want ErrNotFound", err)
	}
	noID := newRecord(now, "a")
	noID.ID = ""
	claimOf("a record without an ID", noID)
	noTenant := newRecord(now, "a")
	noTenant.Scope.Tenant = ""
	claimOf("a record without a tenant", noTenant)
	done := completed(newRecord(now, "a"), now, sampleSnapshot())
	claimOf("a completed record", done)
	if _, err := s.Get(ctx, done.ID, now); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("Get after a refused claim of a completed record: %v, want ErrNotFound", err)
	}

	// A live in_flight record of owner a: no bad call changes it.
	r := newRecord(now, "a")
	claim(t, s, r, now, false)
	bad := func(change func(c *idemkit.Record)) *idemkit.Record {
		c := completed(r, now, sampleSnapshot())
		change(c)
		return c
	}
	for what, c := range map[string]*idemkit.Record{
		"a nil record":                         nil,
		"a record without an ID":               bad(func(c *idemkit.Record) { c.ID = "" }),
		"a record without an owner":            bad(func(c *idemkit.Record) { c.Owner = "" }),
		"a record without a tenant":            bad(func(c *idemkit.Record) { c.Scope.Tenant = "" }),
		"an in_flight record":                  bad(func(c *idemkit.Record) { c.State, c.Snapshot, c.CompletedAt = idemkit.StateInFlight, nil, time.Time{} }),
		"a completed record without an answer": bad(func(c *idemkit.Record) { c.Snapshot = nil }),
	} {
		check("Complete of "+what, s.Complete(ctx, c, now))
	}
	later := now.Add(time.Minute) // after r's lease
	for _, a := range []struct{ id, owner string }{{"", "a"}, {r.ID, ""}} {
		what := fmt.Sprintf("(id %q, owner %q)", a.id, a.owner)
		check("Release"+what, s.Release(ctx, a.id, a.owner, now))
		check("Extend"+what, s.Extend(ctx, a.id, a.owner, later, now))
		check("MarkUnknown"+what, s.MarkUnknown(ctx, a.id, a.owner, now))
		check("MarkIndeterminate"+what, s.MarkIndeterminate(ctx, a.id, a.owner, later))
	}
	_, err := s.Get(ctx, "", now)
	check("Get of an empty ID", err)
	sameRecord(t, mustGet(t, s, r.ID, now), r)

	m := markedRecord(t, s, now)
	at := now.Add(time.Minute)
	_, err = s.Resolve(ctx, "", m.Owner, idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops"}, at)
	check("Resolve of an empty ID", err)
	_, err = s.Resolve(ctx, m.ID, "", idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops"}, at)
	check("Resolve without an owner", err)
	_, err = s.Resolve(ctx, m.ID, m.Owner, idemkit.Resolution{As: idemkit.StateInFlight, Operator: "ops"}, at)
	check("Resolve as in_flight", err)
	_, err = s.Resolve(ctx, m.ID, m.Owner, idemkit.Resolution{As: idemkit.StateCompleted, Operator: "ops"}, at)
	check("Resolve as completed without a snapshot", err)
	// Whatever the store holds: a record that is not indeterminate.
	_, err = s.Resolve(ctx, r.ID, r.Owner, idemkit.Resolution{As: idemkit.StateCompleted, Operator: "ops"}, at)
	check("Resolve of an in_flight record as completed without a snapshot", err)
	if got := mustGet(t, s, m.ID, at); got.State != idemkit.StateIndeterminate {
		t.Fatalf("after refused resolutions the record is %q, want indeterminate", got.State)
	}
}

// testSnapshotLimit: a body the store cannot keep is stored Omitted,
// without its body, with its status and headers; Complete succeeds.
func testSnapshotLimit(t *testing.T, s idemkit.OperatorStore, limit int) {
	if limit <= 0 {
		t.Skip("store keeps bodies of any size (Options.SnapshotLimit is zero)")
	}
	now := base()
	body := make([]byte, limit+1)
	rand.New(rand.NewSource(2)).Read(body)
	snap := &idemkit.Snapshot{Status: 201, Header: http.Header{"Content-Type": {"application/octet-stream"}, "Location": {"/orders/9"}}, Body: body}
	r := newRecord(now, "a")
	claim(t, s, r, now, false)
	if err := s.Complete(context.Background(), completed(r, now, snap), now); err != nil {
		t.Fatalf("Complete of a %d-byte body: %v, want it stored Omitted", len(body), err)
	}
	got := mustGet(t, s, r.ID, now)
	if got.State != idemkit.StateCompleted || got.Snapshot == nil {
		t.Fatalf("record %q, snapshot %+v", got.State, got.Snapshot)
	}
	want := &idemkit.Snapshot{Status: 201, Header: snap.Header, Omitted: true}
	sameSnapshot(t, got.Snapshot, want)
}
