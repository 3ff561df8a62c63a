package storetest

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
)

// zoo stores, each under a key of its own, a record in every state the
// engine writes, live or not, as the engine writes them, and returns them
// by name. now is near the real clock; the expired records expired before
// it.
func zoo(t *testing.T, s idemkit.Store, now time.Time) map[string]*idemkit.Record {
	t.Helper()
	past, earlier := now.Add(-72*time.Hour), now.Add(-time.Hour)
	stale := newRecord(past, "crashed")
	stale.ExpiresAt = now.Add(time.Hour)
	stale2 := newRecord(past, "crashed")
	stale2.ExpiresAt = now.Add(time.Hour)
	expiredDone := newRecord(past, "a")
	expiredDone.ExpiresAt = now.Add(-time.Minute)
	expiredDone = completed(expiredDone, past, sampleSnapshot())
	expired := newRecord(past, "a")
	expired.ExpiresAt = now.Add(-time.Minute)
	recs := map[string]*idemkit.Record{
		"a live lease":            newRecord(now, "a"),
		"a stale lease":           stale,
		"a completed record":      completed(newRecord(now, "a"), now, sampleSnapshot()),
		"an indeterminate record": marked(stale2, idemkit.CauseLeaseExpired, now),
		"an unknown outcome":      marked(newRecord(now, "a"), idemkit.CauseOutcomeUnknown, now),
		"a failed record":         resolved(marked(newRecord(earlier, "a"), idemkit.CauseLeaseExpired, earlier), idemkit.StateFailed, nil, now),
		"a resolved record":       resolved(marked(newRecord(earlier, "a"), idemkit.CauseOutcomeUnknown, earlier), idemkit.StateCompleted, sampleSnapshot(), now),
		"a released key":          released(newRecord(now, "a"), now),
		"an expired lease":        expired,
		"an expired completed":    expiredDone,
	}
	for _, name := range names(recs) {
		mustCreate(t, s, recs[name])
	}
	return recs
}

