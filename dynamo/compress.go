package dynamo

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Codec is how a store compresses snapshot bodies (Options.Codec). Its
// value is what a compressed body's item holds in AttrBodyEncoding.
// Every store reads bodies in every codec, whatever its own.
type Codec string

const (
	// CodecZstd (the default) writes the fewest bytes, so the fewest
	// write units: zstd at its default level, with a checksum. On JSON
	// it costs about 3 µs of CPU per KB.
	CodecZstd Codec = "zstd"
	// CodecS2 takes about a quarter of zstd's CPU and writes about half
	// again as many bytes: S2's framed stream format, with a CRC-32C per
	// block. See docs/PERFORMANCE.md for when that pays.
	CodecS2 Codec = "s2"
)

// valid reports whether c is a codec this package knows.
func (c Codec) valid() bool { return c == CodecZstd || c == CodecS2 }

// zstdLevel is the level bodies are compressed at. SpeedDefault, not
// SpeedFastest: on JSON the fastest level writes about 3% more bytes,
// which at 64 KB costs one more write unit per completion (12 instead of
// 11, docs/PERFORMANCE.md).
const zstdLevel = zstd.SpeedDefault

// compressor is one encoder with its output buffer, used by one
// completion at a time.
type compressor struct {
	zenc *zstd.Encoder // CodecZstd
	senc *s2.Writer    // CodecS2, writing to out
	out  sliceWriter
	buf  []byte // the output buffer, kept between completions
}

// sliceWriter appends what is written to it to b.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// encode appends src compressed to dst.
func (c *compressor) encode(dst, src []byte) []byte {
	if c.zenc != nil {
		return c.zenc.EncodeAll(src, dst)
	}
	c.out.b = dst
	c.senc.Reset(&c.out)
	// Writing to a slice does not fail, and the writer is synchronous
	// (concurrency 1): its errors are those of the destination.
	_ = c.senc.EncodeBuffer(src)
	_ = c.senc.Close()
	z := c.out.b
	c.out.b = nil
	return z
}

// A pool keeps one codec's compressors. They are made on demand, up to
// one per processor, and kept for the life of the process: concurrent
// completions compress in parallel instead of queueing for one shared
// encoder, and an encoder's tables (about 1 MB for zstd) are not thrown
// away by a garbage collection as a sync.Pool would do.
type pool struct {
	made atomic.Int32
	free chan *compressor
	new  func() *compressor
}

var maxCompressors = int32(max(1, runtime.GOMAXPROCS(0)))

var pools = map[Codec]*pool{
	CodecZstd: {free: make(chan *compressor, maxCompressors), new: func() *compressor {
		// The options are constants: NewWriter fails only on a bad one.
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstdLevel))
		if err != nil {
			panic(err)
		}
		return &compressor{zenc: enc}
	}},
	CodecS2: {free: make(chan *compressor, maxCompressors), new: func() *compressor {
		return &compressor{senc: s2.NewWriter(nil, s2.WriterConcurrency(1))}
	}},
}

func (p *pool) get() *compressor {
	select {
	case c := <-p.free:
		return c
	default:
	}
	if p.made.Add(1) <= maxCompressors {
		return p.new()
	}
	p.made.Add(-1)
	return <-p.free
}

// maxKeptBuf bounds the output buffer a compressor keeps between
// completions; a larger one (a body of several hundred KB) is dropped.
const maxKeptBuf = 256 << 10

// compressBody returns body compressed with codec in a new slice of
// exactly the compressed length, and true; or nil and false when that is
// not smaller than body. It compresses into the compressor's buffer and
// copies the (much smaller) result out, so that a completion allocates
// only what its item keeps.
func compressBody(body []byte, codec Codec) ([]byte, bool) {
	p := pools[codec]
	c := p.get()
	z := c.encode(c.buf[:0], body)
	var out []byte
	ok := len(z) < len(body)
	if ok {
		out = append(make([]byte, 0, len(z)), z...)
	}
	if cap(z) <= maxKeptBuf {
		c.buf = z[:0]
	} else {
		c.buf = nil
	}
	p.free <- c
	return out, ok
}

// The zstd decoder is safe for concurrent DecodeAll calls and reused by
// every store.
var zdec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxDecodedBody))

// s2Block is the largest block an S2 body may hold: the writer's default
// block size. A larger one is not a body this package wrote.
const s2Block = 1 << 20

// s2Readers are S2 stream readers, reset for each body.
var s2Readers = sync.Pool{New: func() any {
	return s2.NewReader(nil, s2.ReaderMaxBlockSize(s2Block), s2.ReaderAllocBlock(64<<10))
}}

// decompressBody undoes codec's compression of z. A body that decodes to
// more than maxDecodedBody bytes is refused.
func decompressBody(z []byte, codec Codec) ([]byte, error) {
	switch codec {
	case CodecZstd:
		return zdec.DecodeAll(z, nil)
	case CodecS2:
		r := s2Readers.Get().(*s2.Reader)
		defer s2Readers.Put(r)
		r.Reset(bytes.NewReader(z))
		// JSON compresses by 3 to 6 times: start there, grow if needed.
		body, err := readBounded(r, make([]byte, 0, min(4*len(z), maxDecodedBody)))
		r.Reset(nil)
		return body, err
	}
	return nil, fmt.Errorf("unknown body encoding %q", codec)
}

// readBounded appends what r reads to b, up to maxDecodedBody bytes;
// more is an error.
func readBounded(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) > maxDecodedBody {
			return nil, fmt.Errorf("body over %d bytes", maxDecodedBody)
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):min(cap(b), maxDecodedBody+1)])
		b = b[:len(b)+n]
		if err == io.EOF && len(b) <= maxDecodedBody {
			return b, nil
		}
		if err != nil && err != io.EOF {
			return nil, err
		}
	}
}
