package dynamo_test

import (
	"strconv"
	"testing"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/bench"
)

// BenchmarkCompressBody measures the body compression of a completion on
// the bench's JSON responses: the part of BenchmarkDynamoPath's fresh
// path that grows with the body. make bench reports it next to that.
func BenchmarkCompressBody(b *testing.B) {
	for _, size := range bench.Sizes[1:] {
		body := bench.JSON(size)
		b.Run(strconv.Itoa(size)+"B", func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			cpu0 := bench.ProcessCPU()
			var z []byte
			for i := 0; i < b.N; i++ {
				z, _ = dynamo.CompressBody(body)
			}
			b.ReportMetric(float64(bench.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(len(z)), "out-bytes")
		})
	}
}