func names(recs map[string]*idemkit.Record) []string {
	var ns []string
	for n := range recs {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// testGet: Get returns the record stored in any state, live or not, and
// ErrNotFound when none is.
func testGet(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	missing := newRecord(now, "a")
	got, err := s.Get(ctx, missing.ID)
	if !errors.Is(err, idemkit.ErrNotFound) || errors.Is(err, idemkit.ErrStoreUnavailable) || got != nil {
		t.Fatalf("Get of an ID never stored: %+v, %v; want ErrNotFound", got, err)
	}
	recs := zoo(t, s, now)
	for _, name := range names(recs) {
		t.Run(name, func(t *testing.T) { sameRecord(t, mustGet(t, s, recs[name].ID), recs[name]) })
	}
}

// testCreate: Create stores a record where none is; where one is, in any
// state, live or expired, it stores nothing and returns it.
func testCreate(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	r := newRecord(now, "a")
	mustCreate(t, s, r)
	sameRecord(t, mustGet(t, s, r.ID), r)

	recs := zoo(t, s, now)
	for _, name := range names(recs) {
		t.Run(name, func(t *testing.T) {
			stored := recs[name]
			for _, c := range []*idemkit.Record{again(stored, "b", now), again(stored, stored.Owner, now)} {
				met, err := s.Create(ctx, c)
				metOnly(t, s, "a Create over "+name, met, err, stored)
			}
		})
	}
}

// testReplace: Replace stores a record in place of the Version given,
// whatever the state of the record it replaces; in place of another
// Version it stores nothing and returns the record stored; where none is,
// it stores nothing and answers ErrNotFound.
func testReplace(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()

	none := newRecord(now, "a")
	met, err := s.Replace(ctx, none, renewed(none, now.Add(time.Minute)))
	if !errors.Is(err, idemkit.ErrNotFound) || errors.Is(err, idemkit.ErrStoreUnavailable) || met != nil {
		t.Fatalf("Replace where no record is: %+v, %v; want ErrNotFound", met, err)
	}
	if got, err := s.Get(ctx, none.ID); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("Get after a Replace where no record is: %+v, %v; want ErrNotFound", got, err)
	}

	// In place of the version written, then of the version read.
	r0 := newRecord(now, "a")
	mustCreate(t, s, r0)
	r1 := renewed(r0, now.Add(time.Minute))
	mustReplace(t, s, r1, r0)
	sameRecord(t, mustGet(t, s, r0.ID), r1)
	r2 := renewed(r1, now.Add(2*time.Minute))
	mustReplace(t, s, r2, mustGet(t, s, r0.ID))
	sameRecord(t, mustGet(t, s, r0.ID), r2)
	// In place of a version no longer stored, or never stored.
	for what, prev := range map[string]*idemkit.Record{"the version created": r0, "the version replaced": r1, "a version never stored": renewed(r2, r2.LeaseUntil)} {
		met, err := s.Replace(ctx, renewed(r2, now.Add(time.Hour)), prev)
		metOnly(t, s, "a Replace of "+what, met, err, r2)
	}

	recs := zoo(t, s, now)
	for _, name := range names(recs) {
		t.Run(name, func(t *testing.T) {
			stored := recs[name]
			wrong := stored.Clone()
			wrong.Version = version()
			met, err := s.Replace(ctx, again(stored, "b", now), wrong)
			metOnly(t, s, "a Replace of another version of "+name, met, err, stored)
			c := again(stored, "b", now)
			mustReplace(t, s, c, stored)
			sameRecord(t, mustGet(t, s, c.ID), c)
		})
	}
}

// testLateCopies: a copy of a write that lands after newer writes (its
// sender moved on; it was held in the network) stores nothing: a Create
// finds the record, a Replace finds another Version. Each is a history of
// the engine's writes on one key.
func testLateCopies(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	late := func(what string, r, prev, want *idemkit.Record) {
		t.Helper()
		var met *idemkit.Record
		var err error
		if prev == nil {
			met, err = s.Create(ctx, r)
		} else {
			met, err = s.Replace(ctx, r, prev)
		}
		metOnly(t, s, what, met, err, want)
	}

	// A takeover decided on a stale lease read before its renewal, then
	// made on the renewed one; a rival's decided on the same; a copy of
	// the takeover after its completion; a copy of the first claim.
	stale := newRecord(now.Add(-time.Minute), "crashed")
	stale.LeaseUntil = now.Add(-time.Second)
	mustCreate(t, s, stale)
	read := mustGet(t, s, stale.ID)
	r1 := renewed(stale, now.Add(time.Minute))
	mustReplace(t, s, r1, stale)
	b := again(stale, "b", now)
	late("a takeover decided on the record before its renewal", b, read, r1)
	mustReplace(t, s, b, r1)
	late("a rival's takeover of the record b replaced", again(stale, "c", now), r1, b)
	done := completed(b, now, sampleSnapshot())
	mustReplace(t, s, done, b)
	late("a copy of b's takeover after its completion", b, r1, done)
	late("a copy of the first claim after all", stale, nil, done)

	// A claim whose copy lands after the key was released; a claim decided
	// on a tombstone released again since.
	a := newRecord(now, "a")
	mustCreate(t, s, a)
	tomb := released(a, now)
	mustReplace(t, s, tomb, a)
	late("a copy of the released claim", a, nil, tomb)
	late("another's claim over the tombstone", again(a, "b", now), nil, tomb)
	tomb2 := released(again(a, "x", now), now.Add(time.Second))
	mustReplace(t, s, tomb2, tomb)
	late("a claim decided on the tombstone released again", again(a, "b", now), tomb, tomb2)
	d := again(a, "d", now)
	d.Fingerprint = "v1:sha256:another-request" // a released key is free for any request
	mustReplace(t, s, d, tomb2)
	sameRecord(t, mustGet(t, s, a.ID), d)

	// A key released before its claim was confirmed: the engine creates
	// the tombstone, and the claim's copy finds it.
	u := newRecord(now, "u")
	ut := released(u, now)
	mustCreate(t, s, ut)
	late("a copy of an unconfirmed claim after its release", u, nil, ut)

	// A failed record: a copy of its run's claim finds it; another
	// request's claim replaces it; the copy then finds that claim, and
	// then its completion.
	m := marked(newRecord(now.Add(-time.Hour), "m"), idemkit.CauseOutcomeUnknown, now.Add(-time.Hour))
	mustCreate(t, s, m)
	failed := resolved(m, idemkit.StateFailed, nil, now)
	mustReplace(t, s, failed, m)
	first := newRecord(now.Add(-time.Hour), "m")
	first.ID, first.Scope, first.Fingerprint = m.ID, m.Scope, m.Fingerprint
	late("a copy of the failed run's claim", first, nil, failed)
	late("a resolution decided on the record before it failed", resolved(m, idemkit.StateCompleted, sampleSnapshot(), now), m, failed)
	e := again(m, "e", now)
	mustReplace(t, s, e, failed)
	late("a copy of the failed run's claim after another's", first, nil, e)
	edone := completed(e, now, sampleSnapshot())
	mustReplace(t, s, edone, e)
	late("a copy of the failed run's claim after another's completion", first, nil, edone)
	late("a copy of the claim over the failed record after its completion", e, failed, edone)
}

// testLostAnswer: a write sent again after it landed (its answer lost)
// meets its own Version, and the record as written.
func testLostAnswer(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	r := newRecord(now, "a")
	mustCreate(t, s, r)
	met, err := s.Create(ctx, r)
	metOnly(t, s, "a Create sent again", met, err, r)
	done := completed(r, now, sampleSnapshot())
	mustReplace(t, s, done, r)
	met, err = s.Replace(ctx, done, r)
	metOnly(t, s, "a Replace sent again", met, err, done)
	if met.Version != done.Version {
		t.Fatalf("a Replace sent again met version %q, want its own %q", met.Version, done.Version)
	}
}

// testKeptPastExpiry: a record is kept past its ExpiresAt: Get returns
// it and Create meets it, however long ago it expired by the caller's
// clock, and the engine's claim in its place replaces it.
func testKeptPastExpiry(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	// By the real clock: a store must not read its own clock to hide a
	// record.
	soon := newRecord(time.Now(), "a")
	soon.LeaseUntil, soon.ExpiresAt = time.Now().Add(200*time.Millisecond), time.Now().Add(500*time.Millisecond)
	mustCreate(t, s, soon)
	time.Sleep(time.Until(soon.ExpiresAt.Truncate(time.Second).Add(time.Second + 200*time.Millisecond)))
	sameRecord(t, mustGet(t, s, soon.ID), soon)
	met, err := s.Create(ctx, again(soon, "b", time.Now()))
	metOnly(t, s, "a Create over a record expired by the real clock", met, err, soon)

	now := base()
	z := zoo(t, s, now)
	for _, r := range []*idemkit.Record{z["an expired lease"], z["an expired completed"], z["a released key"]} {
		sameRecord(t, mustGet(t, s, r.ID), r)
		met, err := s.Create(ctx, again(r, "b", now))
		metOnly(t, s, "a Create over a "+string(r.State)+" record expired", met, err, r)
		c := again(r, "b", now)
		mustReplace(t, s, c, r)
		sameRecord(t, mustGet(t, s, r.ID), c)
	}
}

// testCanceled: every method called with a done context returns promptly
// an error that is ErrStoreUnavailable, and changes nothing. ListStale is
// called when the store lists stale leases.
func testCanceled(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	r := newRecord(now, "a")
	mustCreate(t, s, r)
	fresh := newRecord(now, "a")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := []struct {
		name string
		call func() error
	}{
		{"Get", func() error { _, err := s.Get(ctx, r.ID); return err }},
		{"Create", func() error { _, err := s.Create(ctx, fresh); return err }},
		{"Create over a record", func() error { _, err := s.Create(ctx, again(r, "b", now)); return err }},
		{"Replace", func() error { _, err := s.Replace(ctx, completed(r, now, sampleSnapshot()), r); return err }},
		{"ListIndeterminate", func() error { _, _, err := s.ListIndeterminate(ctx, "", "", 10, now); return err }},
	}
	if sl, ok := staleLister(s); ok {
		calls = append(calls, struct {
			name string
			call func() error
		}{"ListStale", func() error { _, _, err := sl.ListStale(ctx, "", "", 10, now.Add(time.Minute)); return err }})
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
	sameRecord(t, mustGet(t, s, r.ID), r)
	if got, err := s.Get(context.Background(), fresh.ID); !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("a Create with a canceled context stored %+v (%v)", got, err)
	}
}
