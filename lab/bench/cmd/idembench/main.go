// Command idembench measures what idemkit costs a Lambda handler and
// prints one table: per path and response size, the DynamoDB round trips
// and capacity units, p50/p99 latency of the wrapped handler on dynalite
// against the bare handler plus the raw SDK calls the path needs (the
// overhead ratio), and the CPU and allocations of both adapters over the
// in-memory store; then cold start and binary size. `make bench` runs it
// from the lab module's directory, lab/. lab/bench/RESULTS.md explains the figures.
//
// It also measures throughput with 1, 8 and 32 concurrent clients through
// httpmw, repeats the fresh and replay rows for the overhead ratio (the
// worst of -ratio-runs runs is the one judged), and, when moto_server is
// on PATH, the replay on a server that returns the item with a failed
// conditional write (1 call, as on DynamoDB). Each target is printed with
// "met" or "NOT met" and what was measured against it.
//
//	idembench [-n rounds] [-runs processes] [-gobench file] [-cold=false] [-paths fresh,replay]
//	          [-ratio-runs 3] [-throughput=false] [-moto=false]
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
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/testpayload"
	"github.com/idemkit/idemkit/lab/bench"
)

func main() {
	n := flag.Int("n", 200, "measured rounds per path and size")
	runs := flag.Int("runs", 7, "fresh processes per cold-start variant")
	gobench := flag.String("gobench", "", "file holding `go test -bench -benchmem` output of the adapter benchmarks")
	cold := flag.Bool("cold", true, "measure cold start and binary size")
	paths := flag.String("paths", "", "comma-separated paths to measure (default: all of "+strings.Join(bench.Paths, ",")+")")
	flag.IntVar(&opts.ratioRuns, "ratio-runs", 3, "runs of the fresh and replay rows; the overhead ratio judged is the worst")
	flag.BoolVar(&opts.throughput, "throughput", true, "measure throughput with 1, 8 and 32 concurrent clients")
	flag.IntVar(&opts.tpRequests, "tp-requests", 320, "requests per throughput phase (split among the clients)")
	flag.IntVar(&opts.tpRounds, "tp-rounds", 4, "kit and raw throughput phases per concurrency, alternated; each variant's are pooled")
	flag.BoolVar(&opts.moto, "moto", true, "when moto_server is on PATH, time the request shapes and the replay on it too")
	flag.BoolVar(&opts.ddbLocal, "dynamodb-local", true, "when java is on PATH, measure on DynamoDB Local too: the cost table, the per-request rows, their ratios and the request shapes")
	flag.IntVar(&opts.ddbLocalN, "dynamodb-local-n", 120, "measured rounds per path and size on DynamoDB Local")
	flag.IntVar(&opts.costN, "cost-n", 60, "requests per path, size and codec in the cost table")
	flag.IntVar(&opts.shapesN, "shapes-n", 60, "rounds per request shape on dynalite and DynamoDB Local (a third of them on moto, which is slower)")
	flag.IntVar(&opts.causesN, "causes-n", 150, "rounds of each situation a 64 KB body is compressed in (0: none)")
	flag.Float64Var(&opts.prices.WriteUnit, "price-wru", bench.DefaultPrices.WriteUnit, "dollars per million write request units")
	flag.Float64Var(&opts.prices.ReadUnit, "price-rru", bench.DefaultPrices.ReadUnit, "dollars per million read request units")
	flag.Float64Var(&opts.prices.GBSecond, "price-gbs", bench.DefaultPrices.GBSecond, "dollars per Lambda GB-second")
	flag.StringVar(&opts.prices.Region, "price-region", bench.DefaultPrices.Region, "the region of the prices")
	flag.StringVar(&opts.prices.Date, "price-date", bench.DefaultPrices.Date, "the date the prices were read")
	flag.StringVar(&opts.prices.Source, "price-source", bench.DefaultPrices.Source, "where the prices were read")
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

// opts are the flags beyond run's parameters.
var opts struct {
	ratioRuns  int
	throughput bool
	tpRequests int
	tpRounds   int
	moto       bool
	ddbLocal   bool
	ddbLocalN  int
	costN      int
	shapesN    int
	causesN    int
	prices     bench.Prices
}

// tpSize is the response size of the throughput rows.
const tpSize = 4 << 10

// run prints the report to w, measured on the server at
// IDEMKIT_DYNAMODB_ENDPOINT or else on a dynalite it starts, and on
// DynamoDB Local and moto_server where they are installed: the cost
// table (on the server that bills like DynamoDB, DynamoDB Local where
// there is one), the per-request table and the overhead ratio runs on
// each of the first two, what compressing costs in each situation, each
// request shape on every server, throughput and moto's replay as opts
// say, the targets, then cold start when cold is set.
func run(w io.Writer, n, runs int, gobench string, cold bool, paths []string) error {
	ctx := context.Background()
	dl := machine(w)

	main := &target{name: "dynalite " + dl}
	endpoint := os.Getenv(dynalite.EnvEndpoint)
	if endpoint == "" {
		srv, err := dynalite.Start(ctx)
		if err != nil {
			return err
		}
		defer srv.Stop()
		endpoint = srv.Endpoint()
	} else {
		main.name = "the server at " + endpoint + " (" + dynalite.EnvEndpoint + ")"
	}
	if err := main.open(ctx, endpoint); err != nil {
		return err
	}
	local, stopLocal, skipLocal, err := startDynamoDBLocal(ctx)
	if err != nil {
		return err
	}
	defer stopLocal()

	var res results
	res.main, res.local, res.localSkipped = main, local, skipLocal
	costOn := main
	if local != nil {
		costOn = local
	}
	if res.cost, err = measureCost(ctx, w, costOn.client, costOn.table, costOn.name, opts.costN); err != nil {
		return err
	}
	if res.cpu, err = readGoBench(gobench); err != nil {
		return err
	}
	for _, t := range []*target{main, local} {
		if t == nil {
			continue
		}
		rounds := n
		if t == local {
			rounds = opts.ddbLocalN
		}
		if t.rows, t.allOld, err = perRequest(ctx, w, t.client, t.table, t.name, rounds, paths, res.cpu); err != nil {
			return err
		}
		if t.worst, t.runs, err = worstRatio(ctx, w, t.client, t.table, rounds, t.rows); err != nil {
			return err
		}
	}
	if local == nil {
		fmt.Fprintf(w, "\n## DynamoDB Local: not measured (%s)\n", skipLocal)
	}
	if opts.causesN > 0 {
		if res.causes, err = compressCauses(ctx, w, main, opts.causesN); err != nil {
			return err
		}
	}
	var moto *dynalite.Server
	if opts.moto {
		if moto, res.motoSkipped, err = startMoto(ctx); err != nil {
			return err
		}
		if moto != nil {
			defer moto.Stop()
		}
	}
	if res.shapes, err = shapes(ctx, w, main, local, moto, skipLocal, res.motoSkipped); err != nil {
		return err
	}
	res.rows, res.worstRatio = main.rows, main.worst
	if opts.throughput {
		if res.tp, err = throughput(ctx, w, main.client, main.table, main.name); err != nil {
			return err
		}
	}
	if moto != nil {
		if res.moto, err = motoReplay(ctx, w, moto, min(n/2, 60)); err != nil {
			return err
		}
	} else if opts.moto {
		res.moto = &motoResult{skipped: res.motoSkipped}
	}
	res.replayCalls, res.replayServer = replayCalls(res.rows, main.allOld, main.name)
	targets(w, res)

	if cold {
		fmt.Fprintln(os.Stderr, "idembench: building the cold-start programs and timing fresh processes...")
		if err := coldStart(ctx, w, main.client, endpoint, runs); err != nil {
			return err
		}
	}
	return nil
}

// readGoBench reads the adapter benchmarks' figures from the file named
// gobench; it returns nil for no file.
func readGoBench(gobench string) (map[bench.CPUKey]bench.CPU, error) {
	if gobench == "" {
		return nil, nil
	}
	f, err := os.Open(gobench)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return bench.ParseGoBench(f)
}

// perRequest measures every path and size on the server and prints them
// with the adapter benchmarks' cpu in the per-request table; it returns
// the rows and whether the server returns the item with a failed
// conditional write.
func perRequest(ctx context.Context, w io.Writer, client *dynamodb.Client, table, server string, n int, paths []string, cpu map[bench.CPUKey]bench.CPU) ([]bench.Row, bool, error) {
	allOld, err := bench.ReturnsItemOnConditionFailure(ctx, client, table)
	if err != nil {
		return nil, false, err
	}
	fmt.Fprintf(os.Stderr, "idembench: measuring each path and size on %s...\n", server)
	start := time.Now()
	rows, err := bench.Latency(ctx, client, table, n, paths)
	if err != nil {
		return nil, false, err
	}
	s2, err := s2Rows(ctx, client, table, n, paths)
	if err != nil {
		return nil, false, err
	}
	rows = append(rows, s2...)
	fmt.Fprintf(w, "\n## Per request (%s, %s; %d interleaved rounds per row, %s)\n\n", server, allOldNote(allOld), n, time.Since(start).Round(time.Second))
	table1(w, rows, cpu)
	return rows, allOld, nil
}

// s2Paths are the paths measured again over a store with dynamo.CodecS2,
// at the sizes it compresses (testpayload.Sizes[1:]).
var s2Paths = []string{"fresh", "replay"}

// s2Rows measures the s2Paths among paths (all when paths is empty) over
// a store with dynamo.CodecS2.
func s2Rows(ctx context.Context, client *dynamodb.Client, table string, n int, paths []string) ([]bench.Row, error) {
	var these []string
	for _, p := range s2Paths {
		if len(paths) == 0 || slices.Contains(paths, p) {
			these = append(these, p)
		}
	}
	if len(these) == 0 {
		return nil, nil
	}
	fmt.Fprintf(os.Stderr, "idembench: the same over a store with dynamo.CodecS2...\n")
	return bench.LatencyWith(ctx, client, table, n, these, testpayload.Sizes[1:], dynamo.CodecS2)
}

// worstRatio measures the fresh and replay rows again until there are
// opts.ratioRuns runs with rows the first, prints the ratios of every run
// and returns the worst of each codec, and the runs.
func worstRatio(ctx context.Context, w io.Writer, client *dynamodb.Client, table string, n int, rows []bench.Row) (map[dynamo.Codec]ratioAt, [][]bench.Row, error) {
	runsOf := [][]bench.Row{rows}
	for i := 1; i < opts.ratioRuns; i++ {
		fmt.Fprintf(os.Stderr, "idembench: overhead ratio, run %d of %d...\n", i+1, opts.ratioRuns)
		more, err := bench.Latency(ctx, client, table, n, []string{"fresh", "replay"})
		if err != nil {
			return nil, nil, err
		}
		s2, err := s2Rows(ctx, client, table, n, nil)
		if err != nil {
			return nil, nil, err
		}
		runsOf = append(runsOf, append(more, s2...))
	}
	return ratios(w, runsOf), runsOf, nil
}

// tpCodecs are the codecs the throughput rows are measured with: the
// default, then S2, the codec for CPU.
var tpCodecs = []dynamo.Codec{"", dynamo.CodecS2}

// throughput measures and prints the throughput rows, a table per codec.
func throughput(ctx context.Context, w io.Writer, client *dynamodb.Client, table, server string) ([]bench.ThroughputRow, error) {
	var all []bench.ThroughputRow
	for _, codec := range tpCodecs {
		fmt.Fprintf(os.Stderr, "idembench: throughput with %v concurrent clients, %s...\n", bench.Clients, codecName(codec))
		start := time.Now()
		tp, err := bench.Throughput(ctx, client, table, tpSize, opts.tpRequests, opts.tpRounds, dynamo.Options{Codec: codec})
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "\n## Throughput, %s (%s; fresh requests with a %s response through httpmw; %d requests per phase, kit and raw phases alternated %d times, each variant's phases pooled; %s)\n\n",
			codecName(codec), server, size(tpSize), opts.tpRequests, opts.tpRounds, time.Since(start).Round(time.Second))
		all = append(all, throughputTable(w, tp)...)
	}
	return all, nil
}

