package idemkit_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/memstore"
)

// resolveGrace is the clock skew Resolve tolerates after a lease ends.
const resolveGrace = time.Minute

// claimAt stores an in_flight record of scope k claimed at now whose lease
// ends at leaseUntil.
func claimAt(t *testing.T, s idemkit.Store, k string, now, leaseUntil time.Time) *idemkit.Record {
	t.Helper()
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: k}
	rec := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: "v1:sha256:aa", Owner: "owner-" + k, Version: "claim-" + k,
		LeaseUntil: leaseUntil, ReplayUntil: now.Add(24 * time.Hour), ExpiresAt: now.Add(7 * 24 * time.Hour), CreatedAt: now}
	if met, err := s.Create(context.Background(), rec); err != nil || met != nil {
		t.Fatalf("claim: %+v %v", met, err)
	}
	return rec
}

// rewrite stores prev changed by change, in place of prev, as the engine
// writes a change.
func rewrite(t *testing.T, s idemkit.Store, prev *idemkit.Record, change func(*idemkit.Record)) *idemkit.Record {
	t.Helper()
	out := prev.Clone()
	change(out)
	out.Version = prev.Version + "+"
	if met, err := s.Replace(context.Background(), out, prev); err != nil || met != nil {
		t.Fatalf("rewrite: met %+v, %v", met, err)
	}
	return out
}

// marked is prev marked indeterminate for cause at now, as the engine
// marks it (a mark of the outcome unknown ends the lease at now).
func marked(cause idemkit.Cause, now time.Time) func(*idemkit.Record) {
	return func(r *idemkit.Record) {
		r.State, r.Cause = idemkit.StateIndeterminate, cause
		if cause == idemkit.CauseOutcomeUnknown {
			r.LeaseUntil = now
		}
	}
}

func decision(as idemkit.State) idemkit.Resolution {
	res := idemkit.Resolution{As: as, Operator: "ops", Reason: "checked the processor"}
	if as == idemkit.StateCompleted {
		res.Snapshot = &idemkit.Snapshot{Status: 201}
	}
	return res
}

// TestResolveMayBeRunning: Resolve refuses a decision while the record's
// execution may still be running, in every state, from the lease the
// record holds: until a minute of clock skew after it, and for a failed
// decision, which frees the key, MaxWriteDelay longer, until no copy of the
// execution's claim can land. A refusal says from when the decision is
// accepted and changes nothing; from then on the decision is made.
func TestResolveMayBeRunning(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	for _, tc := range []struct {
		name  string
		state idemkit.State
		// seed returns the record's lease end.
		seed func(t *testing.T, s idemkit.Store) time.Time
	}{
		{"indeterminate, marked by a retry whose clock runs ahead", idemkit.StateIndeterminate, func(t *testing.T, s idemkit.Store) time.Time {
			rec := claimAt(t, s, "k", now, now.Add(10*time.Minute))
			return rewrite(t, s, rec, marked(idemkit.CauseLeaseExpired, now.Add(11*time.Minute))).LeaseUntil
		}},
		{"indeterminate, marked unknown by its owner", idemkit.StateIndeterminate, func(t *testing.T, s idemkit.Store) time.Time {
			rec := claimAt(t, s, "k", now, now.Add(10*time.Minute))
			return rewrite(t, s, rec, marked(idemkit.CauseOutcomeUnknown, now.Add(time.Minute))).LeaseUntil
		}},
		{"in_flight", idemkit.StateInFlight, func(t *testing.T, s idemkit.Store) time.Time {
			return claimAt(t, s, "k", now, now.Add(time.Minute)).LeaseUntil
		}},
	} {
		for _, d := range []struct {
			as   idemkit.State
			wait time.Duration // after the lease
		}{
			{idemkit.StateCompleted, resolveGrace},
			{idemkit.StateFailed, resolveGrace + idemkit.MaxWriteDelay},
		} {
			t.Run(tc.name+"/"+string(d.as), func(t *testing.T) {
				s := memstore.New()
				lease := tc.seed(t, s)
				id := idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: "k"}.ID(false)
				from := lease.Add(d.wait)
				for _, at := range []time.Time{now, lease, from.Add(-time.Millisecond)} {
					_, _, err := idemkit.Resolve(ctx, s, id, decision(d.as), at)
					var re *idemkit.ResolveError
					if !errors.Is(err, idemkit.ErrMayBeRunning) || !errors.As(err, &re) || !re.ResolvableAt.Equal(from) || re.Record.State != tc.state {
						t.Fatalf("at lease%+v: %v, want ErrMayBeRunning resolvable from %v", at.Sub(lease), err, from)
					}
					if got, err := getLive(ctx, s, id, at); err != nil || got.State != tc.state || got.Resolution != nil {
						t.Fatalf("after a refusal: %+v %v, want it unchanged", got, err)
					}
				}
				got, was, err := idemkit.Resolve(ctx, s, id, decision(d.as), from)
				if err != nil || was != tc.state || got.State != d.as || got.Resolution == nil || !got.Resolution.ResolvedAt.Equal(from) {
					t.Fatalf("at %v: %+v was %s, %v; want resolved as %s", from, got, was, err, d.as)
				}
			})
		}
	}
}

