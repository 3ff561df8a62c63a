package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/recordid"
)

// seven stores seven indeterminate records of tenant acme, leases ended
// 7..1 hours ago (k1 oldest), plus one of another tenant and one completed
// record, and returns the acme keys oldest first.
func seven(f *fixture) []string {
	var keys []string
	for i := 1; i <= 7; i++ {
		k := fmt.Sprintf("k%d", i)
		f.seedIndeterminate(scopeOf(k), time.Now().Add(-time.Duration(8-i)*time.Hour))
		keys = append(keys, k)
	}
	f.seedIndeterminate(idemkit.Scope{Tenant: "globex", Operation: "POST /orders", Key: "g1"}, time.Now().Add(-30*time.Minute))
	f.seedCompleted(scopeOf("done"), &idemkit.Snapshot{Status: 201})
	return keys
}

// Seven records with --limit 3 come in pages of 3, 3 and 1, oldest lease
// first, each page naming the next one's token.
func TestListPages(t *testing.T) {
	f := newFixture(t)
	want := seven(f)
	var got []string
	page := ""
	for round := 0; ; round++ {
		args := []string{"list", "--tenant", "acme", "--limit", "3", "--output", "json"}
		if page != "" {
			args = append(args, "--page", page)
		}
		code, stdout, stderr := f.run(args...)
		wantCode(t, code, exitOK, stdout, stderr)
		out := decode[listJSON](t, stdout)
		if len(out.Records) > 3 {
			t.Fatalf("page %d holds %d records, limit 3", round, len(out.Records))
		}
		for _, r := range out.Records {
			if r.State != "indeterminate" || r.Tenant != "acme" {
				t.Errorf("listed %+v", r)
			}
			if want := int64(time.Since(*r.LeaseUntil) / time.Second); r.LeaseEndedSecondsAgo < want-5 || r.LeaseEndedSecondsAgo > want+5 {
				t.Errorf("%s: lease_ended_seconds_ago %d, want about %d", r.Key, r.LeaseEndedSecondsAgo, want)
			}
			got = append(got, r.Key)
		}
		page = out.NextPage
		if page == "" {
			break
		}
		if round > 7 {
			t.Fatalf("listing does not end: %v", got)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("listed %v, want %v (oldest lease first)", got, want)
	}
}

func TestListTable(t *testing.T) {
	f := newFixture(t)
	seven(f)
	code, stdout, stderr := f.run("list", "--limit", "3")
	wantCode(t, code, exitOK, stdout, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if !regexp.MustCompile(`^TENANT\s+OPERATION\s+KEY\s+AGE\s+LEASE ENDED\s+CREATED$`).MatchString(lines[0]) {
		t.Errorf("header %q", lines[0])
	}
	if len(lines) != 6 || !regexp.MustCompile(`^acme\s+POST /orders\s+k1\s+7h00m\s+\S+Z\s+\S+Z$`).MatchString(lines[1]) {
		t.Fatalf("output:\n%s", stdout)
	}
	m := regexp.MustCompile(`More records: run again with --page (\S+)$`).FindStringSubmatch(lines[5])
	if m == nil {
		t.Fatalf("no next-page line:\n%s", stdout)
	}
	// Across tenants, --all follows every token: 8 records, globex last.
	code, stdout, stderr = f.run("list", "--limit", "3", "--all")
	wantCode(t, code, exitOK, stdout, stderr)
	lines = strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 9 || !strings.HasPrefix(lines[8], "globex") || strings.Contains(stdout, "More records") {
		t.Fatalf("--all output:\n%s", stdout)
	}
	code, stdout, stderr = f.run("list", "--limit", "3", "--page", m[1])
	wantCode(t, code, exitOK, stdout, stderr)
	// The keys listed, read from the KEY column: the page token on the
	// last line is base64 and may hold "k3" by chance.
	var keys []string
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n")[1:] {
		if f := strings.Fields(l); len(f) > 3 && f[0] == "acme" {
			keys = append(keys, f[3])
		}
	}
	if strings.Join(keys, " ") != "k4 k5 k6" {
		t.Fatalf("second page lists %v, want k4 k5 k6:\n%s", keys, stdout)
	}
}

func TestListEmpty(t *testing.T) {
	f := newFixture(t)
	f.seedCompleted(scopeOf("done"), &idemkit.Snapshot{Status: 201})
	code, stdout, stderr := f.run("list")
	wantCode(t, code, exitOK, stdout, stderr)
	if strings.TrimSpace(stdout) != "No indeterminate records on this page." {
		t.Errorf("output %q", stdout)
	}
	code, stdout, stderr = f.run("list", "--output", "json")
	wantCode(t, code, exitOK, stdout, stderr)
	if strings.Join(strings.Fields(stdout), "") != `{"records":[],"next_page":""}` {
		t.Errorf("output %q", stdout)
	}
}

// --state stale lists the in_flight records whose lease has ended, oldest
// lease first: not a live lease, not an indeterminate or completed record.
func TestListStale(t *testing.T) {
	f := newFixture(t)
	for i := 1; i <= 3; i++ {
		f.seed(scopeOf(fmt.Sprintf("s%d", i)), time.Now().Add(-time.Duration(4-i)*time.Hour))
	}
	f.seed(idemkit.Scope{Tenant: "globex", Operation: "POST /orders", Key: "g1"}, time.Now().Add(-time.Minute))
	f.seed(scopeOf("running"), time.Now().Add(time.Hour))
	f.seedIndeterminate(scopeOf("marked"), time.Now().Add(-5*time.Hour))
	f.seedCompleted(scopeOf("done"), &idemkit.Snapshot{Status: 201})

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tenant", "acme"}, "acme/s1 acme/s2 acme/s3"},
		{nil, "acme/s1 acme/s2 acme/s3 globex/g1"},
		{[]string{"--tenant", "globex"}, "globex/g1"},
	} {
		args := append([]string{"list", "--state", "stale", "--output", "json", "--all"}, tc.args...)
		code, stdout, stderr := f.run(args...)
		wantCode(t, code, exitOK, stdout, stderr)
		var got []string
		for _, r := range decode[listJSON](t, stdout).Records {
			if r.State != string(idemkit.StateInFlight) || r.LeaseEndedSecondsAgo <= 0 {
				t.Errorf("listed %+v", r)
			}
			got = append(got, r.Tenant+"/"+r.Key)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%v: listed %v, want %s", tc.args, got, tc.want)
		}
	}
	code, stdout, stderr := f.run("list", "--state", "stale", "--tenant", "acme", "--limit", "2")
	wantCode(t, code, exitOK, stdout, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) < 3 || !regexp.MustCompile(`^acme\s+POST /orders\s+s1\s+3h00m\s+\S+Z\s+\S+Z$`).MatchString(lines[1]) {
		t.Fatalf("output:\n%s", stdout)
	}
	// The indeterminate listing is unchanged: only the marked record.
	code, stdout, stderr = f.run("list", "--tenant", "acme", "--output", "json")
	wantCode(t, code, exitOK, stdout, stderr)
	if recs := decode[listJSON](t, stdout).Records; len(recs) != 1 || recs[0].Key != "marked" {
		t.Errorf("indeterminate listing: %+v", recs)
	}
	f2 := newFixture(t)
	code, stdout, stderr = f2.run("list", "--state", "stale")
	wantCode(t, code, exitOK, stdout, stderr)
	first, note, _ := strings.Cut(strings.TrimSpace(stdout), "\n")
	if first != "No stale records on this page." {
		t.Errorf("empty stale listing: %q", stdout)
	}
	// The command cannot tell whether the service's stores index in_flight
	// records: an empty listing must not read as an all-clear without them.
	if !strings.Contains(note, "dynamo.Options.IndexInFlight") {
		t.Errorf("empty stale listing does not say that only IndexInFlight records are listed: %q", stdout)
	}
}