// replayCalls returns the most calls of a replay row and the server, or
// -1 and "" where the server does not return the item with a failed
// conditional write (allOld false).
func replayCalls(rows []bench.Row, allOld bool, server string) (int, string) {
	if !allOld {
		return -1, ""
	}
	calls := 0
	for _, r := range rows {
		if r.Path == "replay" {
			calls = max(calls, r.Calls)
		}
	}
	return calls, server
}

// machine prints the commit and the machine; it returns dynalite's version.
func machine(w io.Writer) string {
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
	fmt.Fprintf(w, "# idembench\n\ncommit %s; %s/%s, %d CPUs (%s); %s; dynalite %s; load average %s\n",
		commit, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), model, runtime.Version(), dl, loadAvg())
	return dl
}

// loadAvg returns the 1-minute load average, "unknown" where there is
// no /proc/loadavg: on a shared machine it says how much CPU the run had.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

func allOldNote(allOld bool) string {
	if allOld {
		return "returns the item with a failed conditional write, as DynamoDB does"
	}
	return "does not return the item with a failed conditional write: replay and conflict take a GetItem more than on DynamoDB"
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
	fmt.Fprintln(tw, "path\tsize\tcalls\tRCU\tWCU\tp50\tp99\tbare p50\tsame p50\tsame p99\tz on path\tz in situ\tratio\tmin p50\tratio min\tv2 ns/op\tv2 allocs\thttp ns/op\thttp allocs\tddb ns/op\tddb cpu ns/op\tddb allocs\tddb B/op\t")
	for _, r := range rows {
		ratio, ratioMin := "-", "-"
		if r.Ratio > 0 {
			ratio, ratioMin = fmt.Sprintf("%.3f", r.Ratio), fmt.Sprintf("%.3f", r.RatioMin)
		}
		c := func(adapter string) (string, string) {
			v, ok := cpu[bench.CPUKey{Adapter: adapter, Path: r.Path, Size: r.Size}]
			if !ok || r.Codec != "" {
				return "-", "-"
			}
			return fmt.Sprintf("%.0f", v.NsPerOp), fmt.Sprint(v.AllocsPerOp)
		}
		v2ns, v2a := c("v2")
		hns, ha := c("http")
		dns, da, dcpu, db := "-", "-", "-", "-"
		if v, ok := cpu[bench.CPUKey{Adapter: ddbAdapter(r.Codec), Path: r.Path, Size: r.Size}]; ok {
			dns, da = fmt.Sprintf("%.0f", v.NsPerOp), fmt.Sprint(v.AllocsPerOp)
			dcpu, db = fmt.Sprintf("%.0f", v.CPUNsPerOp), fmt.Sprint(v.BytesPerOp)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%g\t%g\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			label(r), size(r.Size), r.Calls, r.ReadUnits, r.WriteUnits, dur(r.P50), dur(r.P99), dur(r.BareP50),
			dur(r.SameP50), dur(r.SameP99), dur(r.Compress), dur(r.InSitu), ratio, dur(r.MinP50), ratioMin, v2ns, v2a, hns, ha, dns, dcpu, da, db)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nz on path: where the store compresses the body, the median over rounds of (same+z - same), same+z being the same")
	fmt.Fprintln(w, "requests with the body compressed by the store's encoders between the claim's answer and the completion; z in situ:")
	fmt.Fprintln(w, "the median of that compression itself, timed around it.")
}

// label is a row's path, with its codec when that is not the default.
func label(r bench.Row) string {
	if r.Codec == "" {
		return r.Path
	}
	return r.Path + " " + string(r.Codec)
}

// ddbAdapter is the CPUKey adapter of BenchmarkDynamoPath over a store
// with codec ("": the default).
func ddbAdapter(codec dynamo.Codec) string {
	if codec == "" {
		return "ddb"
	}
	return "ddb-" + string(codec)
}

// compressAdapter is the CPUKey adapter of BenchmarkCompressBody with
// codec ("": the default, zstd).
func compressAdapter(codec dynamo.Codec) string {
	if codec == "" {
		return "zstd"
	}
	return string(codec)
}

// codecName names codec in the targets.
func codecName(codec dynamo.Codec) string {
	if codec == "" {
		return "zstd (default)"
	}
	return "Codec " + string(codec)
}

// codecs are the store's codecs measured: the default, then S2.
var codecs = []dynamo.Codec{"", dynamo.CodecS2}

// results are the figures the targets are judged on.
type results struct {
	// main is the server measured first (dynalite), local DynamoDB Local
	// (nil where it was not measured, localSkipped says why); rows and
	// worstRatio are main's.
	main, local  *target
	localSkipped string
	rows         []bench.Row
	cpu          map[bench.CPUKey]bench.CPU
	worstRatio   map[dynamo.Codec]ratioAt // by codec, "" the default
	cost         *costResult
	causes       []bench.CauseRow
	shapes       []shapesOn
	tp           []bench.ThroughputRow
	moto         *motoResult
	motoSkipped  string
	// replayCalls is the replay's calls on the main server when that
	// returns the item with a failed write, -1 when it does not.
	replayCalls  int
	replayServer string
}

// ratioAt is the fresh or replay row of the worst overhead ratio, and the
// run (of runs) it comes from.
type ratioAt struct {
	bench.Row
	run, runs int
}

// ratioLimit is the overhead ratio target of a row: 1.15 for a fresh 64
// KB request (whose body is compressed on the path), 1.10 for the others.
func ratioLimit(r bench.Row) float64 {
	if r.Path == "fresh" && r.Size >= 64<<10 {
		return 1.15
	}
	return 1.10
}

// ratios prints the overhead ratio of the fresh and replay rows of every
// run, then the paired estimate of the same rows, and returns the row of
// each codec that is furthest over (or least under) its ratioLimit.
func ratios(w io.Writer, runs [][]bench.Row) map[dynamo.Codec]ratioAt {
	fmt.Fprintf(w, "\n## Overhead ratio, fresh and replay (p50 / (bare p50 + same p50)), %d runs\n\n", len(runs))
	worst := map[dynamo.Codec]ratioAt{}
	ratioTable(w, runs, func(o bench.Row) (string, float64) { return fmt.Sprintf("%.3f", o.Ratio), o.Ratio }, func(i int, o bench.Row) {
		if wc, ok := worst[o.Codec]; !ok || o.Ratio-ratioLimit(o) > wc.Ratio-ratioLimit(wc.Row) {
			worst[o.Codec] = ratioAt{Row: o, run: i + 1, runs: len(runs)}
		}
	})
	fmt.Fprintf(w, "\nPaired: 1 + the median over rounds of (wrapped - bare - same) / (bare p50 + same p50), and that median\n(what the kit adds to a request, each round against its own baseline); not the target's measure. z: of that,\nwhat compressing the body costs on the real path, the median over rounds of (same+z - same), where the store compresses.\n\n")
	ratioTable(w, runs, func(o bench.Row) (string, float64) { return pairedCell(o), o.Paired }, nil)
	return worst
}

// pairedCell is a row's paired ratio and estimate, with what compressing
// costs on the real path where that was measured.
func pairedCell(o bench.Row) string {
	c := fmt.Sprintf("%.3f %s", o.Paired, dur(o.Added))
	if o.Compress != 0 {
		c += " z " + dur(o.Compress)
	}
	return c
}

// ratioTable prints cell of the fresh and replay rows of every run, a
// column per run, and the worst of cell's values, calling seen, when not
// nil, with each row and its run.
func ratioTable(w io.Writer, runs [][]bench.Row, cell func(bench.Row) (string, float64), seen func(run int, o bench.Row)) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "path\tsize\t"
	for i := range runs {
		head += fmt.Sprintf("run %d\t", i+1)
	}
	fmt.Fprintln(tw, head+"worst\t")
	for _, r := range runs[0] {
		if r.Path != "fresh" && r.Path != "replay" {
			continue
		}
		line := fmt.Sprintf("%s\t%s\t", label(r), size(r.Size))
		rowWorst := 0.0
		for i, run := range runs {
			for _, o := range run {
				if o.Path == r.Path && o.Size == r.Size && o.Codec == r.Codec {
					c, v := cell(o)
					line += c + "\t"
					rowWorst = max(rowWorst, v)
					if seen != nil {
						seen(i, o)
					}
				}
			}
		}
		fmt.Fprintln(tw, line+fmt.Sprintf("%.3f\t", rowWorst))
	}
	tw.Flush()
}

