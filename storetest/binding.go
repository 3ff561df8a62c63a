package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
)

// again returns a fresh in_flight claim, by owner at at, of old's key with
// old's fingerprint and scope.
func again(old *idemkit.Record, owner string, at time.Time) *idemkit.Record {
	return &idemkit.Record{
		ID:          old.ID,
		Scope:       old.Scope,
		State:       idemkit.StateInFlight,
		Fingerprint: old.Fingerprint,
		Owner:       owner,
		LeaseUntil:  at.Add(30 * time.Second),
		ReplayUntil: at.Add(24 * time.Hour),
		ExpiresAt:   at.Add(48 * time.Hour),
		CreatedAt:   at,
	}
}

// refused checks a Claim of r at at that a stored record must refuse: lost,
// shown the stored record (its state and owner), which stays as it was.
func refused(t *testing.T, s idemkit.OperatorStore, what string, r *idemkit.Record, at time.Time, state idemkit.State, owner string) {
	t.Helper()
	res, err := s.Claim(context.Background(), r, at)
	switch {
	case err != nil:
		t.Fatalf("%s: %v", what, err)
	case res.Won:
		t.Fatalf("%s: won over the %s record of %s", what, state, owner)
	case res.Existing == nil || res.Existing.State != state || res.Existing.Owner != owner:
		t.Fatalf("%s: lost to %+v; want shown the %s record of %s", what, res.Existing, state, owner)
	}
}

// testClaimReplacesNothing: a Claim stores nothing over a stored record of
// its key, in any state and live or not: a live lease, a stale one, a
// completed, indeterminate or failed record, a released key's tombstone,
// an expired record. It is shown that record, whatever it is, and the
// record stays as it was. So a late copy of any claim takes nothing.
func testClaimReplacesNothing(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	live := newRecord(now, "a")
	claim(t, s, live, now, false)
	refused(t, s, "a claim over a live lease", again(live, "b", now), now, idemkit.StateInFlight, "a")

	stale, sat := staleRecord(t, s)
	refused(t, s, "a claim over a stale lease", again(stale, "b", sat), sat, idemkit.StateInFlight, stale.Owner)

	done := newRecord(now, "a")
	claim(t, s, done, now, false)
	if err := s.Complete(ctx, completed(done, now, sampleSnapshot()), now); err != nil {
		t.Fatal(err)
	}
	refused(t, s, "a claim over a completed record", again(done, "b", now), now, idemkit.StateCompleted, "a")

	m := markedRecord(t, s, now)
	refused(t, s, "a claim over an indeterminate record", again(m, "b", now), m.LeaseUntil, idemkit.StateIndeterminate, m.Owner)

	failed, fat := failedRecord(t, s)
	refused(t, s, "a claim over a failed record", again(failed, "b", fat), fat, idemkit.StateFailed, failed.Owner)
	refused(t, s, "a late copy of the failed run's own claim", again(failed, failed.Owner, failed.CreatedAt), fat, idemkit.StateFailed, failed.Owner)

	rel := newRecord(now, "a")
	claim(t, s, rel, now, false)
	if err := s.Release(ctx, rel.ID, "a", now); err != nil {
		t.Fatal(err)
	}
	refused(t, s, "a claim over a tombstone", again(rel, "b", now), now, idemkit.StateReleased, "a")
	refused(t, s, "a late copy of the released owner's claim", rel, now, idemkit.StateReleased, "a")

	exp := newRecord(now, "a")
	exp.LeaseUntil, exp.ExpiresAt = now.Add(time.Second), now.Add(2*time.Second)
	claim(t, s, exp, now, false)
	later := now.Add(3 * time.Second)
	res, err := s.Claim(ctx, again(exp, "b", later), later)
	switch {
	case err != nil:
		t.Fatalf("a claim over an expired record: %v", err)
	case res.Won:
		// A store may have deleted the expired record; nothing of it is
		// left to refuse the claim.
	case res.Existing == nil || res.Existing.Owner != "a" || res.Existing.Live(later):
		t.Fatalf("a claim over an expired record lost to %+v; want shown the expired record", res.Existing)
	}
}

