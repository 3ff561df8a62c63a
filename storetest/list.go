package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
)

// foreignPages are page tokens no store issues: an operator's typo, a
// number out of range. Each must be refused with ErrInvalidPage, never
// read as a position (nor panic).
var foreignPages = []string{"not a token we issued", "-1", "-"}

// others stores, in tenant, records that a listing at at must leave out
// whatever it lists: a live lease, a completed, a failed and a released
// record, an indeterminate and an in_flight record expired at at, and the
// record of another state than the listing's (want). It returns their IDs.
func others(t *testing.T, s idemkit.Store, tenant string, now, at time.Time, want idemkit.State) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	add := func(r *idemkit.Record) {
		r.Scope.Tenant = tenant
		r.ID = r.Scope.ID(false)
		mustCreate(t, s, r)
		ids[r.ID] = true
	}
	live := newRecord(now, "a")
	live.LeaseUntil = at.Add(time.Hour)
	short := func() *idemkit.Record {
		r := newRecord(now, "a")
		r.LeaseUntil = now.Add(time.Second)
		return r
	}
	add(live)
	add(completed(short(), now, sampleSnapshot()))
	add(resolved(marked(short(), idemkit.CauseLeaseExpired, now), idemkit.StateFailed, nil, now))
	add(released(short(), now))
	gone := short()
	gone.ExpiresAt = now.Add(90 * time.Second)
	add(gone)
	gone = short()
	gone.ExpiresAt = now.Add(90 * time.Second)
	add(marked(gone, idemkit.CauseLeaseExpired, now))
	switch want {
	case idemkit.StateIndeterminate:
		add(short()) // a stale lease
	default:
		add(marked(short(), idemkit.CauseOutcomeUnknown, now))
	}
	return ids
}

// listPages reads every page of list, at most 2 records each, checks
// every record with check, and returns the records of ours listed (others
// may be another test's in a shared store) and the number of pages. Ours
// must be listed once each, ordered by lease.
func listPages(t *testing.T, name string, list func(page string) ([]*idemkit.Record, string, error), ours map[string]*idemkit.Record, check func(*idemkit.Record)) (got map[string]bool, pages int) {
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
			t.Fatalf("%s: page of %d records, limit 2", name, len(recs))
		}
		for _, r := range recs {
			check(r)
			want := ours[r.ID]
			if want == nil {
				continue // another test's record in a shared store
			}
			if got[r.ID] {
				t.Fatalf("%s: record %s listed twice", name, r.ID)
			}
			sameRecord(t, r, want)
			if r.LeaseUntil.Before(last) {
				t.Fatalf("%s: listing is not ordered by lease", name)
			}
			last = r.LeaseUntil
			got[r.ID] = true
		}
		if next == "" {
			return got, pages
		}
		page = next
		if pages > 100 {
			t.Fatalf("%s: listing does not end", name)
		}
	}
}

// listing stores 2n records of state (indeterminate, or in_flight stale
// at now plus a minute), alternately in two tenants of their own, with
// leases ending a second apart, and the others of each tenant. It returns
// the tenants, the records stored by tenant ("" for all), the others'
// IDs, and a time they are all listed at.
func listing(t *testing.T, s idemkit.Store, n int, state idemkit.State) (tenants []string, want map[string]map[string]*idemkit.Record, other map[string]bool, at time.Time) {
	t.Helper()
	now := base()
	at = now.Add(2 * time.Minute)
	n0 := seq.Add(1)
	tenants = []string{fmt.Sprintf("acme:%d", n0), fmt.Sprintf("acme:%d:x", n0)}
	want = map[string]map[string]*idemkit.Record{"": {}, tenants[0]: {}, tenants[1]: {}}
	for i := 0; i < 2*n; i++ {
		r := newRecord(now, "a")
		r.Scope.Tenant = tenants[i%2]
		r.ID = r.Scope.ID(false)
		r.LeaseUntil = now.Add(time.Duration(i+1) * time.Second)
		if state == idemkit.StateIndeterminate {
			r = marked(r, idemkit.CauseLeaseExpired, now)
		}
		mustCreate(t, s, r)
		want[""][r.ID] = r
		want[r.Scope.Tenant][r.ID] = r
	}
	other = others(t, s, tenants[0], now, at, state)
	for id := range others(t, s, tenants[1], now, at, state) {
		other[id] = true
	}
	return tenants, want, other, at
}

