package dynamo

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/idemkit/idemkit/internal/compress"
)

// Codec is how a store compresses snapshot bodies (Options.Codec). Its
// value is what a compressed body's item holds in its se attribute.
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
func (c Codec) valid() bool { return compress.ByName(string(c)) != nil }

// compressBody returns body compressed with codec in a new slice of
// exactly the compressed length, and true; or nil and false when that is
// not smaller than body. It compresses into the encoder's buffer and
// copies the (much smaller) result out, so that a completion allocates
// only what its item keeps.
func compressBody(body []byte, codec Codec) ([]byte, bool) {
	return compress.ByName(string(codec)).Body(body)
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