// throughputTable prints the throughput rows and returns them.
func throughputTable(w io.Writer, rows []bench.ThroughputRow) []bench.ThroughputRow {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tkit req/s\tkit p50\tkit p99\tkit cpu/req\traw req/s\traw p50\traw p99\traw cpu/req\tkit/raw req/s\tkit cpu - raw cpu\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%.0f\t%s\t%s\t%s\t%.0f\t%s\t%s\t%s\t%.3f\t%s\t\n", r.Kit.Clients,
			r.Kit.PerSec, dur(r.Kit.P50), dur(r.Kit.P99), dur(r.Kit.CPU),
			r.Raw.PerSec, dur(r.Raw.P50), dur(r.Raw.P99), dur(r.Raw.CPU),
			r.Kit.PerSec/r.Raw.PerSec, dur(r.Kit.CPU-r.Raw.CPU))
	}
	tw.Flush()
	fmt.Fprintln(w, "\nkit: httpmw over the DynamoDB store (claim, handler, completion); raw: the bare handler plus the very")
	fmt.Fprintln(w, "requests the store sent for one such request, re-sent under a new key straight through the same SDK client.")
	fmt.Fprintln(w, "cpu/req is this process's CPU time (SDK included, the server's not) per request.")
	return rows
}

type motoResult struct {
	version string
	allOld  bool
	rows    []bench.Row
	skipped string
}

