package integration

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/lab/sim"
)

// TestSimDynamo runs the world of lab/sim against the DynamoDB store
// on the test server: the same clients, faults (injected at the Store
// boundary), handlers, operators and invariants, every step. The server's
// own timing makes a run not deterministic: a failure names its seed,
// whose history replays against the memory store with
// `cd lab && go test ./sim -run TestSim -seed N` (it may not fail there).
// Each history has a table of its own.
func TestSimDynamo(t *testing.T) {
	dynalite.SkipIfDisabled(t)
	histories, steps := size(10, 60), size(100, 120)
	base := uint64(time.Now().UnixNano())
	var total sim.Stats
	for i := 0; i < histories; i++ {
		seed := base + uint64(i)
		raw := dynalite.Client(t)
		table := dynalite.CreateTable(t, raw, dynamo.TableDefinition("sim", dynamo.Options{}))
		// No idle connections: a connection's reader would never be
		// blocked for the bubble, and the world waits for every goroutine
		// to block after each action.
		rt := &http.Transport{Proxy: nil, DisableKeepAlives: true}
		store, err := dynamo.New(newSDKClient(t, dynalite.Endpoint(t), rt), table, dynamo.Options{IndexInFlight: true, CallTimeout: callTimeout})
		if err != nil {
			t.Fatal(err)
		}
		p, hist := sim.Generate(seed, steps)
		var res *sim.Result
		synctest.Test(t, func(t *testing.T) {
			if res, err = sim.Run(p, hist, store, synctest.Wait); err != nil {
				t.Fatal(err)
			}
		})
		if res.Violation != nil {
			t.Fatalf("seed %d on DynamoDB: %s\n%s", seed, res.Violation, res.History())
		}
		total.Steps += res.Stats.Steps
		total.Requests += res.Stats.Requests
		total.Executions += res.Stats.Executions
		total.Faults += res.Stats.Faults
		total.LateCopies += res.Stats.LateCopies
		total.Resolutions += res.Stats.Resolutions
	}
	summary(t, "histories=%d steps=%d requests=%d executions=%d faults=%d late_copies=%d resolutions=%d violations=0",
		histories, total.Steps, total.Requests, total.Executions, total.Faults, total.LateCopies, total.Resolutions)
}