// testReclaim: Reclaim replaces the record it read, unchanged, whatever
// its state: a tombstone, an expired, failed or stale record. Read before
// any change (a renewal, a mark, a release, a completion, another
// Reclaim), it stores nothing and is shown the record as it is now. Made
// again after it landed (its answer lost), it wins: the record is its own
// in_flight one. A late copy of it after its own record completed stores
// nothing.
func testReclaim(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	reclaim := func(what string, r, prev *idemkit.Record, at time.Time) idemkit.ClaimResult {
		t.Helper()
		res, err := s.Reclaim(ctx, r, prev, at)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return res
	}

	stale, sat := staleRecord(t, s)
	read := mustGet(t, s, stale.ID, sat)
	if err := s.Extend(ctx, stale.ID, stale.Owner, sat.Add(time.Minute), sat); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	b := again(stale, "b", sat)
	if res := reclaim("a reclaim read before a renewal", b, read, sat); res.Won || res.Existing == nil || res.Existing.Owner != stale.Owner {
		t.Fatalf("a reclaim read before a renewal: %+v; want lost to the renewed record", res)
	}
	renewed := mustGet(t, s, stale.ID, sat)
	later := sat.Add(2 * time.Minute)
	if res := reclaim("a reclaim of the stale lease as read", b, renewed, later); !res.Won {
		t.Fatalf("a reclaim of the stale lease as read lost to %+v", res.Existing)
	}
	sameRecord(t, mustGet(t, s, stale.ID, later), b)
	if res := reclaim("a retried reclaim", b, renewed, later); !res.Won {
		t.Fatalf("a retried reclaim lost to %+v; want won, its own record", res.Existing)
	}
	c := again(stale, "c", later)
	if res := reclaim("another's reclaim of the record b replaced", c, renewed, later); res.Won || res.Existing == nil || res.Existing.Owner != "b" {
		t.Fatalf("another's reclaim of the record b replaced: %+v; want lost to b's record", res)
	}
	if err := s.Complete(ctx, completed(b, later, sampleSnapshot()), later); err != nil {
		t.Fatal(err)
	}
	if res := reclaim("a late copy of b's reclaim after its completion", b, renewed, later); res.Won || res.Existing == nil || res.Existing.State != idemkit.StateCompleted {
		t.Fatalf("a late copy of b's reclaim after its completion: %+v; want lost to the completed record", res)
	}

	// A tombstone, as a Claim shows it; a release after the read changes it.
	r := newRecord(now, "a")
	claim(t, s, r, now, false)
	if err := s.Release(ctx, r.ID, "a", now); err != nil {
		t.Fatal(err)
	}
	lost, err := s.Claim(ctx, again(r, "b", now), now)
	if err != nil || lost.Won || lost.Existing == nil || lost.Existing.State != idemkit.StateReleased {
		t.Fatalf("a claim over a tombstone: %+v %v; want shown the tombstone", lost, err)
	}
	rel := now.Add(time.Second)
	if err := s.Release(ctx, r.ID, "x", rel); err != nil {
		t.Fatalf("a release over a tombstone: %v", err)
	}
	if res := reclaim("a reclaim of a tombstone released again", again(r, "b", rel), lost.Existing, rel); res.Won || res.Existing == nil || res.Existing.Owner != "x" {
		t.Fatalf("a reclaim of a tombstone released again: %+v; want lost to x's tombstone", res)
	}
	lost, _ = s.Claim(ctx, again(r, "b", rel), rel)
	d := again(r, "d", rel)
	d.Fingerprint = "v1:sha256:another-request" // a released key is free for any request
	if res := reclaim("a reclaim of the tombstone as read", d, lost.Existing, rel); !res.Won {
		t.Fatalf("a reclaim of the tombstone as read lost to %+v", res.Existing)
	}
	sameRecord(t, mustGet(t, s, r.ID, rel), d)

	// A failed record; a marked one, read before its resolution.
	failed, fat := failedRecord(t, s)
	if res := reclaim("a reclaim of the failed record", again(failed, "e", fat), mustGet(t, s, failed.ID, fat), fat); !res.Won {
		t.Fatalf("a reclaim of the failed record lost to %+v", res.Existing)
	}
	m := markedRecord(t, s, now)
	at := m.LeaseUntil.Add(time.Second)
	readM := mustGet(t, s, m.ID, at)
	if _, err := s.Resolve(ctx, m.ID, m.Owner, idemkit.Resolution{As: idemkit.StateCompleted, Operator: "ops", Snapshot: sampleSnapshot()}, at); err != nil {
		t.Fatal(err)
	}
	if res := reclaim("a reclaim read before a resolution", again(m, "f", at), readM, at); res.Won || res.Existing == nil || res.Existing.State != idemkit.StateCompleted {
		t.Fatalf("a reclaim read before a resolution: %+v; want lost to the resolved record", res)
	}
}

