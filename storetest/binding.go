package storetest

import (
	"context"
	"errors"
	"fmt"
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

// lostToNothing checks a claim refused by a tombstone: lost, with no
// record shown (the caller tries again), and nothing stored.
func lostToNothing(t *testing.T, s idemkit.OperatorStore, what string, r *idemkit.Record, at time.Time) {
	t.Helper()
	res := claim(t, s, r, at, true)
	if res.Won || res.Existing != nil {
		t.Fatalf("%s: won %v, existing %+v; want lost, with no record", what, res.Won, res.Existing)
	}
	if _, err := s.Get(context.Background(), r.ID, at); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("%s: then Get: %v, want ErrNotFound", what, err)
	}
}

// testClaimBound: a key stays bound to its first request. A claim with
// another fingerprint, or another operation (under account-wide keys the
// operation is not in the ID: the same ID, another Scope.Operation),
// neither replaces a record resolved failed nor takes over a stale lease:
// it loses to the record and is shown it, which stays as it was. The same
// request, by another owner, wins over both.
func testClaimBound(t *testing.T, s idemkit.OperatorStore) {
	failed, fat := failedRecord(t, s)
	stale, sat := staleRecord(t, s)
	for _, tc := range []struct {
		name  string
		old   *idemkit.Record
		state idemkit.State
		at    time.Time
	}{
		{"failed", failed, idemkit.StateFailed, fat},
		{"stale", stale, idemkit.StateInFlight, sat},
	} {
		for _, other := range []struct {
			what   string
			change func(*idemkit.Record)
		}{
			{"fingerprint", func(r *idemkit.Record) { r.Fingerprint = "v1:sha256:another-body" }},
			{"operation", func(r *idemkit.Record) { r.Scope.Operation = "POST /refunds" }},
		} {
			n := again(tc.old, "b", tc.at)
			other.change(n)
			res := claim(t, s, n, tc.at, true)
			if res.Won {
				t.Fatalf("%s record: a claim with another %s won", tc.name, other.what)
			}
			if ex := res.Existing; ex == nil || ex.State != tc.state || ex.Owner != tc.old.Owner || ex.Fingerprint != tc.old.Fingerprint || ex.Scope != tc.old.Scope {
				t.Fatalf("%s record: a claim with another %s lost to %+v; want the %s record", tc.name, other.what, ex, tc.state)
			}
			if got := mustGet(t, s, tc.old.ID, tc.at); got.State != tc.state || got.Owner != tc.old.Owner || got.Fingerprint != tc.old.Fingerprint {
				t.Fatalf("%s record after a claim with another %s: %+v", tc.name, other.what, got)
			}
		}
		if res := claim(t, s, again(tc.old, "b", tc.at), tc.at, true); !res.Won {
			t.Fatalf("%s record: the same request lost to %+v", tc.name, res.Existing)
		}
		if got := mustGet(t, s, tc.old.ID, tc.at); got.Owner != "b" || got.State != idemkit.StateInFlight {
			t.Fatalf("%s record after the same request's claim: %+v", tc.name, got)
		}
	}
}

