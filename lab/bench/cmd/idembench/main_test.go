package main

import (
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/lab/bench"
)

// TestRatioGap: the difference of the medians is split into what the
// kit adds round by round and the server's drift, and what the kit adds
// into compressing the body on the real path (same+z - same), the rest of
// its CPU in a loop (BenchmarkDynamoPath less BenchmarkCompressBody) and
// what remains unexplained; a part that is not there is not printed.
func TestRatioGap(t *testing.T) {
	us := time.Microsecond
	cpu := map[bench.CPUKey]bench.CPU{
		{Adapter: "ddb", Path: "fresh", Size: 64 << 10}:     {CPUNsPerOp: float64(300 * us)},
		{Adapter: "zstd", Path: "compress", Size: 64 << 10}: {CPUNsPerOp: float64(200 * us)},
		{Adapter: "ddb-s2", Path: "fresh", Size: 64 << 10}:  {CPUNsPerOp: float64(100 * us)},
		{Adapter: "s2", Path: "compress", Size: 64 << 10}:   {CPUNsPerOp: float64(60 * us)},
		{Adapter: "ddb", Path: "replay", Size: 4 << 10}:     {CPUNsPerOp: float64(30 * us)},
		{Adapter: "zstd", Path: "compress", Size: 4 << 10}:  {CPUNsPerOp: float64(20 * us)},
		{Adapter: "ddb-s2", Path: "replay", Size: 64 << 10}: {CPUNsPerOp: float64(500 * us)},
		{Adapter: "ddb-s2", Path: "fresh", Size: 4 << 10}:   {CPUNsPerOp: float64(50 * us)}, // no s2 compress at 4 KB
	}
	tests := []struct {
		name  string
		codec dynamo.Codec
		at    ratioAt
		want  []string
		not   []string
	}{{
		// 700 added = 250 compressing on the path + (300 - 200) the rest
		// of the CPU + 350 unexplained.
		name: "drift, compression measured",
		at:   ratioAt{Row: bench.Row{Path: "fresh", Size: 64 << 10, P50: 5000 * us, BareP50: 1 * us, SameP50: 3999 * us, Added: 700 * us, Compress: 250 * us}},
		want: []string{"1.00ms between the medians", "the kit adds 700.0µs (paired)", "the other 300.0µs is the server's latency moving",
			"250.0µs is compressing the body on the real path", "200.0µs in a loop", "100.0µs the rest of its CPU on a client that answers at once",
			"cpu-ns/op 300.0µs minus", "350.0µs remains unexplained"},
		not: []string{"cold", "cover", "below zero"},
	}, {
		// 500 added = 80 + (100 - 60) + 380.
		name:  "no drift: the medians' difference is all the kit's",
		codec: dynamo.CodecS2,
		at:    ratioAt{Row: bench.Row{Path: "fresh", Size: 64 << 10, P50: 4500 * us, BareP50: 1 * us, SameP50: 3999 * us, Added: 500 * us, Compress: 80 * us}},
		want:  []string{"500.0µs between the medians", "the kit adds 500.0µs", "80.0µs is compressing", "60.0µs in a loop", "40.0µs the rest of its CPU", "380.0µs remains unexplained"},
		not:   []string{"moving between rounds"},
	}, {
		name:  "compressing on the path costs more than the loop leaves",
		codec: dynamo.CodecS2,
		at:    ratioAt{Row: bench.Row{Path: "fresh", Size: 64 << 10, P50: 4500 * us, BareP50: 1 * us, SameP50: 3999 * us, Added: 500 * us, Compress: 470 * us}},
		want:  []string{"470.0µs is compressing", "40.0µs the rest of its CPU", "these cover what it adds"},
		not:   []string{"unexplained"},
	}, {
		// 500 added = 460 + (100 - 60): nothing left over.
		name:  "compressing and the rest of the CPU cover it exactly",
		codec: dynamo.CodecS2,
		at:    ratioAt{Row: bench.Row{Path: "fresh", Size: 64 << 10, P50: 4500 * us, BareP50: 1 * us, SameP50: 3999 * us, Added: 500 * us, Compress: 460 * us}},
		want:  []string{"460.0µs is compressing", "40.0µs the rest of its CPU", "these cover what it adds"},
		not:   []string{"unexplained"},
	}, {
		// A median below zero is noise; it is shown, and counted as
		// measured: 450 added = -20 + (100 - 60) + 430.
		name:  "compressing measured below zero",
		codec: dynamo.CodecS2,
		at:    ratioAt{Row: bench.Row{Path: "fresh", Size: 64 << 10, P50: 4450 * us, BareP50: 1 * us, SameP50: 3999 * us, Added: 450 * us, Compress: -20 * us}},
		want:  []string{"-20.0µs is compressing", "below zero", "40.0µs the rest of its CPU", "430.0µs remains unexplained"},
	}, {
		name: "a replay: nothing compressed",
		at:   ratioAt{Row: bench.Row{Path: "replay", Size: 4 << 10, P50: 4400 * us, BareP50: 1 * us, SameP50: 3999 * us, Added: 100 * us}},
		want: []string{"400.0µs between the medians", "the other 300.0µs is the server's", "30.0µs is its CPU", "70.0µs remains unexplained"},
		not:  []string{"compressing"},
	}, {
		name:  "the loop's CPU covers what the kit adds",
		codec: dynamo.CodecS2,
		at:    ratioAt{Row: bench.Row{Path: "replay", Size: 64 << 10, P50: 4600 * us, BareP50: 1 * us, SameP50: 3999 * us, Added: 450 * us}},
		want:  []string{"500.0µs is its CPU", "these cover what it adds"},
		not:   []string{"unexplained"},
	}, {
		name: "no CPU figure",
		at:   ratioAt{Row: bench.Row{Path: "fresh", Size: 200, P50: 4600 * us, BareP50: 1 * us, SameP50: 3999 * us, Added: 450 * us}},
		want: []string{"the kit adds 450.0µs", "the other 150.0µs"},
		not:  []string{"its CPU", "unexplained", "cover"},
	}, {
		name: "compression measured, no CPU figure",
		at:   ratioAt{Row: bench.Row{Path: "fresh", Size: 16 << 10, P50: 4600 * us, BareP50: 1 * us, SameP50: 3999 * us, Added: 450 * us, Compress: 30 * us}},
		want: []string{"30.0µs is compressing the body on the real path"},
		not:  []string{"in a loop", "its CPU", "unexplained", "cover"},
	}, {
		// Without BenchmarkCompressBody the loop's CPU cannot be split:
		// compressing would be counted twice.
		name:  "compression measured, the loop's CPU not split",
		codec: dynamo.CodecS2,
		at:    ratioAt{Row: bench.Row{Path: "fresh", Size: 4 << 10, P50: 4600 * us, BareP50: 1 * us, SameP50: 3999 * us, Added: 450 * us, Compress: 30 * us}},
		want:  []string{"30.0µs is compressing", "compressing included, is 50.0µs"},
		not:   []string{"in a loop", "unexplained", "cover"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			ratioGap(&b, results{cpu: cpu}, tt.at, tt.codec)
			out := b.String()
			testkit.Has(t, "verdict", out, tt.want, tt.not)
		})
	}
}

