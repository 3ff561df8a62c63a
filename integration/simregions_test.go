package integration

import (
	"context"
	"flag"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/lab/sim"
)

var (
	regionsSeed  = flag.Uint64("regions.seed", 0, "TestSimRegions: run only this seed, and shrink it if it fails")
	regionsSeeds = flag.Int("regions.seeds", 0, "TestSimRegions: how many seeds to run (0: the default of the mode)")
	regionsFirst = flag.Uint64("regions.first", 0, "TestSimRegions: the first seed run (0: one from the time)")
	regionsSteps = flag.Int("regions.steps", 0, "TestSimRegions: steps per history (0: the default of the mode)")
)

// TestSimRegions runs the two-region world of lab/sim (RunRegions):
// the simulation's clients, faults, handlers and operators over
// dynamo.NewRegional, its instances alternating between two regions, each
// a server of its own, under a replication of global tables (last writer
// wins per item, lagging, halted while a region is cut off), through
// outages, failovers (dynamo.Failover), reconciliations and failbacks; the
// simulation's invariants and those of the failover fence are checked
// after every step. The servers' timing makes a run not deterministic,
// though each history runs the same calls in the same order: a failure
// names its seed, which `-regions.seed N` runs again and shrinks (with
// -v, the history of every run). Each history has a table of its own on
// both servers.
func TestSimRegions(t *testing.T) {
	dynalite.SkipIfDisabled(t)
	histories, steps := size(5, 40), size(80, 120)
	if *regionsSeeds > 0 {
		histories = *regionsSeeds
	}
	if *regionsSteps > 0 {
		steps = *regionsSteps
	}
	base := uint64(time.Now().UnixNano())
	if *regionsFirst != 0 {
		base = *regionsFirst
	}
	if *regionsSeed != 0 {
		histories, base = 1, *regionsSeed
	}
	eastEP, westEP := dynalite.NewServer(t).Endpoint(), dynalite.NewServer(t).Endpoint()
	setupE, setupW := newSDKClient(t, eastEP, nil), newSDKClient(t, westEP, nil)
	// No idle connections: a connection's reader would never be blocked
	// for the bubble, and the world waits for every goroutine to block
	// after each action.
	rt := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	east, west := newSDKClient(t, eastEP, rt), newSDKClient(t, westEP, rt)
	run := func(p sim.RegionParams, hist []sim.Step) (*sim.Result, sim.RegionStats) {
		table := dynalite.TableName(t)
		for _, c := range []dynamo.TableClient{setupE, setupW} {
			if err := dynamo.CreateTable(context.Background(), c, table, dynamo.Options{}); err != nil {
				t.Fatal(err)
			}
		}
		var (
			res   *sim.Result
			stats sim.RegionStats
			err   error
		)
		synctest.Test(t, func(t *testing.T) {
			res, stats, err = sim.RunRegions(p, hist, sim.Servers{East: east, West: west, Table: table,
				Options: dynamo.Options{CallTimeout: callTimeout}}, synctest.Wait)
		})
		if err != nil {
			t.Fatal(err)
		}
		return res, stats
	}
	var total sim.Stats
	var regions sim.RegionStats
	for i := 0; i < histories; i++ {
		seed := base + uint64(i)
		p, hist := sim.GenerateRegions(seed, steps)
		res, rs := run(p, hist)
		if testing.Verbose() && *regionsSeed != 0 {
			t.Logf("seed %d:\n%s", seed, res.History())
		}
		if v := res.Violation; v != nil {
			if *regionsSeed == 0 {
				t.Fatalf("seed %d on two regions: %s\n%s\nworld: %s\nrun it again, shrunk, with: go test -run TestSimRegions -regions.seed %d .",
					seed, v, res.History(), p, seed)
			}
			short := sim.Shrink(hist, v.Invariant, func(s []sim.Step) *sim.Violation { r, _ := run(p, s); return r.Violation })
			again, _ := run(p, short)
			t.Fatalf("seed %d on two regions: %s\nshrunk from %d to %d steps:\n%s\nworld: %s", seed, v, len(hist), len(short), again.History(), p)
		}
		total.Steps += res.Stats.Steps
		total.Requests += res.Stats.Requests
		total.Executions += res.Stats.Executions
		total.Faults += res.Stats.Faults
		regions.Outages += rs.Outages
		regions.Failovers += rs.Failovers
		regions.Failbacks += rs.Failbacks
		regions.Reconciled += rs.Reconciled
		regions.Accepted += rs.Accepted
		regions.Replicated += rs.Replicated
		regions.Conflicts += rs.Conflicts
		regions.Fenced += rs.Fenced
		regions.AcceptedRuns += rs.AcceptedRuns
	}
	summary(t, "histories=%d steps=%d requests=%d executions=%d faults=%d outages=%d failovers=%d failbacks=%d reconciled=%d accepted=%d replicated=%d lww_kept=%d fenced=%d accepted_runs=%d violations=0",
		histories, total.Steps, total.Requests, total.Executions, total.Faults, regions.Outages, regions.Failovers, regions.Failbacks,
		regions.Reconciled, regions.Accepted, regions.Replicated, regions.Conflicts, regions.Fenced, regions.AcceptedRuns)
}