// answer is a completed decision replaying a 201 with header h.
func answer(h http.Header) idemkit.Resolution {
	return idemkit.Resolution{As: idemkit.StateCompleted, Operator: "ops", Snapshot: &idemkit.Snapshot{Status: 201, Header: h}}
}

// TestResolveRefusals: Resolve refuses, writing nothing, a record that is
// not there, one already completed or failed, and a decision that is
// neither completed nor failed, completed without an answer, or with an
// answer holding a header a replay never carries.
func TestResolveRefusals(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	later := now.Add(time.Hour)
	s := memstore.New()
	stale := claimAt(t, s, "stale", now, now.Add(time.Minute))
	done := rewrite(t, s, claimAt(t, s, "done", now, now.Add(time.Minute)), func(r *idemkit.Record) {
		r.State, r.CompletedAt, r.Snapshot = idemkit.StateCompleted, now, &idemkit.Snapshot{Status: 201}
	})
	failed := rewrite(t, s, claimAt(t, s, "failed", now, now.Add(time.Minute)), marked(idemkit.CauseLeaseExpired, later))
	if _, _, err := idemkit.Resolve(ctx, s, failed.ID, decision(idemkit.StateFailed), later); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		id    string
		res   idemkit.Resolution
		err   error
		state idemkit.State // with a *ResolveError: the record's
	}{
		{"not found", "none", decision(idemkit.StateFailed), idemkit.ErrNotFound, ""},
		{"completed", done.ID, decision(idemkit.StateFailed), idemkit.ErrNotIndeterminate, idemkit.StateCompleted},
		{"failed", failed.ID, decision(idemkit.StateCompleted), idemkit.ErrNotIndeterminate, idemkit.StateFailed},
		{"no decision", stale.ID, idemkit.Resolution{Operator: "ops"}, idemkit.ErrRecordInvalid, ""},
		{"indeterminate is no decision", stale.ID, decision(idemkit.StateIndeterminate), idemkit.ErrRecordInvalid, ""},
		{"completed without an answer", stale.ID, idemkit.Resolution{As: idemkit.StateCompleted, Operator: "ops"}, idemkit.ErrRecordInvalid, ""},
		{"an answer with a cookie", stale.ID, answer(http.Header{"Set-Cookie": {"s=1"}}), idemkit.ErrRecordInvalid, ""},
		{"an answer with a trace id", stale.ID, answer(http.Header{"X-Amzn-Trace-Id": {"Root=1"}}), idemkit.ErrRecordInvalid, ""},
		{"an answer with a non-ASCII name", stale.ID, answer(http.Header{"\u017fet-Cookie": {"s=1"}}), idemkit.ErrRecordInvalid, ""},
		{"an answer with an escape sequence", stale.ID, answer(http.Header{"Location": {"/a\x1b[2J"}}), idemkit.ErrRecordInvalid, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := idemkit.Resolve(ctx, s, tc.id, tc.res, later)
			if !errors.Is(err, tc.err) || out != nil {
				t.Fatalf("%+v, %v; want %v", out, err, tc.err)
			}
			var re *idemkit.ResolveError
			if errors.As(err, &re) != (tc.state != "") || (re != nil && re.Record.State != tc.state) {
				t.Fatalf("%v: want a *ResolveError only for a record in state %q", err, tc.state)
			}
		})
	}
	if got, err := getLive(ctx, s, stale.ID, later); err != nil || got.State != idemkit.StateInFlight {
		t.Fatalf("stale record after refused decisions: %+v %v, want it in_flight still", got, err)
	}
}
