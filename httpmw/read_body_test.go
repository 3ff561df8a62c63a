package httpmw

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkit/idemkit/internal/testing/testkit"
)

// readBodySlack is what readBody may allocate besides its buffers.
const readBodySlack = 9 << 10

// TestReadBodyAllocations holds readBody to one buffer of about the body's
// size when the request declares its length: the bytes allocated per read
// are at most the body plus readBodySlack (a large allocation is rounded
// up to whole 8 KB pages, plus bytes.MinRead and the readers), and for a
// body over bodyFirstRead, the first buffer of that size too.
func TestReadBodyAllocations(t *testing.T) {
	for _, size := range []int{100, 4 << 10, 64 << 10, 1 << 20} {
		t.Run(strconv.Itoa(size)+"B", func(t *testing.T) {
			body := bytes.Repeat([]byte("x"), size)
			r := &http.Request{ContentLength: int64(size)}
			read := func() {
				r.Body = io.NopCloser(bytes.NewReader(body))
				got, err := readBody(r, DefaultMaxBodyBytes)
				if err != nil || len(got) != size {
					t.Fatalf("readBody: %d bytes, %v", len(got), err)
				}
			}
			perRead := allocatedPerRead(read)
			budget := uint64(size + readBodySlack)
			if size > bodyFirstRead {
				// The first buffer, bytes.MinRead over bodyFirstRead,
				// rounded up to whole 8 KB pages.
				budget += bodyFirstRead + 8<<10
			}
			if raceEnabled {
				// Measured under -race: the buffer is allocated twice.
				budget *= 2
			}
			t.Logf("%d bytes allocated per read of a %d-byte body (budget %d)", perRead, size, budget)
			if perRead > budget {
				t.Errorf("%d bytes allocated per read of a %d-byte body, budget %d", perRead, size, budget)
			}
		})
	}
}

// TestReadBodyLengths: the body read is the body sent, whatever length
// the request declares, and the limit holds either way.
func TestReadBodyLengths(t *testing.T) {
	const limit = 1000
	for _, tc := range []struct {
		name     string
		size     int
		declared int64
		tooLarge bool
	}{
		{"declared", 600, 600, false},
		{"unknown length", 600, -1, false},
		{"shorter than declared", 300, 600, false},
		{"longer than declared", 900, 600, false},
		{"at the limit", limit, limit, false},
		{"longer than declared, over the limit", limit + 1, 600, true},
		{"unknown length, over the limit", limit + 1, -1, true},
		{"declared over the limit", 10, limit + 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := strings.Repeat("y", tc.size)
			r := &http.Request{ContentLength: tc.declared, Body: io.NopCloser(strings.NewReader(body))}
			got, err := readBody(r, limit)
			if tc.tooLarge {
				if !errors.Is(err, ErrBodyTooLarge) {
					t.Fatalf("readBody: %d bytes, %v; want ErrBodyTooLarge", len(got), err)
				}
				return
			}
			if err != nil || string(got) != body {
				t.Fatalf("readBody: %d bytes, %v; want the %d-byte body", len(got), err, tc.size)
			}
		})
	}
}

// TestReadBodyDeclaredNotSent: a request that declares a body of the
// largest length allowed and sends one byte makes readBody set aside
// bodyFirstRead, not the declared length: slow senders cannot make the
// server hold memory they do not send.
func TestReadBodyDeclaredNotSent(t *testing.T) {
	r := &http.Request{ContentLength: DefaultMaxBodyBytes}
	read := func() {
		r.Body = io.NopCloser(strings.NewReader("x"))
		if got, err := readBody(r, DefaultMaxBodyBytes); err != nil || len(got) != 1 {
			t.Fatalf("readBody: %q, %v", got, err)
		}
	}
	perRead := allocatedPerRead(read)
	budget := uint64(bodyFirstRead + 8<<10 + readBodySlack)
	if raceEnabled {
		budget *= 2
	}
	if perRead > budget {
		t.Errorf("%d bytes allocated for a 1-byte body declared as %d, budget %d", perRead, DefaultMaxBodyBytes, budget)
	}
}

// allocatedPerRead returns the bytes read allocates per call, after a
// first call that warms up.
func allocatedPerRead(read func()) uint64 {
	read()
	const n = 20
	_, allocated := testkit.Allocated(func() {
		for range n {
			read()
		}
	})
	return allocated / n
}