// motoReplay measures the replay on moto_server m.
func motoReplay(ctx context.Context, w io.Writer, m *dynalite.Server, n int) (*motoResult, error) {
	res := &motoResult{version: bench.MotoVersion(ctx)}
	fmt.Fprintf(os.Stderr, "idembench: replay on moto %s...\n", res.version)
	client, err := dynalite.NewClient(ctx, m.Endpoint())
	if err != nil {
		return nil, err
	}
	table := fmt.Sprintf("idembench-%d", time.Now().UnixNano())
	if err := dynamo.CreateTable(ctx, client, table, dynamo.Options{}); err != nil {
		return nil, fmt.Errorf("moto: %w", err)
	}
	if res.allOld, err = bench.ReturnsItemOnConditionFailure(ctx, client, table); err != nil {
		return nil, fmt.Errorf("moto: %w", err)
	}
	start := time.Now()
	if res.rows, err = bench.Latency(ctx, client, table, n, []string{"replay"}); err != nil {
		return nil, fmt.Errorf("moto: %w", err)
	}
	fmt.Fprintf(w, "\n## Replay on moto %s (%s; %d interleaved rounds per row, %s)\n\n", res.version, allOldNote(res.allOld), n, time.Since(start).Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "path\tsize\tcalls\tRCU\tWCU\tp50\tp99\tbare p50\tsame p50\tratio\t")
	for _, r := range res.rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%g\t%g\t%s\t%s\t%s\t%s\t%.3f\t\n", r.Path, size(r.Size), r.Calls, r.ReadUnits, r.WriteUnits,
			dur(r.P50), dur(r.P99), dur(r.BareP50), dur(r.SameP50), r.Ratio)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nmoto answers far slower than dynalite: its ratios say little about the kit; the calls are what this table is for.")
	return res, nil
}

