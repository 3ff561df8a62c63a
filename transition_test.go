package idemkit

import (
	"errors"
	"testing"
	"time"
)

// TestTransitions is the table of a record's life: for each change asked
// of each stored record, the record next writes, or its refusal. Every
// rule of State is a row.
func TestTransitions(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := t0.Add(10 * time.Second)
	scope := Scope{Tenant: "t", Operation: "op", Key: "k"}
	rec := func(st State, owner string, mod ...func(*Record)) *Record {
		r := &Record{ID: "t/op/k", Scope: scope, State: st, Fingerprint: "v2:first", Owner: owner, Version: owner + "-" + string(st),
			LeaseUntil: t0.Add(time.Minute), ReplayUntil: t0.Add(time.Hour), ExpiresAt: t0.Add(2 * time.Hour), CreatedAt: t0}
		for _, m := range mod {
			m(r)
		}
		return r
	}
	stale := func(r *Record) { r.LeaseUntil = now }                         // the lease ends at now
	expired := func(r *Record) { r.ExpiresAt = now }                        // the record expires at now
	leaseEnded := func(r *Record) { r.Cause = CauseLeaseExpired }           // marked by a request that judged its lease ended
	resolved := func(r *Record) { r.Resolution = &Resolution{As: r.State} } // an operator decided
	claim := &Record{ID: "t/op/k", Scope: scope, State: StateInFlight, Fingerprint: "v2:second", Owner: "new",
		LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
	run := rec(StateInFlight, "a")
	snap := &Snapshot{Status: 201, Body: []byte("done")}
	res := &Resolution{As: StateCompleted, Snapshot: snap, Operator: "op", ResolvedAt: now}
	failedRes := &Resolution{As: StateFailed, Operator: "op", ResolvedAt: now}

	type want struct {
		err   error
		check func(t *testing.T, out *Record)
	}
	claimed := func(fp string) want {
		return want{check: func(t *testing.T, out *Record) {
			if out.Owner != "new" || out.State != StateInFlight || out.Fingerprint != fp || !out.LeaseUntil.Equal(claim.LeaseUntil) {
				t.Errorf("claimed %+v, want the new claim with fingerprint %s", out, fp)
			}
		}}
	}
	is := func(st State, cause Cause, f func(*Record) bool) want {
		return want{check: func(t *testing.T, out *Record) {
			if out.State != st || out.Cause != cause || (f != nil && !f(out)) {
				t.Errorf("wrote %+v, want %s (cause %q)", out, st, cause)
			}
		}}
	}
	refused := func(err error) want { return want{err: err} }
	tombstone := is(StateReleased, "", func(r *Record) bool {
		return r.Owner == "a" && r.ExpiresAt.Equal(now) && r.LeaseUntil.Equal(now) && r.Scope == scope
	})

	for _, tc := range []struct {
		name string
		prev *Record
		c    change
		want want
	}{
		// Claims.
		{"claim, none", nil, change{op: opClaim, rec: claim}, claimed("v2:second")},
		{"claim, tombstone", rec(StateReleased, "a"), change{op: opClaim, rec: claim}, claimed("v2:second")},
		{"claim, expired completed", rec(StateCompleted, "a", expired), change{op: opClaim, rec: claim}, claimed("v2:second")},
		{"claim, expired in flight", rec(StateInFlight, "a", expired), change{op: opClaim, rec: claim}, claimed("v2:second")},
		{"claim, live lease", rec(StateInFlight, "a"), change{op: opClaim, rec: claim, takeover: true, replace: "a-in_flight"}, refused(errHeld)},
		{"claim, completed", rec(StateCompleted, "a"), change{op: opClaim, rec: claim, replace: "a-completed"}, refused(errHeld)},
		{"claim, indeterminate", rec(StateIndeterminate, "a", stale), change{op: opClaim, rec: claim, takeover: true, replace: "a-indeterminate"}, refused(errHeld)},
		{"claim, failed, not judged", rec(StateFailed, "a"), change{op: opClaim, rec: claim}, refused(errHeld)},
		{"claim, failed, judged", rec(StateFailed, "a"), change{op: opClaim, rec: claim, replace: "a-failed"}, claimed("v2:first")},
		{"claim, failed, another version judged", rec(StateFailed, "a"), change{op: opClaim, rec: claim, replace: "a-old"}, refused(errHeld)},
		{"claim, stale lease, takeover", rec(StateInFlight, "a", stale), change{op: opClaim, rec: claim, takeover: true, replace: "a-in_flight"}, claimed("v2:first")},
		{"claim, stale lease, FailClosed", rec(StateInFlight, "a", stale), change{op: opClaim, rec: claim, replace: "a-in_flight"}, refused(errHeld)},
		{"claim, stale lease, not judged", rec(StateInFlight, "a", stale), change{op: opClaim, rec: claim, takeover: true}, refused(errHeld)},
		{"claim, itself marked early", rec(StateIndeterminate, "new", leaseEnded), change{op: opClaim, rec: claim},
			is(StateInFlight, "", func(out *Record) bool { return out.Owner == "new" && out.LeaseUntil.Equal(t0.Add(time.Minute)) })},
		{"claim, itself marked, lease ended", rec(StateIndeterminate, "new", leaseEnded, stale), change{op: opClaim, rec: claim}, refused(errHeld)},
		{"claim, itself marked, resolved", rec(StateIndeterminate, "new", leaseEnded, resolved), change{op: opClaim, rec: claim}, refused(errHeld)},
		{"claim, itself marked unknown", rec(StateIndeterminate, "new", func(r *Record) { r.Cause = CauseOutcomeUnknown }), change{op: opClaim, rec: claim}, refused(errHeld)},
		{"claim, another's claim marked early", rec(StateIndeterminate, "a", leaseEnded), change{op: opClaim, rec: claim}, refused(errHeld)},
		{"old key claim, none", nil, change{op: opClaim, rec: claim, judged: true}, refused(errHeld)},
		{"old key claim, tombstone", rec(StateReleased, "a"), change{op: opClaim, rec: claim, judged: true, replace: "a-released"}, refused(errHeld)},
		{"old key claim, failed", rec(StateFailed, "a"), change{op: opClaim, rec: claim, judged: true, replace: "a-failed"}, claimed("v2:first")},

		// The run's completion.
		{"complete, in flight", run, change{op: opComplete, rec: run, snap: snap, completedAt: now}, is(StateCompleted, "", func(r *Record) bool {
			return r.Snapshot.Status == 201 && r.CompletedAt.Equal(now) && r.Owner == "a" && r.ExpiresAt.Equal(run.ExpiresAt)
		})},
		{"complete, stale lease", rec(StateInFlight, "a", stale), change{op: opComplete, rec: run, snap: snap}, is(StateCompleted, "", nil)},
		{"complete, marked stale", rec(StateIndeterminate, "a", func(r *Record) { r.Cause = CauseLeaseExpired }), change{op: opComplete, rec: run, snap: snap}, is(StateCompleted, "", nil)},
		{"complete, resolved", rec(StateCompleted, "a", resolved), change{op: opComplete, rec: run, snap: snap}, refused(ErrNotOwner)},
		{"complete, indeterminate resolved failed", rec(StateFailed, "a", resolved), change{op: opComplete, rec: run, snap: snap}, refused(ErrNotOwner)},
		{"complete, taken over", rec(StateInFlight, "b"), change{op: opComplete, rec: run, snap: snap}, refused(ErrNotOwner)},
		{"complete, released", rec(StateReleased, "a"), change{op: opComplete, rec: run, snap: snap}, refused(ErrNotOwner)},
		{"complete, expired", rec(StateInFlight, "a", expired), change{op: opComplete, rec: run, snap: snap}, refused(ErrNotOwner)},
		{"complete, none", nil, change{op: opComplete, rec: run, snap: snap}, refused(ErrNotOwner)},

		// The run's release.
		{"release, in flight", run, change{op: opRelease, rec: run}, tombstone},
		{"release, none (a claim never confirmed)", nil, change{op: opRelease, rec: run}, tombstone},
		{"release, expired", rec(StateCompleted, "b", expired), change{op: opRelease, rec: run}, tombstone},
		{"release, tombstone", rec(StateReleased, "b"), change{op: opRelease, rec: run}, tombstone},
		{"release, taken over", rec(StateInFlight, "b"), change{op: opRelease, rec: run}, refused(ErrNotOwner)},
		{"release, completed", rec(StateCompleted, "a"), change{op: opRelease, rec: run}, refused(ErrNotOwner)},
		{"release, marked", rec(StateIndeterminate, "a"), change{op: opRelease, rec: run}, refused(ErrNotOwner)},

		// The run's renewals.
		{"extend", run, change{op: opExtend, rec: run, until: run.LeaseUntil.Add(time.Minute)}, is(StateInFlight, "", func(r *Record) bool {
			return r.LeaseUntil.Equal(run.LeaseUntil.Add(time.Minute))
		})},
		{"extend, back", run, change{op: opExtend, rec: run, until: run.LeaseUntil.Add(-time.Millisecond)}, refused(errNoChange)},
		{"extend, the same lease", run, change{op: opExtend, rec: run, until: run.LeaseUntil}, is(StateInFlight, "", nil)},
		{"extend, stale lease", rec(StateInFlight, "a", stale), change{op: opExtend, rec: run, until: now.Add(time.Minute)}, is(StateInFlight, "", nil)},
		{"extend, marked", rec(StateIndeterminate, "a"), change{op: opExtend, rec: run, until: now.Add(time.Hour)}, refused(ErrNotOwner)},
		{"extend, taken over", rec(StateInFlight, "b"), change{op: opExtend, rec: run, until: now.Add(time.Hour)}, refused(ErrNotOwner)},
		{"extend, expired", rec(StateInFlight, "a", expired), change{op: opExtend, rec: run, until: now.Add(time.Hour)}, refused(ErrNotOwner)},

		// The run's outcome unknown.
		{"mark unknown", run, change{op: opMarkUnknown, rec: run}, is(StateIndeterminate, CauseOutcomeUnknown, func(r *Record) bool { return r.LeaseUntil.Equal(now) })},
		{"mark unknown, taken over", rec(StateInFlight, "b"), change{op: opMarkUnknown, rec: run}, refused(ErrNotOwner)},
		{"mark unknown, completed", rec(StateCompleted, "a"), change{op: opMarkUnknown, rec: run}, refused(ErrNotOwner)},

		// A request marks a stale lease.
		{"mark stale", rec(StateInFlight, "a", stale), change{op: opMarkStale, owner: "a"}, is(StateIndeterminate, CauseLeaseExpired, func(r *Record) bool { return r.LeaseUntil.Equal(now) })},
		{"mark stale, live lease", run, change{op: opMarkStale, owner: "a"}, refused(ErrNotOwner)},
		{"mark stale, another run", rec(StateInFlight, "b", stale), change{op: opMarkStale, owner: "a"}, refused(ErrNotOwner)},
		{"mark stale, completed", rec(StateCompleted, "a", stale), change{op: opMarkStale, owner: "a"}, refused(ErrNotOwner)},
		{"mark stale, expired", rec(StateInFlight, "a", stale, expired), change{op: opMarkStale, owner: "a"}, refused(ErrNotOwner)},

		// An operator resolves the version checked.
		{"resolve completed", rec(StateIndeterminate, "a"), change{op: opResolve, res: res, checked: "a-indeterminate"}, is(StateCompleted, "", func(r *Record) bool {
			return r.Snapshot.Status == 201 && r.Resolution.As == StateCompleted && r.Resolution.Snapshot == nil && r.CompletedAt.Equal(now)
		})},
		{"resolve failed", rec(StateIndeterminate, "a", func(r *Record) { r.Cause = CauseOutcomeUnknown }), change{op: opResolve, res: failedRes, checked: "a-indeterminate"},
			is(StateFailed, CauseOutcomeUnknown, func(r *Record) bool { return r.Snapshot == nil && r.Resolution.As == StateFailed })},
		{"resolve, another version", rec(StateIndeterminate, "b"), change{op: opResolve, res: res, checked: "a-indeterminate"}, refused(ErrNotIndeterminate)},
		{"resolve, in flight", run, change{op: opResolve, res: res, checked: "a-in_flight"}, refused(ErrNotIndeterminate)},
		{"resolve, resolved", rec(StateFailed, "a", resolved), change{op: opResolve, res: res, checked: "a-failed"}, refused(ErrNotIndeterminate)},
		{"resolve, expired", rec(StateIndeterminate, "a", expired), change{op: opResolve, res: res, checked: "a-indeterminate"}, refused(ErrNotIndeterminate)},
		{"resolve, none", nil, change{op: opResolve, res: res, checked: "a-indeterminate"}, refused(ErrNotIndeterminate)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.prev.Clone()
			out, err := next(tc.prev, tc.c, now)
			if tc.want.err != nil {
				if !errors.Is(err, tc.want.err) || out != nil {
					t.Fatalf("next = %+v, %v; want the refusal %v", out, err, tc.want.err)
				}
			} else {
				if err != nil {
					t.Fatalf("next refused: %v", err)
				}
				if out.Version != "" || out.ID != "t/op/k" {
					t.Errorf("wrote ID %q Version %q: want the key's ID, no Version (the writer sets it)", out.ID, out.Version)
				}
				tc.want.check(t, out)
			}
			if tc.prev != nil && !sameRecord(before, tc.prev) {
				t.Errorf("next changed the record it was given: %+v, was %+v", tc.prev, before)
			}
		})
	}
}

// sameRecord compares the fields next may touch.
func sameRecord(a, b *Record) bool {
	return a.State == b.State && a.Owner == b.Owner && a.Version == b.Version && a.Cause == b.Cause &&
		a.LeaseUntil.Equal(b.LeaseUntil) && a.ExpiresAt.Equal(b.ExpiresAt) && a.Fingerprint == b.Fingerprint &&
		(a.Snapshot == nil) == (b.Snapshot == nil) && (a.Resolution == nil) == (b.Resolution == nil)
}
