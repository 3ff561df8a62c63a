package bench_test

import (
	"strconv"
	"testing"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/compress"
	"github.com/idemkit/idemkit/internal/testing/testpayload"
	"github.com/idemkit/idemkit/lab/bench"
)

// BenchmarkCompressBody measures the body compression of a completion on
// the bench's JSON responses, with the default codec (zstd) and with S2
// ("s2/..."): the part of BenchmarkDynamoPath's fresh path that grows
// with the body. make bench reports it next to that. It runs what the
// store's compressBody runs: internal/compress's codec of that name.
// The random bodies are what compression cannot shrink (an encrypted or
// already compressed payload): what a body that is stored as is costs.
func BenchmarkCompressBody(b *testing.B) {
	for _, size := range testpayload.Sizes[1:] {
		random := make([]byte, size)
		x := uint64(size)*0x9E3779B97F4A7C15 | 1
		for i := range random {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			random[i] = byte(x)
		}
		benchCompress(b, strconv.Itoa(size)+"B", testpayload.JSON(size), dynamo.CodecZstd)
		benchCompress(b, "random/"+strconv.Itoa(size)+"B", random, dynamo.CodecZstd)
		benchCompress(b, "s2/"+strconv.Itoa(size)+"B", testpayload.JSON(size), dynamo.CodecS2)
		benchCompress(b, "s2/random/"+strconv.Itoa(size)+"B", random, dynamo.CodecS2)
	}
}

func benchCompress(b *testing.B, name string, body []byte, codec dynamo.Codec) {
	b.Run(name, func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		cpu0 := bench.ProcessCPU()
		c := compress.ByName(string(codec))
		var z []byte
		for i := 0; i < b.N; i++ {
			z, _ = c.Body(body)
		}
		b.ReportMetric(float64(bench.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(len(z)), "out-bytes")
	})
}
