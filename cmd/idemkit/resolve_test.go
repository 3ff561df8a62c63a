package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
)

// resolve --as failed frees the key: the next request runs the handler.
func TestResolveFailedFreesKey(t *testing.T) {
	f := newFixture(t)
	s := scopeOf("pay-1")
	f.seedIndeterminate(s, time.Now().Add(-time.Hour))
	g := f.guard(idemkit.FailClosed)
	var runs atomic.Int32
	if _, _, err := g.Do(t.Context(), request(s), handler(&runs)); !errors.Is(err, idemkit.ErrIndeterminate) {
		t.Fatalf("before resolve: err %v, want ErrIndeterminate", err)
	}

	code, stdout, stderr := f.run(append([]string{"resolve", "--as", "failed", "--reason", "no charge at the processor (PSP ref none)"}, scopeArgs(s)...)...)
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.HasPrefix(stdout, "Resolved as failed (was indeterminate).") || !strings.Contains(stdout, "Resolved by   "+testOperator) {
		t.Errorf("output:\n%s", stdout)
	}
	rec := f.get(s)
	res := rec.Resolution
	if rec.State != idemkit.StateFailed || res == nil || res.As != idemkit.StateFailed || res.Operator != testOperator ||
		res.Reason != "no charge at the processor (PSP ref none)" || time.Since(res.ResolvedAt) > time.Minute {
		t.Fatalf("record %s, resolution %+v", rec.State, res)
	}
	if f.operators.Load() != 1 {
		t.Errorf("identity looked up %d times, want 1", f.operators.Load())
	}

	snap, replayed, err := g.Do(t.Context(), request(s), handler(&runs))
	if err != nil || replayed || snap.Status != 201 || runs.Load() != 1 {
		t.Fatalf("after resolve: status %v, replayed %v, err %v, runs %d; want a fresh run", snap, replayed, err, runs.Load())
	}
}

