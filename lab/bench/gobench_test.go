package bench

import (
	"strings"
	"testing"
)

func TestParseGoBench(t *testing.T) {
	in := `goos: linux
BenchmarkV2/fresh/200B-2         	   10000	     14658 ns/op	    9689 B/op	      37 allocs/op
BenchmarkDynamoPath/fresh/65536B-2   	     214	    578110 ns/op	    311813 cpu-ns/op	   85925 B/op	     125 allocs/op
BenchmarkDynamoPath/fresh/65536B-2   	     214	    298110 ns/op	    351813 cpu-ns/op	   85925 B/op	     125 allocs/op
BenchmarkCompressBody/65536B-2        	     247	    770705 ns/op	  85.03 MB/s	    259595 cpu-ns/op	     10678 out-bytes	   10880 B/op	       1 allocs/op
BenchmarkMiddleware/replay/4096B     	   10000	     20216 ns/op
BenchmarkDynamoPath/s2/fresh/65536B-2   	     214	    98110 ns/op	    91813 cpu-ns/op	   85925 B/op	     125 allocs/op
BenchmarkCompressBody/s2/65536B-2        	     247	    70705 ns/op	  85.03 MB/s	    59595 cpu-ns/op	     16608 out-bytes	   16896 B/op	       1 allocs/op
BenchmarkCompressBody/s2/random/65536B-2 	     247	    7070 ns/op	  85.03 MB/s	    5959 cpu-ns/op	     0 out-bytes	   0 B/op	       0 allocs/op
PASS
`
	got, err := ParseGoBench(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[CPUKey]CPU{
		{"v2", "fresh", 200}:        {NsPerOp: 14658, BytesPerOp: 9689, AllocsPerOp: 37},
		{"ddb", "fresh", 65536}:     {NsPerOp: 578110, CPUNsPerOp: 311813, BytesPerOp: 85925, AllocsPerOp: 125}, // least CPU of the two
		{"zstd", "compress", 65536}: {NsPerOp: 770705, CPUNsPerOp: 259595, BytesPerOp: 10880, AllocsPerOp: 1},
		{"http", "replay", 4096}:    {NsPerOp: 20216},
		{"ddb-s2", "fresh", 65536}:  {NsPerOp: 98110, CPUNsPerOp: 91813, BytesPerOp: 85925, AllocsPerOp: 125},
		{"s2", "compress", 65536}:   {NsPerOp: 70705, CPUNsPerOp: 59595, BytesPerOp: 16896, AllocsPerOp: 1},
	}
	if len(got) != len(want) {
		t.Errorf("got %d results, want %d: %+v", len(got), len(want), got)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%+v: got %+v, want %+v", k, got[k], w)
		}
	}
}
