package explore

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"testing/synctest"
)

var (
	listFlag  = flag.Bool("explore.list", false, "list the shortest history breaking each guarantee, and explore on, instead of failing")
	deepFlag  = flag.Bool("explore.deep", false, "explore make model's deeper bounds")
	onlyFlag  = flag.String("explore.only", "", "explore only the configuration with this name")
	depthFlag = flag.Int("explore.depth", 0, "override every configuration's depth bound")
)

// TestExplore explores every history within the bounds and fails with a
// shortest one that breaks a guarantee.
func TestExplore(t *testing.T) {
	for _, cfg := range Configs(*deepFlag) {
		if *onlyFlag != "" && cfg.Name != *onlyFlag {
			continue
		}
		if *depthFlag > 0 {
			cfg.Depth = *depthFlag
		}
		t.Run(cfg.Name, func(t *testing.T) {
			t.Parallel() // each configuration explores in bubbles of its own
			bubble := func(f func()) { synctest.Test(t, func(*testing.T) { f() }) }
			res, err := Search(cfg, bubble, synctest.Wait, *listFlag)
			if err != nil {
				t.Fatal(err)
			}
			summarize(t, res.Summary())
			if *deepFlag || *listFlag {
				fmt.Println(res.Summary())
				fmt.Print(res.Report())
			}
			if len(res.Violations) > 0 && !*listFlag {
				t.Fatalf("%s", res.Report())
			}
		})
	}
}

// summaryMu serializes the appends of the configurations, which explore
// in parallel.
var summaryMu sync.Mutex

// summarize logs line, and appends it to the file IDEMKIT_EXPLORE_SUMMARY
// names, if any: make test prints that file, since go test shows a
// passing test's log only with -v.
func summarize(t *testing.T, line string) {
	t.Log(line)
	p := os.Getenv("IDEMKIT_EXPLORE_SUMMARY")
	if p == "" {
		return
	}
	summaryMu.Lock()
	defer summaryMu.Unlock()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}
