package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
)

// The two UpdateItems of resolve, told apart by their update expressions
// (each sets only what changes): the mark of a stale in_flight record
// sets its cause, the resolution sets the resolution.
var (
	markUpdate    = regexp.MustCompile(`(SET |, )cz = :`).Match
	resolveUpdate = regexp.MustCompile(`(SET |, )ra = :`).Match
)

// faultyEnv returns f's Env with a store on f's table whose SDK client
// sends its calls through a fault transport with rules.
func (f *fixture) faultyEnv(rules ...faults.Rule) (Env, *faults.Transport) {
	return f.faultyEnvVia(http.DefaultTransport, rules...)
}

// faultyEnvVia is faultyEnv with the server's answers passing through
// base.
func (f *fixture) faultyEnvVia(base http.RoundTripper, rules ...faults.Rule) (Env, *faults.Transport) {
	f.t.Helper()
	ft := faults.New(base, rules...)
	c, err := dynalite.NewClientVia(f.t.Context(), dynalite.Endpoint(f.t), ft)
	if err != nil {
		f.t.Fatal(err)
	}
	s, err := dynamo.New(c, f.table, dynamo.Options{CallTimeout: dynalite.Scale(30 * time.Second), MaxBackoff: time.Millisecond})
	if err != nil {
		f.t.Fatal(err)
	}
	env := f.env
	env.OpenStore = func(context.Context, StoreOptions) (idemkit.OperatorStore, error) { return s, nil }
	return env, ft
}

// TestResolveLostAnswers: resolve's own writes land and their answers are
// lost (a connection reset after DynamoDB applied them), so the SDK's
// retry of the same write finds the record changed. The command must
// recognise its own write, not report "another writer changed the
// record; nothing was changed" (exit 4) for a decision that is stored:
// the operator would then believe the key still waits for a decision,
// and a script would treat the resolution as refused. A mark that landed
// (the stale record is indeterminate, with the owner read) is followed by
// the resolution. Every case ends with the decision stored once and
// reported as made (exit 0), and the retry gets what the decision says.
func TestResolveLostAnswers(t *testing.T) {
	f := newFixture(t)
	lost := func(match func([]byte) bool, k faults.Kind) faults.Rule {
		return faults.Rule{Op: "UpdateItem", Match: match, Times: 1, Kind: k}
	}
	for _, tc := range []struct {
		name  string
		stale bool // an in_flight record whose lease ended; else indeterminate
		as    []string
		rules []faults.Rule
	}{
		{"indeterminate/failed/resolution-lost-ack", false, []string{"--as", "failed"}, []faults.Rule{lost(resolveUpdate, faults.LostAck)}},
		{"indeterminate/completed/resolution-lost-ack", false, []string{"--as", "completed", "--status", "201", "--header", "Location: /orders/by-operator"}, []faults.Rule{lost(resolveUpdate, faults.LostAck)}},
		{"indeterminate/completed/resolution-lost-ack-body", false, []string{"--as", "completed", "--status", "201", "--header", "Location: /orders/by-operator"}, []faults.Rule{lost(resolveUpdate, faults.LostAckBody)}},
		{"stale/failed/mark-lost-ack", true, []string{"--as", "failed"}, []faults.Rule{lost(markUpdate, faults.LostAck)}},
		{"stale/completed/mark-lost-ack", true, []string{"--as", "completed", "--status", "201", "--header", "Location: /orders/by-operator"}, []faults.Rule{lost(markUpdate, faults.LostAck)}},
		{"stale/completed/mark-and-resolution-lost-ack", true, []string{"--as", "completed", "--status", "201", "--header", "Location: /orders/by-operator"}, []faults.Rule{lost(markUpdate, faults.LostAck), lost(resolveUpdate, faults.LostAck)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scopeOf("lost-" + strings.ReplaceAll(tc.name, "/", "-"))
			var seeded *idemkit.Record
			if tc.stale {
				seeded = f.seedStale(s)
			} else {
				seeded = f.seedIndeterminate(s, time.Now().Add(-time.Hour))
			}
			env, ft := f.faultyEnv(tc.rules...)
			args := append(append([]string{"resolve", "--table", f.table, "--reason", "checked the processor, INC-1"}, tc.as...), scopeArgs(s)...)
			code, stdout, stderr := runWith(t, env, args...)
			if n := len(ft.Events()); n != len(tc.rules) {
				t.Fatalf("%d faults injected, want %d: %v", n, len(tc.rules), ft.Events())
			}
			wantCode(t, code, exitOK, stdout, stderr)
			was := "indeterminate"
			if tc.stale {
				was = "in_flight"
			}
			if want := "Resolved as " + tc.as[1] + " (was " + was + ")."; !strings.HasPrefix(stdout, want) {
				t.Errorf("stdout %q, want it to start with %q (stderr %q)", stdout, want, stderr)
			}
			rec := f.get(s)
			res := rec.Resolution
			if string(rec.State) != tc.as[1] || res == nil || string(res.As) != tc.as[1] || res.Operator != testOperator ||
				res.Reason != "checked the processor, INC-1" || rec.Owner != seeded.Owner {
				t.Fatalf("record %s owner %s resolution %+v; want resolved as %s by the command", rec.State, rec.Owner, res, tc.as[1])
			}
			var runs atomic.Int32
			snap, replayed, err := f.guard(idemkit.FailClosed).Do(t.Context(), request(s), handler(&runs))
			switch tc.as[1] {
			case "failed":
				if err != nil || replayed || runs.Load() != 1 {
					t.Fatalf("retry: replayed %v err %v runs %d; want a fresh run (the key was freed)", replayed, err, runs.Load())
				}
			case "completed":
				if err != nil || !replayed || runs.Load() != 0 || snap.Header.Get("Location") != "/orders/by-operator" {
					t.Fatalf("retry: %+v replayed %v err %v runs %d; want the operator's answer", snap, replayed, err, runs.Load())
				}
			}
		})
	}
}

