package storetest

import (
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

// testClaimBound: a key stays bound to its first request. A claim with
// another fingerprint, or another operation (under account-wide keys the
// operation is not in the ID: the same ID, another Scope.Operation),
// neither replaces a record resolved failed nor takes over a stale lease:
// it loses to the record and is shown it, which stays as it was. The same
// request, by another owner, wins over both.
func testClaimBound(t *testing.T, s idemkit.Store) {
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
