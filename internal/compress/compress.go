// Package compress holds the encoders that compress stored response
// bodies: a pool per codec (zstd and S2), each handing out encoders that
// keep their tables and output buffer between bodies. The DynamoDB store
// compresses its completions' bodies with them, and the benchmarks
// compress with the very same ones to measure what that costs.
package compress

import (
	"runtime"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// ZstdLevel is the level Zstd compresses at. It is SpeedDefault, not
// SpeedFastest. On JSON the fastest level writes about 3% more bytes,
// which at 64 KB costs one more write unit per completion (12 instead of
// 11; lab/bench/OPTIMIZATIONS.md).
const ZstdLevel = zstd.SpeedDefault

// compressor is one encoder with its output buffer, used by one body at
// a time.
type compressor struct {
	zenc *zstd.Encoder // Zstd
	senc *s2.Writer    // S2, writing to out
	out  sliceWriter
	buf  []byte // the output buffer, kept between bodies
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

// A Pool keeps one codec's encoders. They are made on demand, up to one
// per processor, and kept for the life of the process: concurrent
// callers compress in parallel instead of queueing for one shared
// encoder, and an encoder's tables (about 1 MB for zstd) are not thrown
// away by a garbage collection as a sync.Pool would do.
type Pool struct {
	made atomic.Int32
	free chan *compressor
	new  func() *compressor
}

// MaxEncoders is how many encoders a Pool makes at most: GOMAXPROCS when
// the process started.
var MaxEncoders = int32(max(1, runtime.GOMAXPROCS(0)))

// Zstd compresses with zstd at ZstdLevel, with a checksum.
var Zstd = &Pool{free: make(chan *compressor, MaxEncoders), new: func() *compressor {
	// The options are constants: NewWriter fails only on a bad one.
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(ZstdLevel))
	if err != nil {
		panic(err)
	}
	return &compressor{zenc: enc}
}}

// S2 compresses to S2's framed stream format, with a CRC-32C per block.
var S2 = &Pool{free: make(chan *compressor, MaxEncoders), new: func() *compressor {
	return &compressor{senc: s2.NewWriter(nil, s2.WriterConcurrency(1))}
}}

// ByName returns the pool of the codec a stored body names ("zstd" or
// "s2", the value of its item's encoding attribute), or nil.
func ByName(name string) *Pool { return byName[name] }

var byName = map[string]*Pool{"zstd": Zstd, "s2": S2}

func (p *Pool) get() *compressor {
	select {
	case c := <-p.free:
		return c
	default:
	}
	if p.made.Add(1) <= MaxEncoders {
		return p.new()
	}
	p.made.Add(-1)
	return <-p.free
}

// maxKeptBuf bounds the output buffer an encoder keeps between bodies; a
// larger one (a body of several hundred KB) is dropped.
const maxKeptBuf = 256 << 10

// Body returns body compressed in a new slice of exactly the compressed
// length, and true; or nil and false when that is not smaller than body.
// It compresses into the encoder's buffer and copies the (much smaller)
// result out, so that it allocates only what the caller keeps.
func (p *Pool) Body(body []byte) ([]byte, bool) {
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

// Fresh is Body with an encoder made for this body alone and dropped
// after, as compressing without a pool would: for the benchmarks, to
// measure what reusing an encoder saves.
func (p *Pool) Fresh(body []byte) ([]byte, bool) {
	c := p.new()
	z := c.encode(nil, body)
	if c.zenc != nil {
		_ = c.zenc.Close()
	}
	if len(z) >= len(body) {
		return nil, false
	}
	return z, true
}
