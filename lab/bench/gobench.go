package bench

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// CPU is one benchmark's result.
type CPU struct {
	NsPerOp float64
	// CPUNsPerOp is the process's CPU time per op (the cpu-ns/op metric),
	// 0 when the benchmark does not report it.
	CPUNsPerOp  float64
	AllocsPerOp int64
	BytesPerOp  int64
}

// CPUKey names a benchmark result: adapter ("v2", "http", "ddb" for the
// v2 wrapper over the DynamoDB store on a client that answers at once,
// "ddb-s2" for the same with dynamo.CodecS2, or "zstd" and "s2" for the
// body compression alone), path ("fresh", "replay"; "compress" for the
// compression) and body size.
type CPUKey struct {
	Adapter, Path string
	Size          int
}

var benchName = regexp.MustCompile(`^Benchmark(V2|Middleware|DynamoPath|CompressBody)/(?:(s2)/)?(?:(fresh|replay)/)?(\d+)B(?:-\d+)?$`)

// ParseGoBench reads `go test -bench -benchmem` output of
// lambda/apigw.BenchmarkV2, httpmw.BenchmarkMiddleware,
// BenchmarkDynamoPath and BenchmarkCompressBody. When a benchmark
// appears more than once (-count), the run with the least CPU per op
// (ns/op where it has no cpu-ns/op) is kept.
func ParseGoBench(r io.Reader) (map[CPUKey]CPU, error) {
	out := map[CPUKey]CPU{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		m := benchName.FindStringSubmatch(f[0])
		if m == nil {
			continue
		}
		adapter := map[string]string{"V2": "v2", "Middleware": "http", "DynamoPath": "ddb", "CompressBody": "zstd"}[m[1]]
		path := m[3]
		switch {
		case adapter == "zstd" && m[2] != "":
			adapter, path = m[2], "compress"
		case adapter == "zstd":
			path = "compress"
		case m[2] != "":
			adapter += "-" + m[2]
		}
		size, _ := strconv.Atoi(m[4])
		var c CPU
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				c.NsPerOp = v
			case "cpu-ns/op":
				c.CPUNsPerOp = v
			case "B/op":
				c.BytesPerOp = int64(v)
			case "allocs/op":
				c.AllocsPerOp = int64(v)
			}
		}
		if c.NsPerOp == 0 {
			continue
		}
		k := CPUKey{adapter, path, size}
		if old, ok := out[k]; !ok || c.cost() < old.cost() {
			out[k] = c
		}
	}
	return out, sc.Err()
}

func (c CPU) cost() float64 {
	if c.CPUNsPerOp > 0 {
		return c.CPUNsPerOp
	}
	return c.NsPerOp
}
