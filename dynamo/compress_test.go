package dynamo

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestCompressBodyConcurrent: completions compressing at once each get
// their own body back, whole, also after the encoder that made it has
// compressed another body (the output is never the reused buffer).
func TestCompressBodyConcurrent(t *testing.T) {
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
				z, ok := compressBody(body)
				if !ok {
					errs <- fmt.Errorf("worker %d round %d: %d-byte repetitive body not compressed", w, r, len(body))
					return
				}
				kept, bodies = append(kept, z), append(bodies, body)
			}
			for i, z := range kept {
				got, err := zdec.DecodeAll(z, nil)
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
	if n := madeCompressors.Load(); n > maxCompressors {
		t.Errorf("%d encoders made, want at most %d", n, maxCompressors)
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
	if z, ok := compressBody(body); ok || z != nil {
		t.Fatalf("random body: compressed to %d bytes, ok %v; want it left as is", len(z), ok)
	}
}

// TestCompressBodyParallel: a completion compresses while another holds
// an encoder, instead of waiting for it.
func TestCompressBodyParallel(t *testing.T) {
	if maxCompressors < 2 {
		t.Skipf("GOMAXPROCS was %d at start: one encoder", maxCompressors)
	}
	held := getCompressor()
	defer func() { freeCompressors <- held }()
	done := make(chan bool, 1)
	go func() {
		_, ok := compressBody(bytes.Repeat([]byte(`{"a":1},`), 512))
		done <- ok
	}()
	select {
	case ok := <-done:
		if !ok {
			t.Fatal("repetitive body not compressed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("compressBody waited for the encoder another completion holds")
	}
}
