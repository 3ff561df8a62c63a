package main

import (
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/bench"
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
			for _, s := range tt.want {
				if !strings.Contains(out, s) {
					t.Errorf("missing %q in:\n%s", s, out)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(out, s) {
					t.Errorf("%q should not be in:\n%s", s, out)
				}
			}
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
