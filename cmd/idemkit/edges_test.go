package main

import (
	"context"
	"errors"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/recordid"
)

// lateCompletion returns a store on which the record's own execution
// completes (a late completion) just before a resolution reaches the
// store: between the command's read and its write.
func lateCompletion(t *testing.T, s idemkit.OperatorStore, rec *idemkit.Record) idemkit.OperatorStore {
	return &beforeWrite{OperatorStore: s, before: func(ctx context.Context) {
		snap := &idemkit.Snapshot{Status: 201, Header: http.Header{"Location": {"/orders/from-owner"}}, Body: []byte(`{"id":"owner"}`)}
		if err := lateComplete(ctx, s, rec, snap); err != nil {
			t.Errorf("late completion: %v", err)
		}
	}}
}

// TestResolveCompletedMeanwhile: a record whose execution completes after
// resolve read it as indeterminate keeps the execution's answer: resolve
// exits 4 saying nothing was changed, and a retry replays the answer
// without running the handler.
func TestResolveCompletedMeanwhile(t *testing.T) {
	f := newFixture(t)
	for _, decision := range [][]string{
		{"--as", "failed"},
		{"--as", "completed", "--status", "200", "--header", "Location: /orders/from-operator"},
	} {
		t.Run(decision[1], func(t *testing.T) {
			s := scopeOf("meanwhile-" + decision[1])
			rec := f.seedIndeterminate(s, time.Now().Add(-time.Hour))
			env := f.env
			env.OpenStore = func(context.Context, StoreOptions) (idemkit.OperatorStore, error) {
				return lateCompletion(t, f.store, rec), nil
			}
			args := append(append([]string{"resolve", "--table", f.table, "--reason", "checked the processor"}, decision...), scopeArgs(s)...)
			code, stdout, stderr := runWith(t, env, args...)
			wantCode(t, code, exitConflict, stdout, stderr)
			if !strings.Contains(stderr, "nothing was changed") || stdout != "" {
				t.Errorf("stdout %q, stderr %q", stdout, stderr)
			}
			got := f.get(s)
			if got.State != idemkit.StateCompleted || got.Resolution != nil || got.Snapshot.Header.Get("Location") != "/orders/from-owner" {
				t.Fatalf("record %s, resolution %+v, snapshot %+v; want the owner's completion untouched", got.State, got.Resolution, got.Snapshot)
			}
			var runs atomic.Int32
			snap, replayed, err := f.guard(idemkit.FailClosed).Do(t.Context(), request(s), handler(&runs))
			if err != nil || !replayed || runs.Load() != 0 || string(snap.Body) != `{"id":"owner"}` {
				t.Fatalf("retry: replayed %v, err %v, runs %d; want the owner's answer replayed", replayed, err, runs.Load())
			}
		})
	}
}

// TestTenantOverMaxLen: with the real environment, a tenant over
// recordid.MaxTenantLen, which no record can have (the guard refuses it),
// is a usage error naming the bound, before any call; not an outage
// (exit 5) nor an unexplained refusal.
func TestTenantOverMaxLen(t *testing.T) {
	f := newFixture(t)
	var rec regionRecorder
	awsEnv(t, rec.server(t).URL, fakeSTS(t).URL)
	env := Env{Getenv: func(string) string { return "" }}
	for _, op := range []string{"POST /orders", "POST /" + strings.Repeat("o", 1100)} {
		long := idemkit.Scope{Tenant: strings.Repeat("t", recordid.MaxTenantLen+1), Operation: op, Key: "k"}
		for _, args := range [][]string{
			append([]string{"inspect"}, scopeArgs(long)...),
			append([]string{"resolve", "--as", "failed", "--reason", "r"}, scopeArgs(long)...),
		} {
			code, stdout, stderr := runWith(t, env, append([]string{args[0], "--table", f.table}, args[1:]...)...)
			wantCode(t, code, exitUsage, stdout, stderr)
			if !strings.Contains(stderr, "--tenant") || !strings.Contains(stderr, "at most 1024") {
				t.Errorf("%s: stderr %q", args[0], stderr)
			}
		}
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("%d requests reached the store for a tenant no record can have", len(got))
	}
}

// TestResolveLargeAnswerLongScope: an answer too large for the item of a
// record whose scope is too long for a readable ID (its ID is short, its
// scope attributes are not) is stored without its body, with a warning;
// the resolution is not refused, and retries get the outcome without the
// handler running.
func TestResolveLargeAnswerLongScope(t *testing.T) {
	f := newFixtureWith(t, dynamo.Options{IndexInFlight: true, MaxItemSize: dynamo.MaxItemSizeLimit})
	s := idemkit.Scope{Tenant: "acme", Operation: "POST /orders/" + strings.Repeat("x", 3000), Key: "big-1"}
	f.seedIndeterminate(s, time.Now().Add(-time.Hour))
	body := make([]byte, dynamo.MaxItemSizeLimit-2000)
	rand.New(rand.NewSource(1)).Read(body) // incompressible
	file := filepath.Join(t.TempDir(), "answer.bin")
	if err := os.WriteFile(file, body, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := f.run(append([]string{"resolve", "--as", "completed", "--status", "201", "--header", "Location: /orders/1",
		"--body-file", file, "--reason", "charged, PSP ref ch_3"}, scopeArgs(s)...)...)
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stderr, "too large to store") {
		t.Errorf("stderr %q lacks the warning", stderr)
	}
	if got := f.get(s); got.State != idemkit.StateCompleted || !got.Snapshot.Omitted {
		t.Fatalf("record %s, omitted %v; want completed without its body", got.State, got.Snapshot.Omitted)
	}
	var runs atomic.Int32
	_, _, err := f.guard(idemkit.FailClosed).Do(t.Context(), request(s), handler(&runs))
	var oe *idemkit.OutcomeError
	if !errors.Is(err, idemkit.ErrSnapshotOmitted) || !errors.As(err, &oe) || oe.Status != 201 || oe.Location != "/orders/1" || runs.Load() != 0 {
		t.Fatalf("retry: %v, runs %d; want ErrSnapshotOmitted naming 201 and the Location, not run", err, runs.Load())
	}
}

// TestListAccountWideHashed: a record of account-wide keys whose scope is
// too long for a readable ID is listed marked (account-wide) too, so that
// the operator passes --account-wide to inspect and resolve it.
func TestListAccountWideHashed(t *testing.T) {
	f := newFixture(t)
	s := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: strings.Repeat("k", 2100)}
	id := s.ID(true)
	if !strings.HasPrefix(id, "a1h|") {
		t.Fatalf("ID %.8q..., want a hashed account-wide ID", id)
	}
	now := time.Now()
	rec := &idemkit.Record{ID: id, Scope: s, State: idemkit.StateInFlight, Fingerprint: testFingerprint, Owner: "owner-acct", Version: "claim-acct",
		LeaseUntil: now, ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now.Add(-time.Minute)}
	if met, err := f.store.Create(t.Context(), rec); err != nil || met != nil {
		t.Fatalf("seed: %+v %v", met, err)
	}
	f.write(unknownOf(rec, now), rec)
	code, stdout, stderr := f.run("list", "--tenant", "acme")
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stdout, "POST /orders (account-wide)") {
		t.Fatalf("list does not mark the record account-wide:\n%.300s", stdout)
	}
	code, stdout, stderr = f.run("inspect", "--tenant", "acme", "--key", s.Key, "--account-wide")
	wantCode(t, code, exitOK, stdout, stderr)
}
