package dynamo

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
)

var codecs = []Codec{CodecZstd, CodecS2}

// TestCompressBodyConcurrent: completions compressing at once each get
// their own body back, whole, also after the encoder that made it has
// compressed another body (the output is never the reused buffer).
func TestCompressBodyConcurrent(t *testing.T) {
	for _, codec := range codecs {
		t.Run(string(codec), func(t *testing.T) { compressConcurrently(t, codec) })
	}
}

func compressConcurrently(t *testing.T, codec Codec) {
	const workers, rounds = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var kept [][]byte
			var bodies [][]byte
			for r := 0; r < rounds; r++ {
				body := bytes.Repeat([]byte(fmt.Sprintf(`{"worker":%d,"round":%d},`, w, r)), 64+w*r)
				z, ok := compressBody(body, codec)
				if !ok {
					errs <- fmt.Errorf("worker %d round %d: %d-byte repetitive body not compressed", w, r, len(body))
					return
				}
				kept, bodies = append(kept, z), append(bodies, body)
			}
			for i, z := range kept {
				got, err := decompressBody(z, codec)
				if err != nil || !bytes.Equal(got, bodies[i]) {
					errs <- fmt.Errorf("worker %d round %d: decoded %d bytes (%v), want the %d-byte body", w, i, len(got), err, len(bodies[i]))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCompressBodyIncompressible: a body compression does not shrink is
// stored as it is.
func TestCompressBodyIncompressible(t *testing.T) {
	body := make([]byte, 4<<10)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range body {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		body[i] = byte(x)
	}
	for _, codec := range codecs {
		if z, ok := compressBody(body, codec); ok || z != nil {
			t.Errorf("%s: random body: compressed to %d bytes, ok %v; want it left as is", codec, len(z), ok)
		}
	}
}

// TestDecompressBodyRefuses: a body that is not what its codec wrote, or
// that decodes to more than any response we store, is an error, never a
// panic or a huge allocation.
func TestDecompressBodyRefuses(t *testing.T) {
	huge := bytes.Repeat([]byte{'a'}, maxDecodedBody+1)
	good := map[Codec][]byte{}
	for _, codec := range codecs {
		z, ok := compressBody([]byte(strings.Repeat(`{"a":1},`, 512)), codec)
		if !ok {
			t.Fatalf("%s: not compressed", codec)
		}
		good[codec] = z
	}
	for _, tc := range []struct {
		name  string
		codec Codec
		z     []byte
		want  string
	}{
		{"zstd: garbage", CodecZstd, []byte("not zstd at all"), "magic"},
		{"s2: garbage", CodecS2, []byte("not s2 at all"), "corrupt"},
		{"s2: truncated", CodecS2, good[CodecS2][:len(good[CodecS2])-3], "corrupt"},
		{"zstd: truncated", CodecZstd, good[CodecZstd][:len(good[CodecZstd])-3], ""},
		{"s2: a bit flipped", CodecS2, flip(good[CodecS2]), ""},
		{"zstd: a bit flipped", CodecZstd, flip(good[CodecZstd]), ""},
		{"s2: too large", CodecS2, mustCompress(t, huge, CodecS2), "over"},
		{"zstd: too large", CodecZstd, mustCompress(t, huge, CodecZstd), ""},
		{"unknown codec", Codec("lz4"), good[CodecS2], "unknown body encoding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := decompressBody(tc.z, tc.codec)
			if err == nil {
				t.Fatalf("decoded %d bytes, want an error", len(body))
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to say %q", err, tc.want)
			}
		})
	}
}

func flip(z []byte) []byte {
	c := bytes.Clone(z)
	c[len(c)/2] ^= 0x10
	return c
}

func mustCompress(t *testing.T, body []byte, codec Codec) []byte {
	t.Helper()
	z, ok := compressBody(body, codec)
	if !ok {
		t.Fatalf("%s: %d bytes not compressed", codec, len(body))
	}
	return z
}