// targets prints every target with its verdict and, where one is not
// met, the figure that names the gap.
func targets(w io.Writer, r results) {
	fmt.Fprintln(w, "\n## Targets")
	fmt.Fprintln(w)
	defaultVerdict(w, r.cost)
	for _, t := range []*target{r.main, r.local} {
		if t != nil {
			ratioVerdict(w, r, t)
		}
	}
	if r.local == nil {
		fmt.Fprintf(w, "overhead ratio on DynamoDB Local: not measured (%s)\n", r.localSkipped)
	}
	zVerdict(w, r)
	writeUnitsVerdict(w, r)
	throughputVerdict(w, r)
	replayCallsVerdict(w, r)
	conditionLine(w, r.shapes)
}

// verdict is "met" when ok, "NOT met" otherwise.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// ratioVerdict prints, for each codec measured on t, the row furthest
// over its overhead ratio target (1.10; 1.15 for fresh 64 KB) and, over
// it, what the kit adds beyond its DynamoDB calls.
func ratioVerdict(w io.Writer, r results, t *target) {
	for _, codec := range codecs {
		wr, ok := t.worst[codec]
		if !ok {
			continue
		}
		sizes := "200 B and 4 KB <= 1.10, 64 KB fresh <= 1.15, replay <= 1.10"
		if codec != "" {
			sizes = "4 KB <= 1.10, 64 KB fresh <= 1.15, replay <= 1.10"
		}
		met := wr.Ratio <= ratioLimit(wr.Row)
		fmt.Fprintf(w, "overhead ratio, %s, %s, worst of %d runs on %s: %.3f (%s %s, run %d): %s\n",
			sizes, codecName(codec), wr.runs, t.name, wr.Ratio, wr.Path, size(wr.Size), wr.run, verdict(met))
		if !met {
			ratioGap(w, r, wr, codec)
		}
	}
}