// testReleaseTombstone: Release leaves a tombstone of its owner. It is no
// record to every method and to another owner's claim, but a copy of its
// owner's claim (which may land late, after the release) loses, shown no
// record, and leaves nothing stored. So does a copy of the claim of a key
// released without ever being claimed (its claim was never confirmed). A
// release never replaces a tombstone made after it. A tombstone lives at
// least MaxWriteDelay, then expires like any record.
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

	// Its owner's claim loses, at its own time and up to MaxWriteDelay
	// after the release.
	for _, at := range []time.Time{now, rel, rel.Add(idemkit.MaxWriteDelay - time.Second)} {
		lostToNothing(t, s, "a copy of the released owner's claim at +"+at.Sub(now).String(), r, at)
	}
	if err := s.Release(ctx, r.ID, "a", rel); err != nil {
		t.Fatalf("retried Release: %v", err)
	}
	lostToNothing(t, s, "a copy of the owner's claim after a retried release", r, now)
	b := again(r, "b", now)
	if res := claim(t, s, b, now, false); !res.Won || res.Existing != nil {
		t.Fatalf("another owner's claim: won %v, existing %+v; want won, replacing no record", res.Won, res.Existing)
	}
	sameRecord(t, mustGet(t, s, r.ID, rel), b)
	if res := claim(t, s, r, now, true); res.Won || res.Existing == nil || res.Existing.Owner != "b" {
		t.Fatalf("a copy of the released owner's claim after another's: won %v, existing %+v; want lost to b's record", res.Won, res.Existing)
	}

	// A key released without a record (a claim never confirmed): its
	// claim's copies lose too.
	u := newRecord(now, "c")
	if err := s.Release(ctx, u.ID, "c", rel); err != nil {
		t.Fatalf("Release of a key never claimed: %v", err)
	}
	lostToNothing(t, s, "a copy of an unconfirmed claim after its release", u, now)
	if res := claim(t, s, again(u, "d", rel), rel, false); !res.Won {
		t.Fatalf("a claim after the release of a key never claimed lost to %+v", res.Existing)
	}

	// A copy of an older release does not replace a later tombstone.
	l := newRecord(now, "a")
	claim(t, s, l, now, false)
	if err := s.Release(ctx, l.ID, "a", rel); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, l.ID, "x", rel.Add(-500*time.Millisecond)); err != nil {
		t.Fatalf("an older release over a tombstone: %v, want nil (no record)", err)
	}
	lostToNothing(t, s, "a copy of the later release's owner's claim", l, now)

	// It expires like any record.
	e := newRecord(now, "a")
	claim(t, s, e, now, false)
	if err := s.Release(ctx, e.ID, "a", rel); err != nil {
		t.Fatal(err)
	}
	later := rel.Add(idemkit.MaxWriteDelay + time.Hour)
	if res := claim(t, s, e, later, false); !res.Won {
		t.Fatalf("the owner's claim an hour after the tombstone's MaxWriteDelay lost to %+v", res.Existing)
	}
}

// testLateClaimAfterFailed: a copy of a claim that lands after the
// record of its run was resolved failed does not bring that run back: it
// loses to the failed record, which stays for another request; then to
// that request's claim, and its completion.
func testLateClaimAfterFailed(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	m, at := failedRecord(t, s)
	late := again(m, m.Owner, m.CreatedAt) // the failed run's own claim, as it was sent
	late.LeaseUntil = m.LeaseUntil
	res := claim(t, s, late, m.CreatedAt, true)
	if res.Won {
		t.Fatal("a late copy of the failed run's claim won over its failed record")
	}
	if res.Existing == nil || res.Existing.State != idemkit.StateFailed || res.Existing.Owner != m.Owner {
		t.Fatalf("a late copy of the failed run's claim lost to %+v; want the failed record", res.Existing)
	}
	if got := mustGet(t, s, m.ID, at); got.State != idemkit.StateFailed || got.Owner != m.Owner {
		t.Fatalf("after the late copy: %+v; want the failed record", got)
	}
	// Another request claims the key: the copy, landing later still, loses
	// to its claim and then to its completion.
	b := again(m, "b", at)
	if res := claim(t, s, b, at, false); !res.Won {
		t.Fatalf("a claim over the failed record lost to %+v", res.Existing)
	}
	if res := claim(t, s, late, m.CreatedAt, true); res.Won || res.Existing == nil || res.Existing.Owner != "b" {
		t.Fatalf("the late copy after another's claim: won %v, existing %+v; want lost to b's record", res.Won, res.Existing)
	}
	if err := s.Complete(ctx, completed(b, at, sampleSnapshot()), at); err != nil {
		t.Fatal(err)
	}
	if res := claim(t, s, late, m.CreatedAt, true); res.Won || res.Existing == nil || res.Existing.State != idemkit.StateCompleted {
		t.Fatalf("the late copy after another's completion: won %v, existing %+v; want lost to the completed record", res.Won, res.Existing)
	}
}

