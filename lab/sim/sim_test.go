package sim

import (
	"flag"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/idemkit/idemkit/memstore"
)

var (
	seedFlag  = flag.String("seed", "", "run only this seed (a failing run prints it)")
	seedsFlag = flag.Int("seeds", 500, "how many seeds to run, from -first (make test: the default; make sim SEEDS=N)")
	firstFlag = flag.Uint64("first", 1, "the first seed run")
	stepsFlag = flag.Int("steps", 120, "steps per history")
	histFlag  = flag.Bool("history", false, "print the history of every seed run")
)

// run runs a history in a bubble of its own: goroutines blocked, time
// still, until the world moves it.
func run(t *testing.T, p Params, steps []Step) *Result {
	var res *Result
	synctest.Test(t, func(t *testing.T) {
		var err error
		if res, err = Run(p, steps, nil, synctest.Wait); err != nil {
			t.Fatal(err)
		}
	})
	return res
}

// TestSim runs the seeded histories and checks every invariant after
// every step. A failure prints the shrunk history; `-seed N` runs it
// again, exactly.
func TestSim(t *testing.T) {
	seeds := make([]uint64, 0, *seedsFlag)
	if *seedFlag != "" {
		s, err := strconv.ParseUint(*seedFlag, 10, 64)
		if err != nil {
			t.Fatalf("-seed %q: %v", *seedFlag, err)
		}
		seeds = append(seeds, s)
	} else {
		for i := 0; i < *seedsFlag; i++ {
			seeds = append(seeds, *firstFlag+uint64(i))
		}
	}
	var total Stats
	for _, seed := range seeds {
		p, steps := Generate(seed, *stepsFlag)
		if testing.Verbose() && *seedFlag != "" {
			t.Logf("seed %d", seed)
		}
		res := run(t, p, steps)
		if *histFlag {
			t.Logf("seed %d:\n%s", seed, res.History())
		}
		if v := res.Violation; v != nil {
			short := Shrink(steps, v.Invariant, func(s []Step) *Violation { return run(t, p, s).Violation })
			again := run(t, p, short)
			t.Fatalf("seed %d: %s\nshrunk from %d to %d steps; replay with: cd lab && go test ./sim -run TestSim -seed %d\n%s",
				seed, v, len(steps), len(short), seed, again.History())
		}
		total.Steps += res.Stats.Steps
		total.Requests += res.Stats.Requests
		total.Executions += res.Stats.Executions
		total.Faults += res.Stats.Faults
		total.LateCopies += res.Stats.LateCopies
		total.Resolutions += res.Stats.Resolutions
	}
	t.Logf("SIM histories=%d steps=%d requests=%d executions=%d faults=%d late_copies=%d resolutions=%d violations=0",
		len(seeds), total.Steps, total.Requests, total.Executions, total.Faults, total.LateCopies, total.Resolutions)
}

// unlisted is a store that does not list stale leases.
type unlisted struct{ *memstore.Store }

func (unlisted) ListsStale() bool { return false }

// TestNewWorldNeedsStaleListing: a world refuses a store whose stale
// leases the operator could not list, since the invariants take every
// waiting record to be visible.
func TestNewWorldNeedsStaleListing(t *testing.T) {
	p, _ := Generate(1, 1)
	if _, err := NewWorld(p, unlisted{memstore.New()}, func() {}); err == nil {
		t.Fatal("NewWorld over a store that does not list stale leases: no error")
	}
	if _, err := NewWorld(p, memstore.New(), func() {}); err != nil {
		t.Fatalf("NewWorld over a memstore: %v", err)
	}
}