// resolve --as completed stores the given answer, replayed to retries.
func TestResolveCompletedReplays(t *testing.T) {
	f := newFixture(t)
	body := filepath.Join(t.TempDir(), "order.json")
	if err := os.WriteFile(body, []byte(`{"id":"ord_9"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		key   string
		stale bool // in_flight with an expired lease instead of indeterminate
		extra []string
		stdin string
		want  idemkit.Snapshot
		prev  string
	}{
		{"body file", "c1", false, []string{"--body-file", body}, "", idemkit.Snapshot{Body: []byte(`{"id":"ord_9"}`)}, "indeterminate"},
		{"stdin", "c2", false, []string{"--body-file", "-"}, `{"id":"ord_10"}`, idemkit.Snapshot{Body: []byte(`{"id":"ord_10"}`)}, "indeterminate"},
		{"no body", "c3", false, nil, "", idemkit.Snapshot{}, "indeterminate"},
		{"base64 body", "c4", false, []string{"--body-file", "-", "--body-base64"}, "AAEC", idemkit.Snapshot{Body: []byte("AAEC"), Base64: true}, "indeterminate"},
		{"stale in_flight", "c5", true, []string{"--body-file", body}, "", idemkit.Snapshot{Body: []byte(`{"id":"ord_9"}`)}, "in_flight"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := scopeOf(tc.key)
			if tc.stale {
				f.seedStale(s)
			} else {
				f.seedIndeterminate(s, time.Now().Add(-time.Hour))
			}
			env := f.env
			env.Stdin = strings.NewReader(tc.stdin)
			args := append([]string{"resolve", "--table", f.table, "--output", "json", "--as", "completed", "--status", "201",
				"--header", "content-type: application/json", "--header", "Location: /orders/" + tc.key, "--reason", "charged, PSP ref ch_1"}, scopeArgs(s)...)
			code, stdout, stderr := runWith(t, env, append(args, tc.extra...)...)
			wantCode(t, code, exitOK, stdout, stderr)
			out := decode[resolveJSON](t, stdout)
			if out.PreviousState != tc.prev || out.Record.State != "completed" || out.Record.Resolution == nil || out.Record.Resolution.Operator != testOperator {
				t.Errorf("output %+v", out)
			}

			g := f.guard(idemkit.FailClosed)
			var runs atomic.Int32
			snap, replayed, err := g.Do(t.Context(), request(s), handler(&runs))
			if err != nil || !replayed || runs.Load() != 0 {
				t.Fatalf("retry: replayed %v, err %v, runs %d; want a replay", replayed, err, runs.Load())
			}
			if snap.Status != 201 || string(snap.Body) != string(tc.want.Body) || snap.Base64 != tc.want.Base64 ||
				snap.Header.Get("Content-Type") != "application/json" || snap.Header.Get("Location") != "/orders/"+tc.key {
				t.Errorf("replayed %d %v %q base64 %v", snap.Status, snap.Header, snap.Body, snap.Base64)
			}
		})
	}
}

// Resolving races a Takeover retry on a stale in_flight record: exactly
// one of them changes the record, the other is refused cleanly, and the
// handler runs at most once.
func TestResolveRacesTakeover(t *testing.T) {
	dynalite.Require(t, dynalite.AtomicConditionalWrites)
	f := newFixture(t)
	g := f.guard(idemkit.Takeover)
	wins := map[string]int{}
	for round := 0; round < 20; round++ {
		s := scopeOf(fmt.Sprintf("race-%d", round))
		stale := f.seedStale(s)
		var (
			runs     atomic.Int32
			wg       sync.WaitGroup
			start    = make(chan struct{})
			code     int
			stderr   string
			snap     *idemkit.Snapshot
			replayed bool
			gerr     error
		)
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			code, _, stderr = runWith(t, f.env, append([]string{"resolve", "--table", f.table, "--as", "completed", "--status", "201",
				"--header", "Location: /orders/by-operator", "--reason", "ledger shows the charge"}, scopeArgs(s)...)...)
		}()
		go func() {
			defer wg.Done()
			<-start
			snap, replayed, gerr = g.Do(t.Context(), request(s), handler(&runs))
		}()
		close(start)
		wg.Wait()

		rec := f.get(s)
		operatorWon := code == exitOK
		guardRan := runs.Load() == 1
		switch {
		case runs.Load() > 1:
			t.Fatalf("round %d: handler ran %d times", round, runs.Load())
		case operatorWon == guardRan:
			t.Fatalf("round %d: resolve exit %d (%s), handler runs %d: want exactly one winner", round, code, stderr, runs.Load())
		case operatorWon:
			wins["operator"]++
			// The retry saw the record indeterminate, or the operator's answer.
			if !errors.Is(gerr, idemkit.ErrIndeterminate) && !(gerr == nil && replayed && snap.Header.Get("Location") == "/orders/by-operator") {
				t.Fatalf("round %d: operator won, retry got snap %v replayed %v err %v", round, snap, replayed, gerr)
			}
			if rec.State != idemkit.StateCompleted || rec.Resolution == nil || rec.Owner != stale.Owner {
				t.Fatalf("round %d: operator won, record %s owner %s resolution %+v", round, rec.State, rec.Owner, rec.Resolution)
			}
		default:
			wins["takeover"]++
			if code != exitConflict || gerr != nil || replayed {
				t.Fatalf("round %d: takeover won, resolve exit %d (%s), retry replayed %v err %v", round, code, stderr, replayed, gerr)
			}
			if rec.State != idemkit.StateCompleted || rec.Resolution != nil || rec.Owner == stale.Owner || rec.Snapshot.Header.Get("Location") != "/orders/from-handler" {
				t.Fatalf("round %d: takeover won, record %s owner %s resolution %+v", round, rec.State, rec.Owner, rec.Resolution)
			}
		}
	}
	t.Logf("winners over 20 rounds: %v", wins)
}

// Two operators resolving the same record at once: exactly one wins, the
// other gets exit 4 and changes nothing.
func TestResolveConcurrent(t *testing.T) {
	dynalite.Require(t, dynalite.AtomicConditionalWrites)
	f := newFixture(t)
	for _, stale := range []bool{false, true} {
		for round := 0; round < 10; round++ {
			s := scopeOf(fmt.Sprintf("twice-%v-%d", stale, round))
			if stale {
				f.seedStale(s)
			} else {
				f.seedIndeterminate(s, time.Now().Add(-time.Hour))
			}
			decisions := [2][]string{
				{"--as", "failed", "--reason", "operator A", "--operator", "A"},
				{"--as", "completed", "--status", "201", "--reason", "operator B", "--operator", "B"},
			}
			var (
				wg      sync.WaitGroup
				start   = make(chan struct{})
				codes   [2]int
				stderrs [2]string
			)
			for i := range decisions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					codes[i], _, stderrs[i] = runWith(t, f.env, append(append([]string{"resolve", "--table", f.table}, decisions[i]...), scopeArgs(s)...)...)
				}()
			}
			close(start)
			wg.Wait()
			winner := -1
			for i, c := range codes {
				switch c {
				case exitOK:
					if winner >= 0 {
						t.Fatalf("%s: both resolves won", s.Key)
					}
					winner = i
				case exitConflict:
					if !strings.Contains(stderrs[i], "nothing was changed") {
						t.Errorf("%s: loser's stderr %q", s.Key, stderrs[i])
					}
				default:
					t.Fatalf("%s: exit %d: %s", s.Key, c, stderrs[i])
				}
			}
			if winner < 0 {
				t.Fatalf("%s: no resolve won: %v", s.Key, stderrs)
			}
			rec := f.get(s)
			if want := []string{"A", "B"}[winner]; rec.Resolution == nil || rec.Resolution.Operator != want {
				t.Fatalf("%s: resolution %+v, want by the winner %s", s.Key, rec.Resolution, want)
			}
		}
	}
}

// An answer resolved after the first request's replay window is still
// replayed: the resolution counts the record's replay window again from
// the resolution, and keeps the record at least that long.
func TestResolveLateIsReplayed(t *testing.T) {
	f := newFixture(t)
	s := scopeOf("late-1")
	now := time.Now()
	created := now.Add(-30 * time.Hour)
	rec := &idemkit.Record{ID: s.ID(false), Scope: s, State: idemkit.StateInFlight, Fingerprint: testFingerprint, Owner: "owner-late", Version: "claim-late",
		LeaseUntil: created.Add(time.Minute), ReplayUntil: created.Add(24 * time.Hour), ExpiresAt: created.Add(48 * time.Hour), CreatedAt: created}
	if met, err := f.store.Create(t.Context(), rec); err != nil || met != nil {
		t.Fatalf("seed: %+v %v", met, err)
	}
	f.write(markedOf(rec), rec)
	code, stdout, stderr := f.run(append([]string{"resolve", "--as", "completed", "--status", "201", "--reason", "charged, PSP ref ch_2"}, scopeArgs(s)...)...)
	wantCode(t, code, exitOK, stdout, stderr)

	got := f.get(s)
	if d := got.ReplayUntil.Sub(now.Add(24 * time.Hour)); d < -time.Minute || d > time.Minute {
		t.Errorf("replay until %v, want a day from the resolution", got.ReplayUntil)
	}
	if d := got.ExpiresAt.Sub(now.Add(48 * time.Hour)); d < -time.Minute || d > time.Minute {
		t.Errorf("expires %v, want two days from the resolution", got.ExpiresAt)
	}
	var runs atomic.Int32
	snap, replayed, err := f.guard(idemkit.FailClosed).Do(t.Context(), request(s), handler(&runs))
	if err != nil || !replayed || snap.Status != 201 || runs.Load() != 0 {
		t.Fatalf("retry after a late resolution: %+v replayed %v err %v runs %d; want the answer replayed", snap, replayed, err, runs.Load())
	}
}

// TestResolveWarnsWhatWasNotStored: an answer the store keeps only as its
// outcome (its body, or its headers, over the item cap) is resolved with a
// warning naming what was left out; an answer stored whole gets none.
func TestResolveWarnsWhatWasNotStored(t *testing.T) {
	f := newFixtureWith(t, dynamo.Options{IndexInFlight: true, MaxItemSize: 16 << 10})
	big := strings.Repeat("x", 20<<10)
	noise := make([]byte, 32<<10)
	rand.New(rand.NewSource(1)).Read(noise)
	bigBody := hex.EncodeToString(noise) // does not compress under the cap
	cases := []struct {
		name    string
		body    string
		headers []string
		omitted bool
		want    []string // in the warning; none: no warning
	}{
		{"stored whole", `{"id":1}`, []string{"X-Trace: t1"}, false, nil},
		{"body too large", bigBody, []string{"X-Trace: t1"}, true, []string{"the body was too large to store", "outcome only"}},
		{"headers too large, no body", "", []string{"X-Big: " + big}, true,
			[]string{"the headers were too large to store", "X-Big", "Location is kept", "outcome only"}},
		{"headers too large, small body", `{"id":1}`, []string{"X-Big: " + big, "X-Trace: t1"}, true,
			[]string{"the headers were too large to store", "X-Big, X-Trace", "and the body with them", "outcome only"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := scopeOf(fmt.Sprintf("warn-%d", i))
			f.seedIndeterminate(s, time.Now().Add(-time.Hour))
			env := f.env
			env.Stdin = strings.NewReader(tc.body)
			args := append([]string{"resolve", "--table", f.table, "--as", "completed", "--status", "201", "--header", "Location: /orders/1",
				"--body-file", "-", "--reason", "charged, PSP ref ch_4"}, scopeArgs(s)...)
			for _, h := range tc.headers {
				args = append(args, "--header", h)
			}
			code, stdout, stderr := runWith(t, env, args...)
			wantCode(t, code, exitOK, stdout, stderr)
			if got := f.get(s); got.State != idemkit.StateCompleted || got.Snapshot.Omitted != tc.omitted || got.Snapshot.Header.Get("Location") != "/orders/1" {
				t.Fatalf("record %s, omitted %v, headers %v; want completed, omitted %v, with its Location", got.State, got.Snapshot.Omitted, got.Snapshot.Header, tc.omitted)
			}
			if len(tc.want) == 0 {
				if strings.Contains(stderr, "warning") {
					t.Errorf("stderr %q, want no warning", stderr)
				}
				return
			}
			if !strings.Contains(stderr, "warning") {
				t.Fatalf("stderr %q lacks a warning", stderr)
			}
			testkit.Has(t, "warning", stderr, tc.want, nil)
			if strings.Contains(stderr, big) {
				t.Errorf("warning prints the header value")
			}
		})
	}
}

// TestResolveRecentlyEndedLease: an in_flight record whose lease ended
// less than a minute ago (the clock skew resolve tolerates) by the
// operator's clock may still be running on a host whose clock is behind:
// resolve refuses it and changes nothing; past the grace it marks and
// resolves it.
func TestResolveRecentlyEndedLease(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name  string
		ended time.Duration // how long ago the lease ended
		code  int
		state idemkit.State
	}{
		{"ended 5 s ago", 5 * time.Second, exitConflict, idemkit.StateInFlight},
		{"ended 50 s ago", 50 * time.Second, exitConflict, idemkit.StateInFlight},
		{"ended 2 min ago", 2 * time.Minute, exitOK, idemkit.StateCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scopeOf("recent-" + strings.ReplaceAll(tc.name, " ", "-"))
			rec := f.seed(s, time.Now().Add(-tc.ended))
			code, stdout, stderr := f.run(append([]string{"resolve", "--as", "completed", "--status", "201", "--reason", "checked the PSP"}, scopeArgs(s)...)...)
			wantCode(t, code, tc.code, stdout, stderr)
			if tc.code == exitConflict && !strings.Contains(stderr, "clock is behind") {
				t.Errorf("stderr %q, want the clock-skew refusal", stderr)
			}
			got, err := f.store.Get(t.Context(), rec.ID)
			if err != nil || got.State != tc.state {
				t.Fatalf("record %+v, %v; want %s", got, err, tc.state)
			}
		})
	}
}

// TestResolveMarkedEarly: a retry whose clock runs ahead marks a record
// indeterminate while its handler still runs. resolve refuses any decision
// until a minute after the lease the record holds (the clock skew it
// tolerates), and --as failed, which frees the key, until
// idemkit.MaxWriteDelay after that too: a copy of the claim may land until
// then. Every refusal changes nothing and says from when the decision is
// accepted; from then on it is made.
func TestResolveMarkedEarly(t *testing.T) {
	f := newFixture(t)
	s := scopeOf("ahead-1")
	policy := idemkit.Policy{Lease: 10 * time.Minute}
	owner := testguard.New(t, idemkit.Config{Store: f.store, Policy: policy})
	ahead := testguard.New(t, idemkit.Config{Store: f.store, Policy: policy, Clock: testclock.Skewed(11 * time.Minute)})
	started, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		_, _, err := owner.Do(t.Context(), request(s), func(context.Context) (*idemkit.Snapshot, error) {
			close(started)
			<-release
			return &idemkit.Snapshot{Status: 201}, nil
		})
		done <- err
	}()
	var once sync.Once
	finish := func() { once.Do(func() { close(release) }) }
	t.Cleanup(finish)
	<-started
	var runs atomic.Int32
	if _, _, err := ahead.Do(t.Context(), request(s), handler(&runs)); !errors.Is(err, idemkit.ErrIndeterminate) || runs.Load() != 0 {
		t.Fatalf("retry with its clock ahead: %v, runs %d; want ErrIndeterminate", err, runs.Load())
	}
	lease := f.get(s).LeaseUntil
	failedFrom := lease.Add(time.Minute + idemkit.MaxWriteDelay).UTC().Format(time.RFC3339)
	failed := []string{"--as", "failed"}
	completed := []string{"--as", "completed", "--status", "201"}
	for _, step := range []struct {
		name   string
		at     time.Time
		as     []string
		code   int
		output []string // in stderr, or stdout when accepted
	}{
		{"failed while the handler runs", time.Now(), failed, exitConflict, []string{"the request may still be running", "resolve it as failed from " + failedFrom}},
		{"completed while the handler runs", time.Now(), completed, exitConflict, []string{"the request may still be running"}},
		{"completed within the clock skew", lease.Add(30 * time.Second), completed, exitConflict, []string{"clock is behind"}},
		{"failed within the clock skew", lease.Add(30 * time.Second), failed, exitConflict, []string{"clock is behind", failedFrom}},
		{"failed within MaxWriteDelay", lease.Add(time.Minute + idemkit.MaxWriteDelay - time.Second), failed, exitConflict,
			[]string{"may still reach DynamoDB", "15 minutes after it was signed", "--as completed is accepted now because it frees nothing: use it only if you checked that the effect happened", failedFrom}},
		{"failed at lease + skew + MaxWriteDelay", lease.Add(time.Minute + idemkit.MaxWriteDelay), failed, exitOK, []string{"Resolved as failed (was indeterminate)."}},
	} {
		env := f.env
		env.Now = func() time.Time { return step.at }
		code, stdout, stderr := runWith(t, env, append(append([]string{"resolve", "--table", f.table, "--reason", "no charge at the PSP"}, step.as...), scopeArgs(s)...)...)
		wantCode(t, code, step.code, stdout, stderr)
		out, rec := stderr, f.get(s)
		if code == exitOK {
			out = stdout
			if rec.State != idemkit.StateFailed || rec.Resolution == nil {
				t.Fatalf("%s: record %s, resolution %+v; want resolved failed", step.name, rec.State, rec.Resolution)
			}
		} else if rec.State != idemkit.StateIndeterminate || rec.Resolution != nil || !strings.Contains(out, "nothing was changed") {
			t.Fatalf("%s: record %s, resolution %+v, stderr %q; want a refusal that changed nothing", step.name, rec.State, rec.Resolution, out)
		}
		testkit.Has(t, step.name+": output", out, step.output, nil)
	}
	// The handler returns at last: its completion is refused, the key
	// stays freed for the retry the operator's decision lets run.
	finish()
	if err := <-done; err != nil {
		t.Fatalf("owner: %v", err)
	}
	if rec := f.get(s); rec.State != idemkit.StateFailed {
		t.Fatalf("record %s after the handler returned, want failed", rec.State)
	}
}
