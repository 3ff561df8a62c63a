// Package storetest is the conformance suite for idemkit stores. Every
// store runs it in one line:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) idemkit.OperatorStore { return memstore.New() })
//	}
//
// newStore is called once per subtest and must return an empty store.
//
// A store is a box of versioned records (see idemkit.Store): it decides
// nothing about states, owners, leases or expiry, so the suite checks the
// box, not the rules of a record's life (those are the engine's, and are
// tested with it). It checks that:
//
//   - Get returns the record stored, in any state, live or not (a
//     released key's tombstone, an expired record), and ErrNotFound when
//     none is.
//   - Create stores a record where none is, and otherwise stores nothing
//     and returns the record met, whatever its state, live or expired.
//   - Replace stores a record only in place of the Version given, and
//     otherwise stores nothing and returns the record met, or ErrNotFound
//     when none is; a late copy of an older Create or Replace never lands
//     over a newer write.
//   - A write sent again after it landed (its answer lost) meets its own
//     Version, so that its sender recognises it.
//   - Every field of a record reads back as written, through every change
//     the engine makes (a Replace may write only what differs), within the
//     documented precision: times to the millisecond, ExpiresAt to the
//     second rounded up. Long scopes too, and a body over the store's item
//     limit, stored Omitted (Options.SnapshotLimit).
//   - A store neither changes nor keeps what it is given, and what it
//     returns is the caller's own.
//   - A record is kept past its ExpiresAt.
//   - A method whose context is done returns promptly an error that is
//     ErrStoreUnavailable, and changes nothing.
//   - Concurrent Creates of one ID, and concurrent Replaces of one Version,
//     store exactly one record; writes of distinct IDs do not interfere.
//   - The listings (ListIndeterminate; ListStale when the store lists stale
//     leases, errors.ErrUnsupported when ListsStale is false) filter by
//     tenant, page with the tokens they issue, leave expired records out,
//     and refuse a token they did not issue with ErrInvalidPage.
//   - Histories that the engine (idemkit.Guard, idemkit.Resolve) keeps
//     safe only with the store's help hold on it: a late copy of a claim
//     takes nothing, a decision made on a record that changed stores
//     nothing.
//
// [Options] name the capabilities a store has or lacks. A store that is
// only an idemkit.Store, such as a cache in front of another, runs the
// suite with the operator methods of the store it wraps.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
)