// TestResolveLostAnswerUnreadable: resolve's write lands with its answer
// lost and the record cannot be read afterwards (every GetItem fails):
// the command cannot tell whether its decision is stored, so it says so
// and exits 5 (store unavailable), never "nothing was changed".
func TestResolveLostAnswerUnreadable(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name  string
		stale bool
		rules []faults.Rule
	}{
		// The command's read passes; the read after the refused retry
		// fails.
		{"resolution", false, []faults.Rule{
			{Op: "UpdateItem", Match: resolveUpdate, Times: 1, Kind: faults.LostAck},
			{Op: "GetItem", Skip: 1, Times: never, Kind: faults.ServerError}}},
		{"mark", true, []faults.Rule{
			{Op: "UpdateItem", Match: markUpdate, Times: 1, Kind: faults.LostAck},
			{Op: "GetItem", Skip: 1, Times: never, Kind: faults.ServerError}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := scopeOf("unreadable-" + tc.name)
			if tc.stale {
				f.seedStale(s)
			} else {
				f.seedIndeterminate(s, time.Now().Add(-time.Hour))
			}
			// A refusal carries no item, as on a server that does not
			// return it: the store must read the record, and cannot.
			env, ft := f.faultyEnvVia(faults.WithoutConditionItem(http.DefaultTransport), tc.rules...)
			code, stdout, stderr := runWith(t, env, append([]string{"resolve", "--table", f.table, "--as", "failed", "--reason", "checked"}, scopeArgs(s)...)...)
			if len(ft.Events()) < 2 {
				t.Fatalf("faults injected: %v, want the lost answer and the failed read", ft.Events())
			}
			wantCode(t, code, exitUnavailable, stdout, stderr)
			if !strings.Contains(stderr, "could not be read") || strings.Contains(stderr, "nothing was changed") {
				t.Errorf("stderr %q", stderr)
			}
		})
	}
}

const never = -1 // faults.Rule.Times: every matching call
