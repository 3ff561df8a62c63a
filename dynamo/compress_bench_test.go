package dynamo

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"testing"
)

// jsonBody returns a JSON array of order-like objects of about n bytes.
func jsonBody(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"ord_%08d","sku":"SKU-%d","quantity":%d,"amount":{"value":%d,"currency":"EUR"},"status":"accepted","customer":"cus_%06x"}`, i, i%97, i%7+1, i*137%100000, i*7919)
	}
	b.WriteByte(']')
	return b.Bytes()
}

// BenchmarkCompress compares the codecs on JSON bodies; it reports the
// compressed size as a percentage of the input (ratio%).
func BenchmarkCompress(b *testing.B) {
	for _, size := range []int{4 << 10, 390 << 10} {
		body := jsonBody(size)
		b.Run(fmt.Sprintf("zstd/%dKB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			var out []byte
			for i := 0; i < b.N; i++ {
				out, _ = compressBody(body, CodecZstd)
			}
			b.ReportMetric(100*float64(len(out))/float64(len(body)), "ratio%")
		})
		b.Run(fmt.Sprintf("zstd-decode/%dKB", size>>10), func(b *testing.B) {
			z, _ := compressBody(body, CodecZstd)
			b.SetBytes(int64(len(body)))
			var out []byte
			for i := 0; i < b.N; i++ {
				out, _ = zdec.DecodeAll(z, out[:0])
			}
		})
		b.Run(fmt.Sprintf("gzip/%dKB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			var buf bytes.Buffer
			w, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
			for i := 0; i < b.N; i++ {
				buf.Reset()
				w.Reset(&buf)
				w.Write(body)
				w.Close()
			}
			b.ReportMetric(100*float64(buf.Len())/float64(len(body)), "ratio%")
		})
		b.Run(fmt.Sprintf("gzip-decode/%dKB", size>>10), func(b *testing.B) {
			var buf bytes.Buffer
			w, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
			w.Write(body)
			w.Close()
			z := buf.Bytes()
			b.SetBytes(int64(len(body)))
			var out bytes.Buffer
			for i := 0; i < b.N; i++ {
				r, _ := gzip.NewReader(bytes.NewReader(z))
				out.Reset()
				out.ReadFrom(r)
			}
		})
	}
}