// zLimit is the target for compressing on the real path: at most this
// many times what the same compression takes in a loop.
const zLimit = 1.3

// zVerdict prints, for each codec, what compressing a fresh 64 KB body
// costs on the real path on the main server, worst of its runs, against
// zLimit times the loop (BenchmarkCompressBody) and, over it, what the
// situations measured in this run say the cause is. On the path is the
// larger of the two measures of it: z on path (what the same requests
// take more with the compression between them) and the compression
// itself, timed there.
func zVerdict(w io.Writer, r results) {
	if r.main == nil {
		return
	}
	onPath := func(o bench.Row) time.Duration { return max(o.Compress, o.InSitu) }
	for _, codec := range codecs {
		var worst bench.Row
		runs := 0
		for _, run := range r.main.runs {
			for _, o := range run {
				if o.Path == "fresh" && o.Size == 64<<10 && o.Codec == codec && o.InSitu != 0 {
					runs++
					if runs == 1 || onPath(o) > onPath(worst) {
						worst = o
					}
				}
			}
		}
		z, ok := r.cpu[bench.CPUKey{Adapter: compressAdapter(codec), Path: "compress", Size: 64 << 10}]
		if runs == 0 || !ok {
			continue
		}
		loop := time.Duration(z.CPUNsPerOp)
		ratio := float64(onPath(worst)) / float64(loop)
		fmt.Fprintf(w, "compressing 64 KB on the real path <= %.1f x the loop, %s, worst of %d runs: %s (z on path %s, the compression itself %s) vs %s in a loop (BenchmarkCompressBody) = %.2f: %s\n",
			zLimit, codecName(codec), runs, dur(onPath(worst)), dur(worst.Compress), dur(worst.InSitu), dur(loop), ratio, verdict(ratio <= zLimit))
		if ratio > zLimit {
			zCause(w, r.causes, compressAdapter(codec), worst)
		}
	}
}

