// Command idembench measures what idemkit costs a Lambda handler and
// prints one table: per path and response size, the DynamoDB round trips
// and capacity units, p50/p99 latency of the wrapped handler on dynalite
// against the bare handler plus the raw SDK calls the path needs (the
// overhead ratio), and the CPU and allocations of both adapters over the
// in-memory store; then cold start and binary size. `make bench` runs it
// from the module root; docs/PERFORMANCE.md explains the figures.
//
//	idembench [-n rounds] [-runs processes] [-gobench file] [-cold=false] [-paths fresh,replay]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/bench"
	"github.com/idemkit/idemkit/internal/dynalite"
)

func main() {
	n := flag.Int("n", 300, "measured rounds per path and size")
	runs := flag.Int("runs", 7, "fresh processes per cold-start variant")
	gobench := flag.String("gobench", "", "file holding `go test -bench -benchmem` output of the adapter benchmarks")
	cold := flag.Bool("cold", true, "measure cold start and binary size")
	paths := flag.String("paths", "", "comma-separated paths to measure (default: all of "+strings.Join(bench.Paths, ",")+")")
	flag.Parse()
	var only []string
	if *paths != "" {
		only = strings.Split(*paths, ",")
	}
	if err := run(os.Stdout, *n, *runs, *gobench, *cold, only); err != nil {
		fmt.Fprintln(os.Stderr, "idembench:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, n, runs int, gobench string, cold bool, paths []string) error {
	ctx := context.Background()
	machine(w)

	endpoint := os.Getenv(dynalite.EnvEndpoint)
	if endpoint == "" {
		srv, err := dynalite.Start(ctx)
		if err != nil {
			return err
		}
		defer srv.Stop()
		endpoint = srv.Endpoint()
	}
	client, err := dynalite.NewClient(ctx, endpoint)
	if err != nil {
		return err
	}
	table := fmt.Sprintf("idembench-%d", time.Now().UnixNano())
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		return err
	}

	var cpu map[bench.CPUKey]bench.CPU
	if gobench != "" {
		f, err := os.Open(gobench)
		if err != nil {
			return err
		}
		cpu, err = bench.ParseGoBench(f)
		f.Close()
		if err != nil {
			return err
		}
	}

	fmt.Fprintln(os.Stderr, "idembench: measuring each path and size on dynalite...")
	start := time.Now()
	rows, err := bench.Latency(ctx, client, table, n, paths)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n## Per request (dynalite, %d interleaved rounds per row, %s)\n\n", n, time.Since(start).Round(time.Second))
	table1(w, rows, cpu)
	targets(w, rows)

	if cold {
		fmt.Fprintln(os.Stderr, "idembench: building the cold-start programs and timing fresh processes...")
		if err := coldStart(ctx, w, client, endpoint, runs); err != nil {
			return err
		}
	}
	return nil
}

func machine(w io.Writer) {
	commit := "unknown"
	if b, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		commit = strings.TrimSpace(string(b))
		if out, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(out) > 0 {
			commit += " (with uncommitted changes)"
		}
	}
	model := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	dl := "unknown"
	if dir, err := dynalite.Dir(); err == nil {
		if b, err := os.ReadFile(filepath.Join(dir, "node_modules", "dynalite", "package.json")); err == nil {
			var p struct{ Version string }
			if json.Unmarshal(b, &p) == nil {
				dl = p.Version
			}
		}
	}
	fmt.Fprintf(w, "# idembench\n\ncommit %s; %s/%s, %d CPUs (%s); %s; dynalite %s\n",
		commit, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), model, runtime.Version(), dl)
}

func dur(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	default:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
}

