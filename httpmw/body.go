package httpmw

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// ErrBodyTooLarge is the error reported to the Observer for a guarded
// request whose body is over MaxBodyBytes, or over the limit of an outer
// http.MaxBytesReader (answered 413 body-too-large).
var ErrBodyTooLarge = errors.New("httpmw: request body too large")

// bodyFirstRead bounds what readBody sets aside before a body's bytes
// arrive: a request that declares a large length and sends little holds
// this much at most, not the declared length. A body up to it is read
// into one buffer of its size; a longer one into this much first, then
// one buffer of the declared length.
const bodyFirstRead = 64 << 10

// readBody reads the whole body, at most limit bytes.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return []byte{}, nil
	}
	defer r.Body.Close()
	if r.ContentLength > limit {
		return nil, ErrBodyTooLarge
	}
	var buf bytes.Buffer
	src := io.LimitReader(r.Body, limit+1)
	// ReadFrom wants MinRead bytes free before each read: with only the
	// expected length free it would grow the buffer to twice the body
	// before seeing the end.
	if n := r.ContentLength; n > 0 {
		first := min(n, bodyFirstRead)
		buf.Grow(int(first) + bytes.MinRead)
		if n > first {
			if _, err := buf.ReadFrom(io.LimitReader(src, first)); err != nil {
				return nil, bodyError(err)
			}
			if int64(buf.Len()) == first {
				buf.Grow(int(n-first) + bytes.MinRead)
			}
		}
	}
	if _, err := buf.ReadFrom(src); err != nil {
		return nil, bodyError(err)
	}
	if int64(buf.Len()) > limit {
		return nil, ErrBodyTooLarge
	}
	return buf.Bytes(), nil
}

// bodyError is the error of a failed body read: ErrBodyTooLarge for the
// limit of an outer http.MaxBytesReader.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return fmt.Errorf("%w: %w", ErrBodyTooLarge, err)
	}
	return err
}