// TestThroughputVerdict: each codec's 32-client row is judged on its
// own, and a gap is put down to CPU per request only where the kit's
// CPU per request is over raw's by more than the target allows.
func TestThroughputVerdict(t *testing.T) {
	ms := time.Millisecond
	row := func(codec dynamo.Codec, clients int, kit, raw float64, kitCPU, rawCPU time.Duration) bench.ThroughputRow {
		return bench.ThroughputRow{Codec: codec, Kit: bench.Load{Clients: clients, PerSec: kit, CPU: kitCPU}, Raw: bench.Load{Clients: clients, PerSec: raw, CPU: rawCPU}}
	}
	var b strings.Builder
	throughputVerdict(&b, results{tp: []bench.ThroughputRow{
		row("", 1, 10, 100, ms, ms), // not judged: 1 client
		row("", 32, 300, 400, 2*ms, ms),
		row(dynamo.CodecS2, 32, 300, 400, ms, ms*95/100),
		row(dynamo.CodecS2, 8, 300, 400, ms, ms),
	}})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{
		"throughput at 32 clients >= 0.9 x raw, zstd (default): 300 vs 400 req/s = 0.750: NOT met",
		"requests per second follow CPU per request",
		"throughput at 32 clients >= 0.9 x raw, Codec s2: 300 vs 400 req/s = 0.750: NOT met",
		"that CPU does not account for the rate",
	}
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 6:\n%s", len(lines), b.String())
	}
	for i, l := range []int{0, 2, 3, 5} {
		if !strings.Contains(lines[l], want[i]) {
			t.Errorf("line %d: %q, want %q", l, lines[l], want[i])
		}
	}
	b.Reset()
	throughputVerdict(&b, results{tp: []bench.ThroughputRow{row(dynamo.CodecS2, 32, 360, 400, 2*ms, ms)}})
	if got := b.String(); !strings.HasSuffix(got, "= 0.900: met\n") {
		t.Errorf("0.9 x raw: %q, want met with no gap", got)
	}
}

