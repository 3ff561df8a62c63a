package main

import (
	"encoding/base64"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
)

func TestInspect(t *testing.T) {
	f := newFixture(t)
	text := scopeOf("text-1")
	f.seedCompleted(text, &idemkit.Snapshot{
		Status: 201,
		Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/orders/42"}},
		Body:   []byte(`{"id":"42","total":1999}`),
	})
	binary := scopeOf("bin-1")
	png := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}
	f.seedCompleted(binary, &idemkit.Snapshot{Status: 200, Header: http.Header{"Content-Type": {"image/png"}}, Body: png})
	spaced := scopeOf("a key with spaces")
	f.seedIndeterminate(spaced, time.Now().Add(-90*time.Minute))

	cases := []struct {
		name    string
		args    []string
		want    []string
		notWant []string
	}{
		{"completed, bare key", append([]string{"inspect"}, scopeArgs(text)...),
			[]string{"State         completed", "Status        201", "Header        Content-Type: application/json", "Header        Location: /orders/42",
				"Body          24 bytes; --body prints it", "Owner         owner-text-1", "Fingerprint   " + testFingerprint, "Replay until", "Expires", "Completed", "Age"},
			[]string{`"total"`, "Resolved"}},
		{"quoted key names the same record", []string{"inspect", "--tenant", "acme", "--operation", "POST /orders", "--key", `"text-1"`},
			[]string{"Key           text-1", "State         completed"}, nil},
		{"--body prints text", append([]string{"inspect", "--body"}, scopeArgs(text)...),
			[]string{"Body:\n{\"id\":\"42\",\"total\":1999}\n"}, []string{"--body prints it"}},
		{"--body prints binary as base64", append([]string{"inspect", "--body"}, scopeArgs(binary)...),
			[]string{"Body (binary, 8 bytes, printed as base64):\n" + base64.StdEncoding.EncodeToString(png) + "\n"}, []string{"PNG"}},
		{"indeterminate, key needing quotes", []string{"inspect", "--tenant", "acme", "--operation", "POST /orders", "--key", `"a key with spaces"`},
			[]string{"State         indeterminate", `Key           "a key with spaces"`, "Response      none stored", "(1h30m ago)"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := f.run(tc.args...)
			wantCode(t, code, exitOK, stdout, stderr)
			testkit.Has(t, "output", stdout, tc.want, tc.notWant)
		})
	}
}

func TestInspectJSON(t *testing.T) {
	f := newFixture(t)
	s := scopeOf("json-1")
	rec := f.seedCompleted(s, &idemkit.Snapshot{
		Status: 201,
		Header: http.Header{"Location": {"/orders/7"}},
		Body:   []byte{0, 1, 2},
	})
	for _, withBody := range []bool{false, true} {
		args := append([]string{"inspect", "--output", "json"}, scopeArgs(s)...)
		if withBody {
			args = append(args, "--body")
		}
		code, stdout, stderr := f.run(args...)
		wantCode(t, code, exitOK, stdout, stderr)
		got := decode[recordJSON](t, stdout)
		if got.ID != s.ID(false) || got.Tenant != "acme" || got.Operation != "POST /orders" || got.Key != "json-1" ||
			got.State != "completed" || got.Owner != rec.Owner || got.Fingerprint != testFingerprint {
			t.Errorf("identity fields: %+v", got)
		}
		for name, tm := range map[string]*time.Time{"created_at": got.CreatedAt, "lease_until": got.LeaseUntil, "replay_until": got.ReplayUntil, "expires_at": got.ExpiresAt, "completed_at": got.CompletedAt} {
			if tm == nil || tm.Location() != time.UTC {
				t.Errorf("%s = %v, want a UTC time", name, tm)
			}
		}
		if got.Resolution != nil {
			t.Errorf("resolution %+v, want none", got.Resolution)
		}
		sn := got.Snapshot
		if sn == nil || sn.Status != 201 || sn.BodyBytes != 3 || sn.Headers["Location"][0] != "/orders/7" {
			t.Fatalf("snapshot %+v", sn)
		}
		if !withBody && sn.Body != nil {
			t.Errorf("body printed without --body")
		}
		if withBody && (sn.Body == nil || *sn.Body != "AAEC" || sn.BodyEncoding != "base64") {
			t.Errorf("body %v (%s), want AAEC base64", sn.Body, sn.BodyEncoding)
		}
		// RFC 3339 on the wire.
		if !strings.Contains(stdout, `"created_at": "`+rec.CreatedAt.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)) {
			t.Errorf("created_at not RFC 3339 UTC:\n%s", stdout)
		}
	}
}

// Account-wide keys leave the operation out of the record ID.
func TestInspectAccountWide(t *testing.T) {
	f := newFixture(t)
	s := scopeOf("acct-1")
	g := testguard.New(t, idemkit.Config{Store: f.store, AccountWide: true})
	var runs atomic.Int32
	if _, _, err := g.Do(t.Context(), request(s), handler(&runs)); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := f.run("inspect", "--tenant", "acme", "--key", "acct-1", "--account-wide")
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stdout, "ID            "+s.ID(true)) || !strings.Contains(stdout, "Operation     POST /orders") {
		t.Errorf("output:\n%s", stdout)
	}
	code, stdout, stderr = f.run(append([]string{"inspect"}, scopeArgs(s)...)...)
	wantCode(t, code, exitNotFound, stdout, stderr)
}

// A released key's tombstone and an expired record are kept in the store
// for late writes to find, but are no record to an operator: inspect and
// resolve say there is no live record, as for a key never stored.
func TestInspectKeptButNotLive(t *testing.T) {
	f := newFixture(t)
	freed := scopeOf("freed-1")
	rec := f.seed(freed, time.Now().Add(time.Minute))
	now := time.Now()
	f.write(&idemkit.Record{ID: rec.ID, Scope: rec.Scope, State: idemkit.StateReleased, Fingerprint: rec.Fingerprint, Owner: rec.Owner,
		Version: "released-1", LeaseUntil: now, ExpiresAt: now, CreatedAt: now}, rec)
	gone := scopeOf("gone-1")
	old := f.seedStale(gone)
	expired := markedOf(old)
	expired.ExpiresAt = now.Add(-time.Minute)
	f.write(expired, old)
	for _, s := range []idemkit.Scope{freed, gone} {
		if _, err := f.store.Get(t.Context(), s.ID(false)); err != nil {
			t.Fatalf("%s: the store does not keep the record: %v", s.Key, err)
		}
		for _, args := range [][]string{{"inspect"}, {"resolve", "--as", "failed", "--reason", "r"}} {
			code, stdout, stderr := f.run(append(args, scopeArgs(s)...)...)
			wantCode(t, code, exitNotFound, stdout, stderr)
			if !strings.Contains(stderr, "no live record") {
				t.Errorf("%s %s: stderr %q", args[0], s.Key, stderr)
			}
		}
	}
}
