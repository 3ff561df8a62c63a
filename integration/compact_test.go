package integration

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/memstore"
)

// The compact operation record (docs/DESIGN.md, "Lifetime"): inside the replay window a
// retry gets the stored response; between the replay window and the record
// retention it is answered with the first outcome (status, Location,
// completion time) and not executed; after the record retention it runs as
// a new request.
func TestCompactOperationRecord(t *testing.T) {
	cases := []struct {
		name                    string
		policy                  idemkit.Policy
		replayWindow, retention time.Duration
	}{
		{"defaults", idemkit.Policy{}, 24 * time.Hour, 7 * 24 * time.Hour},
		{"money-moving", idemkit.Policy{ReplayWindow: time.Hour, RecordRetention: 30 * 24 * time.Hour}, time.Hour, 30 * 24 * time.Hour},
		{"long replay, default retention follows it", idemkit.Policy{ReplayWindow: 10 * 24 * time.Hour}, 10 * 24 * time.Hour, 10 * 24 * time.Hour},
	}
	// A retention below the replay window is refused, not raised.
	if _, err := idemkit.New(idemkit.Config{Store: memstore.New(), Policy: idemkit.Policy{ReplayWindow: 2 * time.Hour, RecordRetention: time.Hour}}); err == nil {
		t.Fatal("New accepted a RecordRetention below the ReplayWindow")
	}
	c := dynalite.Client(t)
	table := dynalite.CreateTable(t, c, dynamo.TableDefinition("compact", dynamo.Options{}))
	store, err := dynamo.New(c, table, dynamo.Options{CallTimeout: callTimeout})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := testclock.New()
			t0 := clk.Now()
			g := testguard.New(t, idemkit.Config{Store: store, Policy: tc.policy, Clock: clk})
			if p := g.Policy("POST /payments"); p.ReplayWindow != tc.replayWindow || p.RecordRetention != tc.retention {
				t.Fatalf("policy: replay %s, retention %s; want %s, %s", p.ReplayWindow, p.RecordRetention, tc.replayWindow, tc.retention)
			}
			req := idemkit.Request{
				Scope:       idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: "pay-" + tc.name},
				Fingerprint: "v1:sha256:aa",
			}
			runs := 0
			charge := func(context.Context) (*idemkit.Snapshot, error) {
				runs++
				return &idemkit.Snapshot{
					Status: 201,
					Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/payments/p1"}},
					Body:   []byte(`{"id":"p1","amount":1999}`),
				}, nil
			}
			do := func(at time.Duration, r idemkit.Request) (*idemkit.Snapshot, bool, error) {
				t.Helper()
				clk.Set(t0.Add(at))
				return g.Do(t.Context(), r, charge)
			}

			// The first request runs.
			if snap, replayed, err := do(0, req); err != nil || replayed || snap.Status != 201 || runs != 1 {
				t.Fatalf("first: status %v replayed %v err %v runs %d", snap, replayed, err, runs)
			}
			// Inside the replay window: replayed byte for byte.
			for _, at := range []time.Duration{time.Minute, tc.replayWindow - time.Second} {
				snap, replayed, err := do(at, req)
				if err != nil || !replayed || snap.Status != 201 || string(snap.Body) != `{"id":"p1","amount":1999}` || runs != 1 {
					t.Fatalf("at %s: status %v replayed %v err %v runs %d; want a replay", at, snap, replayed, err, runs)
				}
			}
			// After it, until the record retention: the outcome, not a run.
			for _, at := range []time.Duration{tc.replayWindow, tc.replayWindow + time.Hour, tc.retention - time.Second} {
				if at < tc.replayWindow || at >= tc.retention { // no compact phase when they are equal
					continue
				}
				snap, replayed, err := do(at, req)
				var oe *idemkit.OutcomeError
				if !errors.As(err, &oe) || !errors.Is(err, idemkit.ErrReplayWindowPassed) || snap != nil || replayed || runs != 1 {
					t.Fatalf("at %s: snap %v replayed %v err %v runs %d; want an *OutcomeError", at, snap, replayed, err, runs)
				}
				if oe.Status != 201 || oe.Location != "/payments/p1" || !oe.CompletedAt.Equal(t0) {
					t.Fatalf("at %s: outcome %+v; want 201, /payments/p1, completed %s", at, oe, t0)
				}
				// The compact record still knows the request: another
				// body under the key is a mismatch, not a run.
				other := req
				other.Fingerprint = "v1:sha256:bb"
				if _, _, err := do(at, other); !errors.Is(err, idemkit.ErrFingerprintMismatch) || runs != 1 {
					t.Fatalf("at %s, other request: err %v runs %d; want ErrFingerprintMismatch", at, err, runs)
				}
			}
			// After the record retention the key is new again.
			snap, replayed, err := do(tc.retention, req)
			if err != nil || replayed || snap.Status != 201 || runs != 2 {
				t.Fatalf("at retention %s: status %v replayed %v err %v runs %d; want a new run", tc.retention, snap, replayed, err, runs)
			}
		})
	}
}