func size(n int) string {
	if n >= 1<<10 {
		return fmt.Sprintf("%dKB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

func table1(w io.Writer, rows []bench.Row, cpu map[bench.CPUKey]bench.CPU) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "path\tsize\tcalls\tRCU\tWCU\tp50\tp99\tbare p50\tsame p50\tsame p99\tratio\tmin p50\tratio min\tv2 ns/op\tv2 allocs\thttp ns/op\thttp allocs\tddb ns/op\tddb allocs\t")
	for _, r := range rows {
		ratio, ratioMin := "-", "-"
		if r.Ratio > 0 {
			ratio, ratioMin = fmt.Sprintf("%.3f", r.Ratio), fmt.Sprintf("%.3f", r.RatioMin)
		}
		c := func(adapter string) (string, string) {
			v, ok := cpu[bench.CPUKey{Adapter: adapter, Path: r.Path, Size: r.Size}]
			if !ok {
				return "-", "-"
			}
			return fmt.Sprintf("%.0f", v.NsPerOp), fmt.Sprint(v.AllocsPerOp)
		}
		v2ns, v2a := c("v2")
		hns, ha := c("http")
		dns, da := c("ddb")
		fmt.Fprintf(tw, "%s\t%s\t%d\t%g\t%g\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			r.Path, size(r.Size), r.Calls, r.ReadUnits, r.WriteUnits, dur(r.P50), dur(r.P99), dur(r.BareP50),
			dur(r.SameP50), dur(r.SameP99), ratio, dur(r.MinP50), ratioMin, v2ns, v2a, hns, ha, dns, da)
	}
	tw.Flush()
}

// targets prints the overhead-ratio target per row it applies to.
func targets(w io.Writer, rows []bench.Row) {
	worst, worstMin := 0.0, 0.0
	fmt.Fprintln(w)
	for _, r := range rows {
		if r.Path != "fresh" && r.Path != "replay" {
			continue
		}
		worst, worstMin = max(worst, r.Ratio), max(worstMin, r.RatioMin)
	}
	verdict := func(x float64) string {
		if x > 1.10 {
			return "NOT met"
		}
		return "met"
	}
	fmt.Fprintf(w, "overhead ratio, fresh and replay, worst of %d sizes: %.3f vs the same requests (target <= 1.10: %s); %.3f vs minimal calls (%s)\n",
		len(bench.Sizes), worst, verdict(worst), worstMin, verdict(worstMin))
}

func coldStart(ctx context.Context, w io.Writer, client dynamo.TableClient, endpoint string, runs int) error {
	dir, err := os.MkdirTemp("", "idembench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	arm, err := bench.Build(ctx, dir, "linux", "arm64")
	if err != nil {
		return err
	}
	host, err := bench.Build(ctx, dir, runtime.GOOS, runtime.GOARCH)
	if err != nil {
		return err
	}
	table := fmt.Sprintf("idembench-cold-%d", time.Now().UnixNano())
	if err := dynamo.CreateTable(ctx, client, table); err != nil {
		return err
	}
	times, err := bench.ColdStarts(ctx, host, runs, []string{
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=" + dynalite.Region,
		"AWS_EC2_METADATA_DISABLED=true", "IDEMKIT_DYNAMODB_ENDPOINT=" + endpoint, "IDEMKIT_TABLE=" + table,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n## Cold start (%s/%s, median of %d fresh processes, interleaved) and bootstrap size (linux/arm64, %s)\n\n",
		runtime.GOOS, runtime.GOARCH, runs, strings.Join(bench.BuildFlags, " "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "variant\tmedian\tmin\tmax\tvs bare\tbinary\tvs bare\t")
	bare := bench.Cold{Times: times["bare"]}.Median()
	var bareSize int64
	for _, v := range bench.Variants {
		st, err := os.Stat(arm[v])
		if err != nil {
			return err
		}
		if v == "bare" {
			bareSize = st.Size()
		}
		c := bench.Cold{Variant: v, Times: times[v], Size: st.Size()}
		s := bench.SortedTimes(c.Times)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%+.2fms\t%.2fMB\t%+.2fMB\t\n", v, dur(c.Median()), dur(s[0]), dur(s[len(s)-1]),
			float64(c.Median()-bare)/float64(time.Millisecond), float64(c.Size)/(1<<20), float64(c.Size-bareSize)/(1<<20))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nbare: the handler alone; memory: wrapped over the in-memory store; dynamodb: wrapped over DynamoDB")
	fmt.Fprintln(w, "(SDK config from the environment, first invocation = a new connection + claim + complete).")
	return nil
}