// testTombstoneFencesEveryOwner: a tombstone refuses the claims of every
// owner released on it, not only the last: a release over a tombstone,
// even one made after it (by a clock ahead, or a copy landing late),
// adds its owner. Beyond MaxReleasedOwners the set starts again with the
// releasing owner, who is fenced still.
func testTombstoneFencesEveryOwner(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	rel := now.Add(time.Second)
	a := newRecord(now, "a")
	claim(t, s, a, now, false)
	if err := s.Release(ctx, a.ID, "a", rel); err != nil {
		t.Fatalf("Release: %v", err)
	}
	// b's claim attempts all failed (one is on its way); b frees the key
	// by a clock behind a's.
	b := again(a, "b", rel.Add(-200*time.Millisecond))
	if err := s.Release(ctx, a.ID, "b", b.CreatedAt); err != nil {
		t.Fatalf("an earlier release over a tombstone: %v, want nil", err)
	}
	lostToNothing(t, s, "a copy of b's claim after b's release under a's tombstone", b, b.CreatedAt)
	lostToNothing(t, s, "a copy of a's claim after b's release", a, now)
	// A later release (c's) keeps a and b fenced.
	c := again(a, "c", rel.Add(time.Second))
	if err := s.Release(ctx, a.ID, "c", c.CreatedAt); err != nil {
		t.Fatalf("a later release over a tombstone: %v, want nil", err)
	}
	for _, r := range []*idemkit.Record{a, b, c} {
		lostToNothing(t, s, "a copy of "+r.Owner+"'s claim after three releases", r, r.CreatedAt)
	}
	d := again(a, "d", c.CreatedAt)
	if res := claim(t, s, d, c.CreatedAt, false); !res.Won {
		t.Fatalf("a new owner's claim over the tombstone lost to %+v", res.Existing)
	}

	// A key released by more owners than the set holds.
	k := newRecord(now, "k0")
	for i := 0; i <= idemkit.MaxReleasedOwners; i++ {
		if err := s.Release(ctx, k.ID, fmt.Sprintf("k%d", i), rel); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}
	last := again(k, fmt.Sprintf("k%d", idemkit.MaxReleasedOwners), rel)
	lostToNothing(t, s, "a copy of the last owner's claim past the set's bound", last, rel)
}

// testTimeFence: a claim made more than FenceSkew before the key was
// freed (a tombstone's latest release, a failed record's resolution) was
// sent before it: it loses, whoever its owner. One made within FenceSkew
// (a clock behind the one that freed the key) wins.
func testTimeFence(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	rel := now.Add(time.Minute)
	a := newRecord(now, "a")
	claim(t, s, a, now, false)
	if err := s.Release(context.Background(), a.ID, "a", rel); err != nil {
		t.Fatalf("Release: %v", err)
	}
	early := rel.Add(-idemkit.FenceSkew - time.Millisecond)
	lostToNothing(t, s, "another owner's claim sent before the release", again(a, "b", early), early)
	within := rel.Add(-idemkit.FenceSkew + time.Millisecond)
	if res := claim(t, s, again(a, "c", within), within, false); !res.Won {
		t.Fatalf("a claim within FenceSkew of the release lost to %+v", res.Existing)
	}

	m, at := failedRecord(t, s)
	early = at.Add(-idemkit.FenceSkew - time.Millisecond)
	res := claim(t, s, again(m, "b", early), early, true)
	if res.Won || res.Existing == nil || res.Existing.State != idemkit.StateFailed {
		t.Fatalf("a claim sent before the failed resolution: won %v, existing %+v; want lost to the failed record", res.Won, res.Existing)
	}
	within = at.Add(-idemkit.FenceSkew + time.Millisecond)
	if res := claim(t, s, again(m, "c", within), within, false); !res.Won {
		t.Fatalf("a claim within FenceSkew of the failed resolution lost to %+v", res.Existing)
	}
}
