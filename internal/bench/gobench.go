package bench

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
)

// CPU is one adapter benchmark's result over the in-memory store.
type CPU struct {
	NsPerOp     float64
	AllocsPerOp int64
	BytesPerOp  int64
}

// CPUKey names a benchmark result: adapter ("v2", "http", or "ddb" for
// the v2 wrapper over the DynamoDB store on a client that answers at
// once), path
// ("fresh" or "replay") and body size.
type CPUKey struct {
	Adapter, Path string
	Size          int
}

var benchLine = regexp.MustCompile(`^Benchmark(V2|Middleware|DynamoPath)/(fresh|replay)/(\d+)B(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+(\d+) B/op\s+(\d+) allocs/op)?`)

// ParseGoBench reads `go test -bench -benchmem` output of
// lambda/apigw.BenchmarkV2, httpmw.BenchmarkMiddleware and
// BenchmarkDynamoPath. When a
// benchmark appears more than once (-count), the fastest run is kept.
func ParseGoBench(r io.Reader) (map[CPUKey]CPU, error) {
	out := map[CPUKey]CPU{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		adapter := map[string]string{"V2": "v2", "Middleware": "http", "DynamoPath": "ddb"}[m[1]]
		size, _ := strconv.Atoi(m[3])
		ns, _ := strconv.ParseFloat(m[4], 64)
		bytes, _ := strconv.ParseInt(m[5], 10, 64)
		allocs, _ := strconv.ParseInt(m[6], 10, 64)
		k := CPUKey{adapter, m[2], size}
		if old, ok := out[k]; !ok || ns < old.NsPerOp {
			out[k] = CPU{NsPerOp: ns, AllocsPerOp: allocs, BytesPerOp: bytes}
		}
	}
	return out, sc.Err()
}