// TestPairedCell: the paired cell names what compressing costs on the
// real path where that was measured, and only there.
func TestPairedCell(t *testing.T) {
	us := time.Microsecond
	for _, tt := range []struct {
		row  bench.Row
		want string
	}{
		{bench.Row{Paired: 1.25, Added: 700 * us, Compress: 250 * us}, "1.250 700.0µs z 250.0µs"},
		{bench.Row{Paired: 1.25, Added: 700 * us, Compress: -5 * us}, "1.250 700.0µs z -5.0µs"},
		{bench.Row{Paired: 1.05, Added: 90 * us}, "1.050 90.0µs"},
	} {
		if got := pairedCell(tt.row); got != tt.want {
			t.Errorf("pairedCell(%+v) = %q, want %q", tt.row, got, tt.want)
		}
	}
}

// TestCompressColumns: the compression estimate reaches the table's
// "z on path" column and the worst ratio's gap split.
func TestCompressColumns(t *testing.T) {
	us := time.Microsecond
	row := bench.Row{Path: "fresh", Size: 64 << 10, Calls: 2, P50: 5000 * us, P99: 6000 * us, BareP50: 1 * us,
		SameP50: 3999 * us, SameP99: 4321 * us, Compress: 234 * us, Ratio: 1.25, Added: 700 * us, Paired: 1.175}
	var b strings.Builder
	table1(&b, []bench.Row{row}, nil)
	// No other figure of the row is 234µs.
	if !strings.Contains(b.String(), "234.0µs") {
		t.Errorf("the table has no z on path of 234.0µs:\n%s", b.String())
	}
	worst := ratios(&strings.Builder{}, [][]bench.Row{{row}})
	if w, ok := worst[""]; !ok || w.Compress != row.Compress {
		t.Errorf("worst ratio %+v, want the row's compression estimate %v", w, row.Compress)
	}
}

// TestRatioWorstByLimit: the row judged is the one furthest over its own
// limit (1.15 for fresh 64 KB, 1.10 else), not the largest ratio.
func TestRatioWorstByLimit(t *testing.T) {
	rows := []bench.Row{
		{Path: "fresh", Size: 64 << 10, Ratio: 1.14}, // under its 1.15
		{Path: "fresh", Size: 4 << 10, Ratio: 1.11},  // over its 1.10
		{Path: "replay", Size: 64 << 10, Ratio: 1.05},
	}
	worst := ratios(&strings.Builder{}, [][]bench.Row{rows})
	if w := worst[""]; w.Size != 4<<10 {
		t.Errorf("worst row %s %d (%.2f), want fresh 4 KB: over its limit", w.Path, w.Size, w.Ratio)
	}
	var b strings.Builder
	ratioVerdict(&b, results{}, &target{name: "srv", worst: worst})
	if got := b.String(); !strings.Contains(got, "1.110 (fresh 4KB, run 1): NOT met") {
		t.Errorf("verdict: %q, want fresh 4 KB NOT met", got)
	}
	rows[1].Ratio = 1.09
	b.Reset()
	ratioVerdict(&b, results{}, &target{name: "srv", worst: ratios(&strings.Builder{}, [][]bench.Row{rows})})
	if got := b.String(); !strings.Contains(got, "1.140 (fresh 64KB, run 1): met") {
		t.Errorf("verdict: %q, want fresh 64 KB at 1.140 met", got)
	}
}

