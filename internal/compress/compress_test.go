package compress

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

var pools = map[string]*Pool{"zstd": Zstd, "s2": S2}

func decode(t *testing.T, name string, z []byte) []byte {
	t.Helper()
	var (
		body []byte
		err  error
	)
	switch name {
	case "zstd":
		var d *zstd.Decoder
		if d, err = zstd.NewReader(nil); err == nil {
			body, err = d.DecodeAll(z, nil)
			d.Close()
		}
	case "s2":
		body, err = io.ReadAll(s2.NewReader(bytes.NewReader(z)))
	}
	if err != nil {
		t.Fatalf("%s: decode: %v", name, err)
	}
	return body
}

// TestBodyConcurrent: callers compressing at once each get their own
// body back, whole, also after the encoder that made it has compressed
// another body; the pool makes no more than MaxEncoders encoders.
func TestBodyConcurrent(t *testing.T) {
	for name, p := range pools {
		t.Run(name, func(t *testing.T) {
			const workers, rounds = 8, 20
			var wg sync.WaitGroup
			kept := make([][][]byte, workers)
			bodies := make([][][]byte, workers)
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := 0; r < rounds; r++ {
						body := bytes.Repeat([]byte(fmt.Sprintf(`{"worker":%d,"round":%d},`, w, r)), 64+w*r)
						z, _ := p.Body(body)
						kept[w], bodies[w] = append(kept[w], z), append(bodies[w], body)
					}
				}()
			}
			wg.Wait()
			for w := range kept {
				for r, z := range kept[w] {
					if z == nil {
						t.Fatalf("worker %d round %d: repetitive body not compressed", w, r)
					}
					if got := decode(t, name, z); !bytes.Equal(got, bodies[w][r]) {
						t.Fatalf("worker %d round %d: decoded %d bytes, want the %d-byte body", w, r, len(got), len(bodies[w][r]))
					}
				}
			}
			if n := p.made.Load(); n > MaxEncoders {
				t.Errorf("%d encoders made, want at most %d", n, MaxEncoders)
			}
		})
	}
}

// TestBodyIncompressible: a body compression does not shrink is
// refused, with no slice.
func TestBodyIncompressible(t *testing.T) {
	body := make([]byte, 4<<10)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range body {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		body[i] = byte(x)
	}
	for name, p := range pools {
		if z, ok := p.Body(body); ok || z != nil {
			t.Errorf("%s: random body: compressed to %d bytes, ok %v; want it refused", name, len(z), ok)
		}
	}
}

// TestBodyParallel: a caller compresses while another holds an encoder,
// instead of waiting for it.
func TestBodyParallel(t *testing.T) {
	if MaxEncoders < 2 {
		t.Skipf("GOMAXPROCS was %d at start: one encoder", MaxEncoders)
	}
	for name, p := range pools {
		held := p.get()
		done := make(chan bool, 1)
		go func() {
			_, ok := p.Body(bytes.Repeat([]byte(`{"a":1},`), 512))
			done <- ok
		}()
		select {
		case ok := <-done:
			if !ok {
				t.Errorf("%s: repetitive body not compressed", name)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: Body waited for the encoder another caller holds", name)
		}
		p.free <- held
	}
}

// TestPoolReuse: one caller after another reuse one encoder, and its
// output buffer, which is kept for the next body while it is at most
// maxKeptBuf and dropped when larger.
func TestPoolReuse(t *testing.T) {
	for name, p := range pools {
		t.Run(name, func(t *testing.T) {
			// A pool of its own, making the same encoders.
			q := &Pool{free: make(chan *compressor, MaxEncoders), new: p.new}
			small := bytes.Repeat([]byte(`{"id":"ord_1","amount":{"value":42}},`), 100)
			for range 3 {
				if _, ok := q.Body(small); !ok {
					t.Fatal("a JSON body did not compress")
				}
			}
			if n := q.made.Load(); n != 1 {
				t.Fatalf("%d encoders made for one caller at a time, want 1", n)
			}
			c := <-q.free
			if cap(c.buf) == 0 {
				t.Fatal("the output buffer of a small body was not kept")
			}
			q.free <- c
			// Random bytes do not compress: the output is larger than
			// maxKeptBuf and is not kept.
			big := make([]byte, maxKeptBuf+1024)
			_, _ = rand.NewChaCha8([32]byte{1}).Read(big)
			if _, ok := q.Body(big); ok {
				t.Fatal("random bytes compressed")
			}
			c = <-q.free
			if cap(c.buf) > maxKeptBuf {
				t.Fatalf("an output buffer of %d bytes was kept, over %d", cap(c.buf), maxKeptBuf)
			}
			q.free <- c
		})
	}
}

// TestByName: the pools are found by the names stored bodies carry, and
// no other name has one.
func TestByName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want *Pool
	}{{"zstd", Zstd}, {"s2", S2}, {"", nil}, {"gzip", nil}, {"ZSTD", nil}} {
		if got := ByName(tc.name); got != tc.want {
			t.Errorf("ByName(%q) = %p, want %p", tc.name, got, tc.want)
		}
	}
}

// TestFresh: a body compressed with a fresh encoder decodes to itself, as
// one compressed from the pool does.
func TestFresh(t *testing.T) {
	body := bytes.Repeat([]byte(`{"id":"ord_1","amount":{"value":42}},`), 100)
	for name, p := range pools {
		z, ok := p.Fresh(body)
		if !ok {
			t.Fatalf("%s: a JSON body did not compress", name)
		}
		if got := decode(t, name, z); !bytes.Equal(got, body) {
			t.Errorf("%s: decoded %d bytes, want the %d-byte body", name, len(got), len(body))
		}
	}
}
