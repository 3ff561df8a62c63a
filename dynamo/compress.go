package dynamo

import (
	"runtime"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

// zstdLevel is the level bodies are compressed at. SpeedDefault, not
// SpeedFastest: on JSON the fastest level writes about 3% more bytes,
// which at 64 KB costs one more write unit per completion (12 instead of
// 11, docs/PERFORMANCE.md).
const zstdLevel = zstd.SpeedDefault

// compressor is one zstd encoder with its output buffer, used by one
// completion at a time.
type compressor struct {
	enc *zstd.Encoder
	buf []byte
}

// Compressors are made on demand, up to one per processor, and kept for
// the life of the process: concurrent completions compress in parallel
// instead of queueing for one shared encoder, and an encoder's tables
// (about 1 MB) are not thrown away by a garbage collection as a
// sync.Pool would do.
var (
	maxCompressors  = int32(max(1, runtime.GOMAXPROCS(0)))
	madeCompressors atomic.Int32
	freeCompressors = make(chan *compressor, maxCompressors)
)

func getCompressor() *compressor {
	select {
	case c := <-freeCompressors:
		return c
	default:
	}
	if madeCompressors.Add(1) <= maxCompressors {
		// The options are constants: NewWriter fails only on a bad one.
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstdLevel))
		if err != nil {
			panic(err)
		}
		return &compressor{enc: enc}
	}
	madeCompressors.Add(-1)
	return <-freeCompressors
}

// maxKeptBuf bounds the output buffer a compressor keeps between
// completions; a larger one (a body of several hundred KB) is dropped.
const maxKeptBuf = 256 << 10

// compressBody returns body compressed with zstd in a new slice of
// exactly the compressed length, and true; or nil and false when that is
// not smaller than body. It compresses into the compressor's buffer and
// copies the (much smaller) result out, so that a completion allocates
// only what its item keeps.
func compressBody(body []byte) ([]byte, bool) {
	c := getCompressor()
	z := c.enc.EncodeAll(body, c.buf[:0])
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
	freeCompressors <- c
	return out, ok
}
