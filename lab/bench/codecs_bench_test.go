package bench_test

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/idemkit/idemkit/internal/testing/testpayload"
	"github.com/idemkit/idemkit/lab/bench"
)

// codec is a compression choice the store could make.
type codec struct {
	name string
	enc  func(dst, src []byte) []byte
	dec  func(dst, src []byte) ([]byte, error)
}

func zstdCodec(name string, d *zstd.Decoder, opts ...zstd.EOption) codec {
	e, err := zstd.NewWriter(nil, append([]zstd.EOption{zstd.WithEncoderConcurrency(1)}, opts...)...)
	if err != nil {
		panic(err)
	}
	return codec{name, func(dst, src []byte) []byte { return e.EncodeAll(src, dst) },
		func(dst, src []byte) ([]byte, error) { return d.DecodeAll(src, dst) }}
}

func s2Codec(name string, enc func(dst, src []byte) []byte) codec {
	return codec{name, func(dst, src []byte) []byte { return enc(dst[:cap(dst)], src) },
		func(dst, src []byte) ([]byte, error) { return s2.Decode(dst[:cap(dst)], src) }}
}

// BenchmarkCodecs compares the compression choices
// OPTIMIZATIONS.md records, on the bench's order JSON and on a payment-list JSON
// (testpayload.APIJSON), at 4 KB and 64 KB: encode cpu-ns/op, the compressed
// size (out-bytes) and decode CPU per body (dec-cpu-ns). "zstd-default"
// is what the store uses. Not part of make bench:
//
//	go test -run '^$' -bench Codecs ./bench
func BenchmarkCodecs(b *testing.B) {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))
	if err != nil {
		b.Fatal(err)
	}
	codecs := []codec{
		zstdCodec("zstd-default", d, zstd.WithEncoderLevel(zstd.SpeedDefault)),
		zstdCodec("zstd-default-nocrc", d, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(false)),
		zstdCodec("zstd-default-lowmem", d, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithLowerEncoderMem(true)),
		zstdCodec("zstd-fastest", d, zstd.WithEncoderLevel(zstd.SpeedFastest)),
		zstdCodec("zstd-fastest-lowmem-nocrc", d, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithLowerEncoderMem(true), zstd.WithEncoderCRC(false)),
		zstdCodec("zstd-better", d, zstd.WithEncoderLevel(zstd.SpeedBetterCompression)),
		s2Codec("s2", s2.Encode),
		s2Codec("s2-better", s2.EncodeBetter),
		s2Codec("s2-best", s2.EncodeBest),
	}
	for _, size := range testpayload.Sizes[1:] {
		for _, body := range []struct {
			name string
			b    []byte
		}{{"orders", testpayload.JSON(size)}, {"charges", testpayload.APIJSON(size)}} {
			for _, c := range codecs {
				b.Run(body.name+"/"+strconv.Itoa(size)+"B/"+c.name, func(b *testing.B) {
					benchCodec(b, c, body.b)
				})
			}
		}
	}
}

func benchCodec(b *testing.B, c codec, body []byte) {
	buf := make([]byte, 0, s2.MaxEncodedLen(len(body)))
	var z []byte
	cpu0 := bench.ProcessCPU()
	for i := 0; i < b.N; i++ {
		z = c.enc(buf[:0], body)
	}
	b.ReportMetric(float64(bench.ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(len(z)), "out-bytes")
	out := make([]byte, 0, len(body))
	const decodes = 100
	cpu0 = bench.ProcessCPU()
	for i := 0; i < decodes; i++ {
		out, _ = c.dec(out[:0], z)
	}
	b.ReportMetric(float64(bench.ProcessCPU()-cpu0)/decodes, "dec-cpu-ns")
	if !bytes.Equal(out, body) {
		b.Fatalf("%s: the body does not decode to itself", c.name)
	}
}