// TestZVerdict: compressing on the real path is judged, worst of the
// runs, on the larger of z on path and the compression itself against
// 1.3 times the loop, and over it the situations of the run are named.
func TestZVerdict(t *testing.T) {
	us := time.Microsecond
	cpu := map[bench.CPUKey]bench.CPU{{Adapter: "zstd", Path: "compress", Size: 64 << 10}: {CPUNsPerOp: float64(200 * us)}}
	row := func(z, inSitu time.Duration) bench.Row {
		return bench.Row{Path: "fresh", Size: 64 << 10, Compress: z, InSitu: inSitu}
	}
	causes := []bench.CauseRow{
		{Codec: "zstd", Cause: "loop", Wall: 200 * us, Ratio: 1}, {Codec: "zstd", Cause: "after parking 2 ms", Wall: 420 * us, Ratio: 2.1},
		{Codec: "zstd", Cause: "after a round trip", Wall: 400 * us, Ratio: 2}, {Codec: "zstd", Cause: "beside a busy process", Wall: 200 * us, Ratio: 1},
		{Codec: "zstd", Cause: "after evicting the caches", Wall: 460 * us, Ratio: 2.3},
		{Codec: "zstd", Cause: "copy into the attribute value", Wall: 2 * us}, {Codec: "zstd", Cause: "base64 of it", Wall: 10 * us},
	}
	for _, tc := range []struct {
		name string
		runs [][]bench.Row
		want []string
	}{
		{"within", [][]bench.Row{{row(240*us, 250*us)}, {row(200*us, 210*us)}}, []string{"250.0µs (z on path 240.0µs, the compression itself 250.0µs)", "= 1.25: met"}},
		{"over on the compression itself", [][]bench.Row{{row(240*us, 250*us)}, {row(100*us, 400*us)}},
			[]string{"worst of 2 runs: 400.0µs", "= 2.00: NOT met", "after parking 2 ms 2.10", "gone cold (after a wait, a round trip or evicted caches: 2.00-2.30)",
				"not where the\n  server shares the cores (1.00)", "colder still (2.00 x the same loop)"}},
		{"over on z on path", [][]bench.Row{{row(500*us, 300*us)}}, []string{"500.0µs (z on path 500.0µs", "NOT met", "the other 200.0µs is what it cost the completion's request"}},
	} {
		var b strings.Builder
		zVerdict(&b, results{main: &target{runs: tc.runs}, cpu: cpu, causes: causes})
		testkit.Has(t, tc.name+": verdict", b.String(), tc.want, nil)
	}
}

// TestDefaultVerdict: the default codec is judged against the cheapest
// at each size, fresh and replay, and where it is not among them the
// size and path are named.
func TestDefaultVerdict(t *testing.T) {
	opts.prices = bench.DefaultPrices
	var costs []bench.Cost
	for _, size := range bench.CostSizes {
		for _, path := range []string{"fresh", "replay"} {
			w := map[string]float64{"zstd": 3, "s2": 4, "none": 6}
			if size == 200 {
				w = map[string]float64{"zstd": 2, "s2": 2, "none": 2}
			}
			for _, c := range []string{"zstd", "s2", "none"} {
				costs = append(costs, bench.Cost{Path: path, Size: size, Codec: c, Units: bench.Units{Write: w[c]}})
			}
		}
	}
	chosen := map[int]string{200: "none", 4 << 10: "zstd", 64 << 10: "zstd", 256 << 10: "zstd"}
	var b strings.Builder
	defaultVerdict(&b, &costResult{server: "srv", costs: costs, chosen: chosen})
	if got := b.String(); !strings.HasSuffix(got, "(srv): met\n") {
		t.Errorf("%q, want met", got)
	}
	chosen[64<<10] = "s2"
	b.Reset()
	defaultVerdict(&b, &costResult{server: "srv", costs: costs, chosen: chosen})
	if got := b.String(); !strings.Contains(got, "NOT met") || !strings.Contains(got, "fresh 64 KB: s2, cheapest zstd") || !strings.Contains(got, "replay 64 KB: s2") {
		t.Errorf("%q, want NOT met naming 64 KB fresh and replay", got)
	}
}

// TestConditionLine: the completion's previous condition is set against
// the store's on each server its shapes were timed on.
func TestConditionLine(t *testing.T) {
	ms := time.Millisecond
	var b strings.Builder
	conditionLine(&b, []shapesOn{
		{server: "dynalite", rows: []bench.ShapeRow{{Shape: "claim", P50: ms}, {Shape: "complete", P50: 2 * ms, Alts: []bench.AltRow{{P50: 3 * ms}}}}},
		{server: "moto", skipped: "not installed"},
	})
	if got := b.String(); !strings.Contains(got, "dynalite 3.00ms vs 2.00ms (x1.50)") || strings.Contains(got, "moto") {
		t.Errorf("%q", got)
	}
}