// Options tunes the suite for slow servers, and names the store's
// capabilities. The zero value runs the full suite.
type Options struct {
	// DistinctKeys is how many distinct IDs the bulk test creates.
	// Zero: 10,000.
	DistinctKeys int
	// Racers is how many goroutines race to write one record. Zero: 200.
	Racers int

	// The store's capabilities.

	// SnapshotLimit is the size in bytes of an incompressible body the store
	// cannot keep: a completed record holding one must be stored with its
	// snapshot Omitted, without its body, and the write succeed. Zero: the
	// store keeps bodies of any size, and the check is skipped.
	SnapshotLimit int
	// NonAtomic says the store's conditional writes are not atomic under
	// concurrency (an emulator that checks and writes in two steps): the
	// checks that race writers on one record are skipped, since they prove
	// nothing there. Such a store falls short of the idemkit.Store contract.
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
		race bool // races writers on one record
	}{
		{name: "Get", fn: testGet},
		{name: "Create", fn: testCreate},
		{name: "Replace", fn: testReplace},
		{name: "LateCopies", fn: testLateCopies},
		{name: "LostAnswer", fn: testLostAnswer},
		{name: "KeptPastExpiry", fn: testKeptPastExpiry},
		{name: "RecordRoundTrip", fn: testRecordRoundTrip},
		{name: "ReplaceRoundTrip", fn: testReplaceRoundTrip},
		{name: "SnapshotRoundTrip", fn: testSnapshotRoundTrip},
		{name: "LongScope", fn: testLongScope},
		{name: "SnapshotLimit", fn: func(t *testing.T, s idemkit.OperatorStore) { testSnapshotLimit(t, s, opts.SnapshotLimit) }},
		{name: "Ownership", fn: testOwnership},
		{name: "CanceledContext", fn: testCanceled},
		{name: "RaceCreate", fn: func(t *testing.T, s idemkit.OperatorStore) { testRaceCreate(t, s, opts.Racers) }, race: true},
		{name: "RaceReplace", fn: func(t *testing.T, s idemkit.OperatorStore) { testRaceReplace(t, s, opts.Racers) }, race: true},
		{name: "DistinctKeys", fn: func(t *testing.T, s idemkit.OperatorStore) { testDistinct(t, s, opts.DistinctKeys) }},
		{name: "ListIndeterminate", fn: testListIndeterminate},
		{name: "ListStale", fn: testListStale},
		{name: "HistoryLateClaimFindsTheTombstone", fn: testRefusedClaimNeverHoldsTheKey},
		{name: "HistoryTakeoverDecidedOnAChangedRecord", fn: testTakeoverOnAChangedRecord},
		{name: "HistoryDecisionOnTheRunChecked", fn: testDecisionOnTheRunChecked},
		{name: "HistoryLostAnswersRecognised", fn: testLostAnswers},
		{name: "HistoryLostClaimMarkedEarly", fn: testLostClaimMarkedEarly},
		{name: "HistoryLateCompletionAfterPending", fn: testLateCompletionAfterPending},
		{name: "HistoryOldKeyFreedAgain", fn: testOldKeyFreedAgain},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if opts.NonAtomic && tc.race {
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

// version returns a fresh Version, as a writer makes one for each write.
func version() string { return rand.Text() }

// newRecord returns a fresh in_flight claim by owner of a scope of its
// own, as the engine writes one at now, with a fresh Version.
func newRecord(now time.Time, owner string) *idemkit.Record {
	n := seq.Add(1)
	sc := idemkit.Scope{Tenant: fmt.Sprintf("tenant|%d", n), Operation: "POST /orders", Key: fmt.Sprintf("key:%d", n)}
	return &idemkit.Record{
		ID:          sc.ID(false),
		Scope:       sc,
		State:       idemkit.StateInFlight,
		Fingerprint: "v1:sha256:" + fmt.Sprint(n),
		Owner:       owner,
		Version:     version(),
		LeaseUntil:  now.Add(30 * time.Second),
		ReplayUntil: now.Add(24 * time.Hour),
		ExpiresAt:   now.Add(48 * time.Hour),
		CreatedAt:   now,
	}
}

// The records the engine writes in place of r (see idemkit.State), each
// with a fresh Version; r is not changed.

// again is a fresh claim by owner at at of r's key, with r's scope and
// fingerprint.
func again(r *idemkit.Record, owner string, at time.Time) *idemkit.Record {
	c := newRecord(at, owner)
	c.ID, c.Scope, c.Fingerprint = r.ID, r.Scope, r.Fingerprint
	return c
}

func renewed(r *idemkit.Record, until time.Time) *idemkit.Record {
	c := r.Clone()
	c.LeaseUntil, c.Version = until, version()
	return c
}

func completed(r *idemkit.Record, at time.Time, snap *idemkit.Snapshot) *idemkit.Record {
	c := r.Clone()
	c.State, c.Cause, c.CompletedAt, c.Snapshot, c.Version = idemkit.StateCompleted, "", at, snap, version()
	return c
}

func marked(r *idemkit.Record, cause idemkit.Cause, at time.Time) *idemkit.Record {
	c := r.Clone()
	c.State, c.Cause, c.Version = idemkit.StateIndeterminate, cause, version()
	if cause == idemkit.CauseOutcomeUnknown {
		c.LeaseUntil = at
	}
	return c
}

// resolved is r resolved by an operator at at, as idemkit.Resolve writes
// it: the resolution without its snapshot, the answer in the record's.
func resolved(r *idemkit.Record, as idemkit.State, snap *idemkit.Snapshot, at time.Time) *idemkit.Record {
	c := r.Clone()
	c.State, c.Version = as, version()
	c.Resolution = &idemkit.Resolution{As: as, Operator: "ops \u00e9", Reason: "checked with the processor", ResolvedAt: at}
	if as == idemkit.StateCompleted {
		c.Snapshot, c.CompletedAt = snap, at
		c.Resolution.ReplayUntil, c.Resolution.ExpiresAt = at.Add(24*time.Hour), at.Add(72*time.Hour)
		c.ReplayUntil, c.ExpiresAt = c.Resolution.ReplayUntil, c.Resolution.ExpiresAt
	}
	return c
}

// released is the tombstone the engine leaves in place of r at at.
func released(r *idemkit.Record, at time.Time) *idemkit.Record {
	return &idemkit.Record{ID: r.ID, Scope: r.Scope, State: idemkit.StateReleased, Fingerprint: r.Fingerprint, Owner: r.Owner,
		Version: version(), LeaseUntil: at, ExpiresAt: at, CreatedAt: at}
}

func sampleSnapshot() *idemkit.Snapshot {
	return &idemkit.Snapshot{
		Status: 201,
		Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/orders/1"}},
		Body:   []byte(`{"id":"1"}`),
	}
}

func mustGet(t *testing.T, s idemkit.Store, id string) *idemkit.Record {
	t.Helper()
	r, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	if r == nil {
		t.Fatalf("Get(%s): no record and no error", id)
	}
	return r
}

func mustCreate(t *testing.T, s idemkit.Store, r *idemkit.Record) {
	t.Helper()
	met, err := s.Create(context.Background(), r)
	if err != nil || met != nil {
		t.Fatalf("Create(%s, %s %s): met %+v, %v; want stored", r.ID, r.State, r.Owner, met, err)
	}
}

func mustReplace(t *testing.T, s idemkit.Store, r, prev *idemkit.Record) {
	t.Helper()
	met, err := s.Replace(context.Background(), r, prev)
	if err != nil || met != nil {
		t.Fatalf("Replace(%s, %s %s) of version %s: met %+v, %v; want stored", r.ID, r.State, r.Owner, prev.Version, met, err)
	}
}

// metOnly checks that a write of what met: no error, the record met is
// want (as stored), and the store still holds want.
func metOnly(t *testing.T, s idemkit.Store, what string, met *idemkit.Record, err error, want *idemkit.Record) {
	t.Helper()
	switch {
	case err != nil:
		t.Fatalf("%s: %v; want the %s record of %s met", what, err, want.State, want.Owner)
	case met == nil:
		t.Fatalf("%s: stored over the %s record of %s", what, want.State, want.Owner)
	}
	sameRecord(t, met, want)
	sameRecord(t, mustGet(t, s, want.ID), want)
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

// timeEq compares at millisecond precision.
func timeEq(a, b time.Time) bool {
	d := a.Sub(b)
	return a.IsZero() == b.IsZero() && d > -time.Millisecond && d < time.Millisecond
}

// expiresEq compares an ExpiresAt read back with the one written: at
// second precision, rounded up.
func expiresEq(got, want time.Time) bool {
	d := got.Sub(want)
	return got.IsZero() == want.IsZero() && d > -time.Millisecond && d < time.Second
}

// sameRecord checks that got is want, field by field, within the
// documented precision.
func sameRecord(t *testing.T, got, want *idemkit.Record) {
	t.Helper()
	if got == nil {
		t.Fatalf("record is nil, want %+v", want)
	}
	if got.ID != want.ID || got.Scope != want.Scope || got.State != want.State || got.Fingerprint != want.Fingerprint ||
		got.Owner != want.Owner || got.Version != want.Version || got.Cause != want.Cause {
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
		if !timeEq(c.got, c.want) {
			t.Fatalf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if !expiresEq(got.ExpiresAt, want.ExpiresAt) {
		t.Fatalf("ExpiresAt = %v, want %v (rounded up to the second at most)", got.ExpiresAt, want.ExpiresAt)
	}
	if (got.Snapshot == nil) != (want.Snapshot == nil) {
		t.Fatalf("Snapshot = %+v, want %+v", got.Snapshot, want.Snapshot)
	}
	if want.Snapshot != nil {
		sameSnapshot(t, got.Snapshot, want.Snapshot)
	}
	sameResolution(t, got.Resolution, want.Resolution)
}

func sameResolution(t *testing.T, got, want *idemkit.Resolution) {
	t.Helper()
	if (got == nil) != (want == nil) {
		t.Fatalf("Resolution = %+v, want %+v", got, want)
	}
	if want == nil {
		return
	}
	if got.As != want.As || got.Operator != want.Operator || got.Reason != want.Reason ||
		!timeEq(got.ResolvedAt, want.ResolvedAt) || !timeEq(got.ReplayUntil, want.ReplayUntil) || !timeEq(got.ExpiresAt, want.ExpiresAt) {
		t.Fatalf("Resolution = %+v, want %+v", got, want)
	}
	if (got.Snapshot == nil) != (want.Snapshot == nil) {
		t.Fatalf("Resolution.Snapshot = %+v, want %+v", got.Snapshot, want.Snapshot)
	}
	if want.Snapshot != nil {
		sameSnapshot(t, got.Snapshot, want.Snapshot)
	}
}

func sameSnapshot(t *testing.T, got, want *idemkit.Snapshot) {
	t.Helper()
	if got.Status != want.Status || got.Base64 != want.Base64 || got.Omitted != want.Omitted {
		t.Fatalf("snapshot status/base64/omitted = %d/%v/%v, want %d/%v/%v", got.Status, got.Base64, got.Omitted, want.Status, want.Base64, want.Omitted)
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