// zCause prints what the situations of this run (bench.Causes) measured
// for codec, as multiples of their own loop, and what they point to.
func zCause(w io.Writer, causes []bench.CauseRow, codec string, worst bench.Row) {
	by := map[string]bench.CauseRow{}
	for _, c := range causes {
		if c.Codec == codec {
			by[c.Cause] = c
		}
	}
	if len(by) == 0 {
		fmt.Fprintln(w, "  cause not measured (-causes-n 0)")
		return
	}
	loop := by["loop"].Wall
	fmt.Fprintf(w, "  cause, measured in this run's situations (x their loop's %s):", dur(loop))
	for _, c := range bench.Causes[1:7] {
		fmt.Fprintf(w, " %s %.2f;", c, by[c].Ratio)
	}
	fmt.Fprintf(w, " the copy into the attribute value %s, base64 %s\n", dur(by["copy into the attribute value"].Wall), dur(by["base64 of it"].Wall))
	cold := min(by["after parking 2 ms"].Ratio, by["after a round trip"].Ratio, by["after evicting the caches"].Ratio)
	coldest := max(by["after parking 2 ms"].Ratio, by["after a round trip"].Ratio, by["after evicting the caches"].Ratio)
	if cold > zLimit && by["beside a busy process"].Ratio <= zLimit {
		fmt.Fprintf(w, "  so: it slows where its memory has gone cold (after a wait, a round trip or evicted caches: %.2f-%.2f), not where the\n", cold, coldest)
		fmt.Fprintf(w, "  server shares the cores (%.2f); neither the encoder's reuse (a fresh one costs %.2f), the copy nor base64 (%s) is it",
			by["beside a busy process"].Ratio, by["fresh encoder"].Ratio, dur(by["copy into the attribute value"].Wall+by["base64 of it"].Wall))
		if worst.InSitu > 0 && loop > 0 {
			fmt.Fprintf(w, ";\n  on the path it is colder still (%.2f x the same loop): the encoder last ran a whole request earlier, and waited for the claim", float64(worst.InSitu)/float64(loop))
		}
		fmt.Fprintln(w)
	}
	if worst.InSitu > 0 && worst.Compress > worst.InSitu {
		fmt.Fprintf(w, "  of z on path, the compression itself took %s; the other %s is what it cost the completion's request after it\n", dur(worst.InSitu), dur(worst.Compress-worst.InSitu))
	}
}

// conditionLine prints the completion's condition against the one it
// had before, on each server its shapes were timed on.
func conditionLine(w io.Writer, shapes []shapesOn) {
	var parts []string
	for _, s := range shapes {
		for _, row := range s.rows {
			if row.Shape != "complete" {
				continue
			}
			for _, a := range row.Alts {
				parts = append(parts, fmt.Sprintf("%s %s vs %s (x%.2f)", s.server, dur(a.P50), dur(row.P50), float64(a.P50)/float64(row.P50)))
			}
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "the completion's condition, shortened (reported; p50 with the previous condition vs the store's): %s\n", strings.Join(parts, "; "))
	}
}

// ratioGap names what the kit adds where wr's ratio is over the target:
// the difference of the medians split into what the kit adds round by
// round (the paired estimate) and the server's drift between the rounds
// the two medians come from; the kit's part split into compressing the
// body on the real path (same+z - same, where measured), the rest of its
// CPU on a client that answers at once (BenchmarkDynamoPath less
// BenchmarkCompressBody), and what these leave unexplained.
func ratioGap(w io.Writer, r results, wr ratioAt, codec dynamo.Codec) {
	gap := wr.P50 - wr.BareP50 - wr.SameP50
	fmt.Fprintf(w, "  gap: wrapped p50 %s vs bare + same requests %s: %s between the medians; round by round the kit adds %s (paired)",
		dur(wr.P50), dur(wr.BareP50+wr.SameP50), dur(gap), dur(wr.Added))
	if drift := gap - wr.Added; drift > 0 {
		fmt.Fprintf(w, ", the other %s is the server's latency moving between rounds", dur(drift))
	}
	c, cpuOK := r.cpu[bench.CPUKey{Adapter: ddbAdapter(codec), Path: wr.Path, Size: wr.Size}]
	cpu := time.Duration(c.CPUNsPerOp)
	var zLoop time.Duration // compressing in a loop, 0 where not read or not on this path
	if z, ok := r.cpu[bench.CPUKey{Adapter: compressAdapter(codec), Path: "compress", Size: wr.Size}]; ok && wr.Path == "fresh" {
		zLoop = time.Duration(z.CPUNsPerOp)
	}
	explained, split := time.Duration(0), false
	switch {
	case wr.Compress != 0:
		fmt.Fprintf(w, "; of what it adds, %s is compressing the body on the real path (same+z - same)", dur(wr.Compress))
		if wr.Compress < 0 {
			fmt.Fprintf(w, " (below zero: at this many rounds the server's noise is larger than it)")
		}
		if zLoop > 0 {
			fmt.Fprintf(w, ", %s in a loop (BenchmarkCompressBody)", dur(zLoop))
		}
		switch {
		case cpuOK && zLoop > 0:
			fmt.Fprintf(w, "; %s the rest of its CPU on a client that answers at once (BenchmarkDynamoPath cpu-ns/op %s minus BenchmarkCompressBody)", dur(cpu-zLoop), dur(cpu))
			explained, split = wr.Compress+cpu-zLoop, true
		case cpuOK:
			fmt.Fprintf(w, "; its CPU on a client that answers at once, compressing included, is %s (BenchmarkDynamoPath cpu-ns/op)", dur(cpu))
		}
	case cpuOK:
		fmt.Fprintf(w, "; of what it adds, %s is its CPU on a client that answers at once (BenchmarkDynamoPath cpu-ns/op)", dur(cpu))
		if zLoop > 0 {
			fmt.Fprintf(w, ", %s of that compressing the body (BenchmarkCompressBody)", dur(zLoop))
		}
		explained, split = cpu, true
	}
	if split {
		if rest := wr.Added - explained; rest > 0 {
			fmt.Fprintf(w, "; %s remains unexplained", dur(rest))
		} else {
			fmt.Fprintf(w, "; these cover what it adds")
		}
	}
	fmt.Fprintln(w)
}