// testReleaseTombstone: Release leaves a tombstone of its owner. It is no
// record to every method but Claim, which it refuses: a copy of any claim
// (which may land late, after the release) is shown it and stores nothing.
// So does a copy of the claim of a key released without ever being
// claimed (its claim was never confirmed). A release over a tombstone
// leaves its own.
func testReleaseTombstone(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	rel := now.Add(time.Second)
	r := newRecord(now, "a")
	claim(t, s, r, now, false)
	if err := s.Release(ctx, r.ID, "a", rel); err != nil {
		t.Fatalf("Release: %v", err)
	}

	// No record to every method.
	if _, err := s.Get(ctx, r.ID, rel); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("Get of a released key: %v, want ErrNotFound", err)
	}
	wantErr(t, "Extend of a released key", s.Extend(ctx, r.ID, "a", rel.Add(time.Minute), rel), idemkit.ErrNotOwner)
	err := s.MarkUnknown(ctx, r.ID, "a", rel)
	wantErr(t, "MarkUnknown of a released key", err, idemkit.ErrNotOwner)
	err = s.MarkIndeterminate(ctx, r.ID, "a", rel.Add(time.Minute))
	wantErr(t, "MarkIndeterminate of a released key", err, idemkit.ErrNotOwner)
	wantErr(t, "Complete of a released key", s.Complete(ctx, completed(r, rel, sampleSnapshot()), rel), idemkit.ErrNotOwner)
	_, err = s.Resolve(ctx, r.ID, r.Owner, idemkit.Resolution{As: idemkit.StateFailed, Operator: "ops"}, rel)
	wantErr(t, "Resolve of a released key", err, idemkit.ErrNotIndeterminate)
	if listed(t, s, r.Scope.Tenant, rel)[r.ID] {
		t.Fatal("a released key is listed indeterminate")
	}
	if sl, ok := staleLister(s); ok {
		recs, _, err := sl.ListStale(ctx, r.Scope.Tenant, "", 10, rel.Add(time.Hour))
		switch {
		case err != nil:
			t.Fatalf("ListStale: %v", err)
		case len(recs) > 0:
			t.Fatalf("a released key is listed stale: %+v", recs)
		}
	}

	// Copies of its owner's claim, and of another's, are refused, up to
	// MaxWriteDelay after the release.
	for _, at := range []time.Time{now, rel, rel.Add(idemkit.MaxWriteDelay - time.Second)} {
		refused(t, s, "a copy of the released owner's claim at +"+at.Sub(now).String(), r, at, idemkit.StateReleased, "a")
		refused(t, s, "a copy of another's claim at +"+at.Sub(now).String(), again(r, "b", now), at, idemkit.StateReleased, "a")
	}
	if err := s.Release(ctx, r.ID, "a", rel); err != nil {
		t.Fatalf("retried Release: %v", err)
	}
	refused(t, s, "a copy of the owner's claim after a retried release", r, now, idemkit.StateReleased, "a")

	// A key released without a record (a claim never confirmed): its
	// claim's copies lose too.
	u := newRecord(now, "c")
	if err := s.Release(ctx, u.ID, "c", rel); err != nil {
		t.Fatalf("Release of a key never claimed: %v", err)
	}
	refused(t, s, "a copy of an unconfirmed claim after its release", u, now, idemkit.StateReleased, "c")

	// A release over another's tombstone leaves its own: a reclaim read
	// before it is refused.
	if err := s.Release(ctx, u.ID, "d", rel.Add(time.Second)); err != nil {
		t.Fatalf("a release over a tombstone: %v, want nil", err)
	}
	refused(t, s, "a claim after a release over a tombstone", again(u, "e", rel), rel, idemkit.StateReleased, "d")
}

// testLateClaimAfterFailed: a copy of a claim that lands after the
// record of its run was resolved failed does not bring that run back: it
// is shown the failed record, which stays for another request; then that
// request's claim, and its completion.
func testLateClaimAfterFailed(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	m, at := failedRecord(t, s)
	late := again(m, m.Owner, m.CreatedAt) // the failed run's own claim, as it was sent
	late.LeaseUntil = m.LeaseUntil
	refused(t, s, "a late copy of the failed run's claim", late, m.CreatedAt, idemkit.StateFailed, m.Owner)
	if got := mustGet(t, s, m.ID, at); got.State != idemkit.StateFailed || got.Owner != m.Owner {
		t.Fatalf("after the late copy: %+v; want the failed record", got)
	}
	// Another request claims the key: the copy, landing later still, loses
	// to its claim and then to its completion.
	b := again(m, "b", at)
	if res := claim(t, s, b, at, false); !res.Won {
		t.Fatalf("a claim over the failed record lost to %+v", res.Existing)
	}
	refused(t, s, "the late copy after another's claim", late, m.CreatedAt, idemkit.StateInFlight, "b")
	if err := s.Complete(ctx, completed(b, at, sampleSnapshot()), at); err != nil {
		t.Fatal(err)
	}
	refused(t, s, "the late copy after another's completion", late, m.CreatedAt, idemkit.StateCompleted, "b")
}
