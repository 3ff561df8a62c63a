package storetest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/recordid"
	"github.com/idemkit/idemkit/internal/testing/testkit/scribble"
)

// testRecordRoundTrip: every field of a record reads back as written,
// through Get and as the record a Create meets, within the documented
// precision: times to the millisecond, ExpiresAt to the second rounded up.
func testRecordRoundTrip(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	// Off the millisecond and the second, as a real clock reads.
	now := base().Add(1234567 * time.Nanosecond)
	r := newRecord(now, "owner-token-\u00e9")
	r.Scope = idemkit.Scope{Tenant: "t|1:2 \u00fc", Operation: "PATCH /orders/1", Key: `"quoted" key`}
	r.ID = r.Scope.ID(true)
	r.Fingerprint = "v2:sha256:" + strings.Repeat("f", 64)
	r.Version = "version-" + strings.Repeat("v", 40)
	r.LeaseUntil = now.Add(1234 * time.Millisecond)
	r.ExpiresAt = now.Add(48*time.Hour + 1500*time.Millisecond)
	r = marked(r, idemkit.CauseOutcomeUnknown, now.Add(time.Second))
	snap := &idemkit.Snapshot{Status: 200, Header: http.Header{"Content-Type": {"image/png"}, "X-Multi": {"a", "b, c"}},
		Body: []byte("iVBORw0KGgo="), Base64: true}
	full := resolved(r, idemkit.StateCompleted, snap, now.Add(90*time.Second+777*time.Microsecond))
	for _, rec := range []*idemkit.Record{r, full} {
		t.Run(string(rec.State), func(t *testing.T) {
			rec = rec.Clone()
			rec.Scope.Key += " " + string(rec.State)
			rec.ID = rec.Scope.ID(true)
			mustCreate(t, s, rec)
			sameRecord(t, mustGet(t, s, rec.ID), rec)
			met, err := s.Create(ctx, again(rec, "b", now))
			metOnly(t, s, "a Create over the record", met, err, rec)
		})
	}
	if full.Cause == "" || full.Resolution == nil || full.Resolution.ReplayUntil.IsZero() || full.Resolution.ExpiresAt.IsZero() || full.CompletedAt.IsZero() {
		t.Fatalf("the round trip left fields unset: %+v", full)
	}
}

// testReplaceRoundTrip: each change the engine makes to a record reads
// back exactly, fields it clears included, whether the Version replaced is
// given as written or as read: a store that writes only what differs from
// prev must write all of it.
func testReplaceRoundTrip(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	step := func(what string, prev, next *idemkit.Record, asRead bool) *idemkit.Record {
		t.Helper()
		if asRead {
			prev = mustGet(t, s, prev.ID)
		}
		met, err := s.Replace(context.Background(), next, prev)
		if err != nil || met != nil {
			t.Fatalf("%s: met %+v, %v; want stored", what, met, err)
		}
		sameRecord(t, mustGet(t, s, next.ID), next)
		return next
	}
	c := newRecord(now.Add(-time.Hour), "a")
	mustCreate(t, s, c)
	c = step("a renewal", c, renewed(c, now.Add(-time.Minute)), false)
	c = step("a mark of the stale lease", c, marked(c, idemkit.CauseLeaseExpired, now), true)
	c = step("a failed resolution", c, resolved(c, idemkit.StateFailed, nil, now), false)
	c = step("a claim in place of the failed record", c, again(c, "b", now), true)
	c = step("a mark of an unknown outcome", c, marked(c, idemkit.CauseOutcomeUnknown, now), false)
	step("a late completion", c, completed(c, now.Add(time.Second), sampleSnapshot()), true)

	k := newRecord(now.Add(-time.Hour), "a")
	mustCreate(t, s, k)
	k = step("a mark of an unknown outcome", k, marked(k, idemkit.CauseOutcomeUnknown, now.Add(-time.Hour)), true)
	k = step("a completed resolution", k, resolved(k, idemkit.StateCompleted, sampleSnapshot(), now), false)
	n := again(k, "c", now.Add(96*time.Hour))
	n.Fingerprint = "v1:sha256:another-request" // in place of the expired record
	k = step("a claim in place of an expired record", k, n, true)
	k = step("a release", k, released(k, now.Add(96*time.Hour)), false)
	k = step("a claim in place of the tombstone", k, again(k, "d", now.Add(96*time.Hour)), true)
	step("a completion", k, completed(k, now.Add(96*time.Hour), &idemkit.Snapshot{Status: 204}), false)
}