// runRegionHistory runs one history of the two-region world on two
// servers of its own and fails t on a violation.
func runRegionHistory(t *testing.T, p sim.RegionParams, hist []sim.Step) *sim.Result {
	t.Helper()
	dynalite.SkipIfDisabled(t)
	eastEP, westEP := dynalite.NewServer(t).Endpoint(), dynalite.NewServer(t).Endpoint()
	table := dynalite.TableName(t)
	for _, ep := range []string{eastEP, westEP} {
		if err := dynamo.CreateTable(context.Background(), newSDKClient(t, ep, nil), table, dynamo.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	rt := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	srv := sim.Servers{East: newSDKClient(t, eastEP, rt), West: newSDKClient(t, westEP, rt), Table: table, Options: dynamo.Options{CallTimeout: callTimeout}}
	var (
		res *sim.Result
		err error
	)
	synctest.Test(t, func(t *testing.T) { res, _, err = sim.RunRegions(p, hist, srv, synctest.Wait) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Violation != nil {
		t.Fatalf("%s\n%s", res.Violation, res.History())
	}
	return res
}

// The handler's plans in the histories below: answer 201; run on until
// resumed.
const planOK, planPark = 0, 7

// TestSimRegionsLateCompletion runs one history of the two-region world
// (seed 172 found its like): a run completes in the tenant's home after
// its claim replicated; the operator fails the tenant over; a retry in the
// new region, after the lease the replica holds ended, must not mark that
// replica indeterminate (the mark, the later write, would win over the
// completion at reconciliation, and the request would never again be
// answered with its response: completion-kept). Once reconciled, the
// retry is replayed.
func TestSimRegionsLateCompletion(t *testing.T) {
	p := sim.RegionParams{Params: sim.Params{Policy: idemkit.FailClosed, ReplayWindow: 10 * time.Minute, Retention: 20 * time.Minute, MaxRenewals: 1,
		Skews: []time.Duration{0, 0}, Clients: []sim.Client{{Tenant: 1000, Key: "k1", Order: 1}}}}
	res := runRegionHistory(t, p, []sim.Step{
		{Kind: sim.Send, Instance: 0, Outcome: planPark}, // in the east, the tenant's home
		{Kind: sim.Replicate, Instance: 0},               // its claim reaches the west
		{Kind: sim.Resume, Outcome: planOK},              // it completes in the east only
		{Kind: sim.Outage, Instance: 0},
		{Kind: sim.Failover}, // to the west
		{Kind: sim.Advance, D: 45 * time.Second},
		{Kind: sim.Send, Instance: 1, Outcome: planOK}, // a retry in the west, the replica's lease ended
		{Kind: sim.Heal},
		{Kind: sim.Reconcile},
		{Kind: sim.Send, Instance: 1, Outcome: planOK},
	})
	if !strings.Contains(res.History(), "r3 answered: 201 replay of e1") {
		t.Fatalf("the retry once reconciled (r3) is not the replay of e1:\n%s", res.History())
	}
}

// TestSimRegionsResolveAfterFailover runs the history seed 354 shrank to:
// under Takeover a retry in the tenant's home (west) takes a frozen run's
// lease over and completes; the operator fails the tenant over to the
// east, whose replica still holds the frozen run's stale lease, and an
// operator there resolves it completed. The resolution, the later write,
// would win over the completion in the west at reconciliation
// (completion-kept), and a failed one would let the key run a third time:
// under the fence it is refused. Once reconciled, the retry is replayed
// the completion.
func TestSimRegionsResolveAfterFailover(t *testing.T) {
	p := sim.RegionParams{Params: sim.Params{Policy: idemkit.Takeover, ReplayWindow: 8 * time.Minute, Retention: 18 * time.Minute, MaxRenewals: 4,
		Skews: []time.Duration{492 * time.Millisecond, 142 * time.Millisecond}, Clients: []sim.Client{{Tenant: 1001, Key: "k2", Order: 2}}},
		KeyClockSkew: 2 * time.Minute}
	res := runRegionHistory(t, p, []sim.Step{
		{Kind: sim.Send, Instance: 0, Outcome: planPark, Deadline: 3 * time.Second}, // claimed in the west, the tenant's home
		{Kind: sim.Replicate, Instance: 1},                                          // the claim reaches the east
		{Kind: sim.Advance, D: 5 * time.Minute},                                     // the run is frozen at its deadline
		{Kind: sim.Send, Instance: 0, Outcome: planOK, Deadline: 3 * time.Second},   // a retry takes it over and completes, in the west
		{Kind: sim.Failover, D: 218 * time.Millisecond},                             // to the east
		{Kind: sim.Operate, Instance: 0, Op: 2},                                     // resolve the east's stale lease completed
		{Kind: sim.Replicate, Instance: 1},
		{Kind: sim.Reconcile},
		{Kind: sim.Send, Instance: 0, Outcome: planOK, Deadline: 3 * time.Second},
	})
	if !strings.Contains(res.History(), "r3 answered: 201 replay of e2") {
		t.Fatalf("the retry once reconciled (r3) is not the replay of e2:\n%s", res.History())
	}
}