// writeUnitsVerdict prints the default codec's fresh write units at 4
// and 64 KB against 3 and 12, when the 4 KB row was measured, and the
// other codecs' beside them (not a target: the cost table prices them).
func writeUnitsVerdict(w io.Writer, r results) {
	wcu := func(codec dynamo.Codec) (float64, float64, bool) {
		m := map[int]float64{}
		for _, row := range r.rows {
			if row.Path == "fresh" && row.Codec == codec {
				m[row.Size] = row.WriteUnits
			}
		}
		u4, ok := m[4<<10]
		return u4, m[64<<10], ok
	}
	u4, u64, ok := wcu("")
	if !ok {
		return
	}
	fmt.Fprintf(w, "write units, fresh, %s: 4 KB <= 3, 64 KB <= 12: %g and %g: %s", codecName(""), u4, u64, verdict(u4 <= 3 && u64 <= 12))
	for _, codec := range codecs[1:] {
		if a, b, ok := wcu(codec); ok {
			fmt.Fprintf(w, " (%s: %g and %g)", codecName(codec), a, b)
		}
	}
	fmt.Fprintln(w)
}

// throughputVerdict prints the kit's request rate at 32 clients against
// 0.9 times raw's and, below it, the CPU per request that names the gap.
func throughputVerdict(w io.Writer, r results) {
	for _, t := range r.tp {
		if t.Kit.Clients != 32 {
			continue
		}
		ratio := t.Kit.PerSec / t.Raw.PerSec
		fmt.Fprintf(w, "throughput at 32 clients >= 0.9 x raw, %s: %.0f vs %.0f req/s = %.3f: %s\n", codecName(t.Codec), t.Kit.PerSec, t.Raw.PerSec, ratio, verdict(ratio >= 0.9))
		if ratio >= 0.9 {
			continue
		}
		cpuRatio := float64(t.Raw.CPU) / float64(t.Kit.CPU)
		fmt.Fprintf(w, "  gap: the kit uses %s more CPU per request in this process (%s vs %s, x%.2f; raw/kit CPU = %.3f) on %d cores\n",
			dur(t.Kit.CPU-t.Raw.CPU), dur(t.Kit.CPU), dur(t.Raw.CPU), float64(t.Kit.CPU)/float64(t.Raw.CPU), cpuRatio, runtime.NumCPU())
		if cpuRatio < 0.9 {
			fmt.Fprintf(w, "  shared with the server (load average now %s): where the cores are saturated, requests per second follow CPU per request\n", loadAvg())
		} else {
			fmt.Fprintf(w, "  shared with the server (load average now %s): that CPU does not account for the rate (raw/kit CPU >= 0.9)\n", loadAvg())
		}
	}
}

// replayCallsVerdict prints the replay's calls against 1 on the main
// server where it returns the item with a failed write, else on moto,
// else why it was not measured.
func replayCallsVerdict(w io.Writer, r results) {
	switch {
	case r.replayCalls > 0:
		fmt.Fprintf(w, "replay = 1 call where the server returns the item with a failed write: %d on %s: %s\n", r.replayCalls, r.replayServer, verdict(r.replayCalls == 1))
	case r.moto != nil && r.moto.skipped == "":
		calls := 0
		for _, row := range r.moto.rows {
			calls = max(calls, row.Calls)
		}
		if !r.moto.allOld {
			fmt.Fprintf(w, "replay = 1 call where the server returns the item with a failed write: moto %s does not return it: not measured\n", r.moto.version)
		} else {
			fmt.Fprintf(w, "replay = 1 call where the server returns the item with a failed write: %d on moto %s: %s\n", calls, r.moto.version, verdict(calls == 1))
		}
	default:
		reason := "no such server"
		if r.moto != nil {
			reason = r.moto.skipped
		}
		fmt.Fprintf(w, "replay = 1 call where the server returns the item with a failed write: not measured (%s; asserted by TestReplayUsageALLOLD)\n", reason)
	}
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
	if err := dynamo.CreateTable(ctx, client, table, dynamo.Options{}); err != nil {
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