func snapshots() map[string]*idemkit.Snapshot {
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	large := make([]byte, 200<<10)
	rand.New(rand.NewSource(1)).Read(large)
	text := bytes.Repeat([]byte(`{"sku":"A-1","quantity":1},`), 4000)
	return map[string]*idemkit.Snapshot{
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
}

// testSnapshotRoundTrip: a stored response reads back as written, header
// values, body bytes and flags, stored by a completion (Replace) or with
// its record (Create); the caller's snapshot is read, never written.
func testSnapshotRoundTrip(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	for name, snap := range snapshots() {
		t.Run(name, func(t *testing.T) {
			r := newRecord(now, "a")
			mustCreate(t, s, r)
			done := completed(r, now, snap)
			before := snap.Clone()
			mustReplace(t, s, done, r)
			// Its body may be a response string's own bytes.
			sameSnapshot(t, snap, before)
			sameRecord(t, mustGet(t, s, r.ID), done)
			met, err := s.Create(context.Background(), again(r, "b", now))
			metOnly(t, s, "a Create over the completed record", met, err, done)

			c := completed(newRecord(now, "a"), now, snap)
			mustCreate(t, s, c)
			sameSnapshot(t, snap, before)
			sameRecord(t, mustGet(t, s, c.ID), c)
		})
	}
}

// testLongScope: scopes whose readable ID would pass DynamoDB's 2048-byte
// partition key limit (a 1 KB tenant, a 1.5 KB operation, a 255-byte key)
// are stored, read back whole, replaced and listed like any other, per
// operation and account-wide; scopes differing in one byte stay apart.
func testLongScope(t *testing.T, s idemkit.OperatorStore) {
	now := base()
	ctx := context.Background()
	for _, aw := range []bool{false, true} {
		n := seq.Add(1)
		tenant := fmt.Sprintf("tenant:%d:", n)
		tenant += strings.Repeat("t", recordid.MaxTenantLen-len(tenant))
		sc := idemkit.Scope{Tenant: tenant, Operation: "POST /" + strings.Repeat("o", 1500), Key: strings.Repeat("k", 255)}
		rec := func(sc idemkit.Scope) *idemkit.Record {
			r := newRecord(now, "a")
			r.Scope, r.ID = sc, sc.ID(aw)
			return r
		}
		r := rec(sc)
		if len(r.ID) > recordid.MaxLen {
			t.Fatalf("ID of %d bytes, over recordid.MaxLen", len(r.ID))
		}
		mustCreate(t, s, r)
		sameRecord(t, mustGet(t, s, r.ID), r)

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
		mustCreate(t, s, o)
		sameRecord(t, mustGet(t, s, r.ID), r)

		c := completed(r, now.Add(time.Second), sampleSnapshot())
		mustReplace(t, s, c, r)
		sameRecord(t, mustGet(t, s, r.ID), c)
		m := marked(o, idemkit.CauseLeaseExpired, now)
		mustReplace(t, s, m, o)
		sameRecord(t, mustGet(t, s, o.ID), m)

		recs, _, err := s.ListIndeterminate(ctx, tenant, "", 10, now)
		if err != nil {
			t.Fatalf("ListIndeterminate of a long tenant: %v", err)
		}
		if len(recs) != 1 {
			t.Fatalf("ListIndeterminate(%d-byte tenant) = %+v, want the record of %q", len(tenant), recs, o.ID)
		}
		sameRecord(t, recs[0], m)
	}
}

// testSnapshotLimit: a completed record whose body the store cannot keep
// is stored Omitted, without its body, with its status and headers; the
// write succeeds.
func testSnapshotLimit(t *testing.T, s idemkit.OperatorStore, limit int) {
	if limit <= 0 {
		t.Skip("store keeps bodies of any size (Options.SnapshotLimit is zero)")
	}
	now := base()
	body := make([]byte, limit+1)
	rand.New(rand.NewSource(2)).Read(body)
	snap := &idemkit.Snapshot{Status: 201, Header: http.Header{"Content-Type": {"application/octet-stream"}, "Location": {"/orders/9"}}, Body: body}
	r := newRecord(now, "a")
	mustCreate(t, s, r)
	done := completed(r, now, snap)
	if met, err := s.Replace(context.Background(), done, r); err != nil || met != nil {
		t.Fatalf("completion with a %d-byte body: met %+v, %v; want it stored Omitted", len(body), met, err)
	}
	want := done.Clone()
	want.Snapshot = &idemkit.Snapshot{Status: 201, Header: snap.Header, Omitted: true}
	sameRecord(t, mustGet(t, s, r.ID), want)
}

// testOwnership: a store neither changes nor keeps what it is given, and
// what it returns is the caller's own: changing a record after Create or
// Replace, or a record returned by Get, Create, Replace or a listing,
// leaves what is stored as it was.
func testOwnership(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	now := base()
	unchanged := func(what string, got, want *idemkit.Record) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s changed what it was given:\n%+v\nwant %+v", what, got, want)
		}
	}

	r := newRecord(now, "a")
	want := r.Clone()
	mustCreate(t, s, r)
	unchanged("Create", r, want)
	scribble.Record(r)
	sameRecord(t, mustGet(t, s, want.ID), want)
	g1, g2 := mustGet(t, s, want.ID), mustGet(t, s, want.ID)
	scribble.Record(g1)
	sameRecord(t, g2, want)
	sameRecord(t, mustGet(t, s, want.ID), want)

	prev := want.Clone()
	c := completed(want, now, sampleSnapshot())
	wantC, wantPrev := c.Clone(), prev.Clone()
	mustReplace(t, s, c, prev)
	unchanged("Replace (the record)", c, wantC)
	unchanged("Replace (prev)", prev, wantPrev)
	// The caller changes the response it completed with (an adapter
	// adding headers of its own): a later claim meets the response as
	// stored. A store or cache keeping the caller's snapshot would replay
	// the changed one.
	scribble.Record(c)
	scribble.Record(prev)
	sameRecord(t, mustGet(t, s, want.ID), wantC)

	b := again(want, "b", now)
	wantB := b.Clone()
	met, err := s.Create(ctx, b)
	metOnly(t, s, "a Create over the completed record", met, err, wantC)
	unchanged("Create of a record met", b, wantB)
	if met == b || met.Snapshot == b.Snapshot {
		t.Fatal("Create returned the record it was given")
	}
	scribble.Record(met)
	sameRecord(t, mustGet(t, s, want.ID), wantC)
	met, err = s.Replace(ctx, b, wantPrev)
	metOnly(t, s, "a Replace of the version replaced", met, err, wantC)
	unchanged("Replace of a record met", b, wantB)
	scribble.Record(met)
	sameRecord(t, mustGet(t, s, want.ID), wantC)
	// A write sent again meets its own record: a copy, not the record
	// sent.
	met, err = s.Replace(ctx, wantC, wantPrev)
	metOnly(t, s, "a Replace sent again", met, err, wantC)
	if met == wantC || met.Snapshot == wantC.Snapshot {
		t.Fatal("Replace sent again returned the record it was given")
	}

	// The records the listings return are the caller's own too.
	m := marked(newRecord(now, "a"), idemkit.CauseOutcomeUnknown, now)
	mustCreate(t, s, m)
	for _, l := range listedRecords(t, s, m.Scope.Tenant, now) {
		scribble.Record(l)
	}
	sameRecord(t, mustGet(t, s, m.ID), m)
	if sl, ok := staleLister(s); ok {
		k := newRecord(now, "a")
		k.LeaseUntil = now.Add(time.Second)
		mustCreate(t, s, k)
		recs, _, err := sl.ListStale(ctx, k.Scope.Tenant, "", 10, now.Add(time.Minute))
		if err != nil {
			t.Fatalf("ListStale: %v", err)
		}
		if len(recs) == 0 {
			t.Fatal("ListStale listed nothing")
		}
		for _, l := range recs {
			scribble.Record(l)
		}
		sameRecord(t, mustGet(t, s, k.ID), k)
	}
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