// A store that does not index in_flight records cannot list stale ones:
// the command says so and fails, rather than print an empty listing.
func TestListStaleUnindexed(t *testing.T) {
	f := newFixtureWith(t, dynamo.Options{})
	f.seedStale(scopeOf("s1"))
	code, stdout, stderr := f.run("list", "--state", "stale")
	wantCode(t, code, exitError, stdout, stderr)
	if stdout != "" || !strings.Contains(stderr, "IndexInFlight") {
		t.Errorf("stdout %q, stderr %q", stdout, stderr)
	}
}

// TestListJSONAccountWide: --output json says which records are of
// account-wide keys (the table marks them "(account-wide)"), so that a
// script passes --account-wide to inspect exactly for those.
func TestListJSONAccountWide(t *testing.T) {
	f := newFixture(t)
	perOp := scopeOf("per-op-1")
	f.seedIndeterminate(perOp, time.Now().Add(-2*time.Hour))
	acct := scopeOf("acct-1")
	now := time.Now()
	rec := &idemkit.Record{ID: acct.ID(true), Scope: acct, State: idemkit.StateInFlight, Fingerprint: testFingerprint, Owner: "owner-acct", Version: "claim-acct",
		LeaseUntil: now.Add(-time.Hour), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now.Add(-2 * time.Hour)}
	if met, err := f.store.Create(t.Context(), rec); err != nil || met != nil {
		t.Fatalf("seed: %+v %v", met, err)
	}
	f.write(markedOf(rec), rec)
	code, stdout, stderr := f.run("list", "--tenant", "acme", "--output", "json")
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stdout, `"account_wide": false`) || !strings.Contains(stdout, `"account_wide": true`) {
		t.Errorf("listing lacks account_wide:\n%s", stdout)
	}
	got := decode[listJSON](t, stdout)
	want := map[string]bool{"per-op-1": false, "acct-1": true}
	if len(got.Records) != len(want) {
		t.Fatalf("%d records, want %d:\n%s", len(got.Records), len(want), stdout)
	}
	for _, r := range got.Records {
		if w, ok := want[r.Key]; !ok || r.AccountWide != w {
			t.Errorf("record %s: account_wide %v, want %v", r.Key, r.AccountWide, w)
		}
		args := []string{"inspect", "--tenant", r.Tenant, "--operation", r.Operation, "--key", r.Key}
		if r.AccountWide {
			args = append(args, "--account-wide")
		}
		code, stdout, stderr := f.run(args...)
		wantCode(t, code, exitOK, stdout, stderr)
	}
}

// TestListTenantRefused: --tenant given empty (or longer than any
// record's) is a usage error before any read, as with inspect and resolve;
// it is not taken for no --tenant, which lists every tenant's records.
func TestListTenantRefused(t *testing.T) {
	f := newFixture(t)
	seven(f)
	for _, args := range [][]string{
		{"list", "--tenant", ""},
		{"list", "--tenant="},
		{"list", "--tenant", "", "--state", "stale"},
		{"list", "--tenant", strings.Repeat("t", recordid.MaxTenantLen+1)},
	} {
		code, stdout, stderr := f.run(args...)
		wantCode(t, code, exitUsage, stdout, stderr)
		if stdout != "" || !strings.Contains(stderr, "--tenant") {
			t.Errorf("%q: stdout %q, stderr %q: want nothing listed and --tenant named", args, stdout, stderr)
		}
	}
}