// checkListing lists every tenant of a listing, two records a page, and
// checks what it lists: the records of ours wanted, each once, ordered by
// lease, a tenant's alone, nothing of others; then a limit of zero or
// less (the store's default) and the foreign page tokens.
func checkListing(t *testing.T, name string, list func(tenant, page string, limit int) ([]*idemkit.Record, string, error),
	tenants []string, want map[string]map[string]*idemkit.Record, other map[string]bool, ok func(*idemkit.Record) bool) {
	t.Helper()
	for _, tenant := range []string{"", tenants[0], tenants[1]} {
		what := fmt.Sprintf("%s(%q)", name, tenant)
		got, pages := listPages(t, what, func(page string) ([]*idemkit.Record, string, error) { return list(tenant, page, 2) }, want[""], func(r *idemkit.Record) {
			switch {
			case !ok(r):
				t.Fatalf("%s listed a %q record, lease until %v", what, r.State, r.LeaseUntil)
			case tenant != "" && r.Scope.Tenant != tenant:
				t.Fatalf("%s listed a record of tenant %q", what, r.Scope.Tenant)
			case other[r.ID]:
				t.Fatalf("%s listed %s, a %s record it must leave out", what, r.ID, r.State)
			}
		})
		if len(got) != len(want[tenant]) {
			t.Fatalf("%s listed %d of %d records", what, len(got), len(want[tenant]))
		}
		if pages < 2 {
			t.Fatalf("%s: %d records in %d page(s) of 2", what, len(got), pages)
		}
	}
	checkDefaultLimit(t, name, list, tenants[0], len(want[tenants[0]]))
	for _, page := range foreignPages {
		if _, _, err := list("", page, 2); !errors.Is(err, idemkit.ErrInvalidPage) {
			t.Fatalf("%s with the foreign page token %q: %v, want ErrInvalidPage", name, page, err)
		}
	}
}

// checkDefaultLimit: a limit of zero or less is the store's default: the
// listing of tenant is paged as usual and ends with its n records listed.
func checkDefaultLimit(t *testing.T, name string, list func(tenant, page string, limit int) ([]*idemkit.Record, string, error), tenant string, n int) {
	t.Helper()
	for _, limit := range []int{0, -1} {
		got := map[string]bool{}
		page := ""
		for pages := 0; ; pages++ {
			recs, next, err := list(tenant, page, limit)
			if err != nil {
				t.Fatalf("%s(limit %d): %v", name, limit, err)
			}
			for _, r := range recs {
				got[r.ID] = true
			}
			if next == "" {
				break
			}
			if pages > 100 {
				t.Fatalf("%s(limit %d) does not end: %d pages, %d records", name, limit, pages, len(got))
			}
			page = next
		}
		if len(got) != n {
			t.Fatalf("%s(limit %d) listed %d of %d records", name, limit, len(got), n)
		}
	}
}

func testListIndeterminate(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	tenants, want, other, at := listing(t, s, 4, idemkit.StateIndeterminate)
	checkListing(t, "ListIndeterminate", func(tenant, page string, limit int) ([]*idemkit.Record, string, error) {
		return s.ListIndeterminate(ctx, tenant, page, limit, at)
	}, tenants, want, other, func(r *idemkit.Record) bool { return r.State == idemkit.StateIndeterminate && r.Live(at) })
}

func testListStale(t *testing.T, s idemkit.OperatorStore) {
	ctx := context.Background()
	sl, ok := s.(idemkit.StaleLister)
	if !ok {
		t.Skip("store does not implement idemkit.StaleLister")
	}
	if !sl.ListsStale() {
		// It says so, and its listing refuses rather than list nothing.
		if _, _, err := sl.ListStale(ctx, "", "", 1, base()); !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("ListStale of a store whose ListsStale is false: %v, want errors.ErrUnsupported", err)
		}
		t.Skip("store does not list stale leases as configured (ListsStale is false)")
	}
	tenants, want, other, at := listing(t, s, 3, idemkit.StateInFlight)
	checkListing(t, "ListStale", func(tenant, page string, limit int) ([]*idemkit.Record, string, error) {
		return sl.ListStale(ctx, tenant, page, limit, at)
	}, tenants, want, other, func(r *idemkit.Record) bool {
		return r.State == idemkit.StateInFlight && r.LeaseExpired(at) && r.Live(at)
	})
	// Before the leases end, none of ours is listed.
	var first time.Time
	for _, r := range want[""] {
		if first.IsZero() || r.LeaseUntil.Before(first) {
			first = r.LeaseUntil
		}
	}
	recs, _, err := sl.ListStale(ctx, tenants[1], "", 100, first.Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if want[""][r.ID] != nil {
			t.Fatalf("listed %s before its lease ended", r.ID)
		}
	}
}
