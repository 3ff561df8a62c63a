package idemclient

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/idemkit/idemkit/internal/uuidv7"
)

type keyContext struct{}

// WithKey returns a copy of ctx under which a guarded request is sent with
// key instead of a new one. Use it to retry a request whose key you stored
// before sending it, after a crash or a restart. Mint the key with
// [NewKey], store it with the request, and send the request under it as
// often as it takes. A request that also sets the header must set the same
// key.
func WithKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyContext{}, key)
}

// NewKey returns a new UUIDv7 key holding the current time, the kind the
// Transport mints by default. The server refuses such a key once it is
// older than its record retention (400 key-expired) instead of running it
// again, and the Transport refuses to send it before that
// ([ErrRetentionPassed]).
func NewKey() string { return uuidv7.At(time.Now()) }

// keyOf returns the key req is sent with: the one in its header, the one
// ctx holds, or a new one.
func (t *Transport) keyOf(req *http.Request) (string, error) {
	given, inCtx := req.Context().Value(keyContext{}).(string)
	var key string
	switch vs := headerValues(req.Header, t.header); {
	case len(vs) > 0:
		key = vs[0]
		for _, v := range vs[1:] {
			if v != key {
				return "", fmt.Errorf("%w: the request sets %s twice, to %q and %q", ErrKeyNotSendable, t.header, key, v)
			}
		}
		if inCtx && given != key {
			return "", fmt.Errorf("%w: the request sets %s to %q and its context holds %q", ErrKeyNotSendable, t.header, key, given)
		}
	case inCtx:
		key = given
	default:
		k, err := t.newKey()
		if err != nil {
			return "", fmt.Errorf("idemclient: minting a key: %w", err)
		}
		key = k
	}
	if err := checkKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// headerValues returns the values of the field name in h under every
// spelling of it, the canonical one first: a caller that copied headers
// from a proxy or another protocol may have set h["idempotency-key"],
// which h.Values does not see, and a key missed would be replaced by a
// new one, running the caller's retry again.
func headerValues(h http.Header, name string) []string {
	canon := http.CanonicalHeaderKey(name)
	vs := slices.Clone(h[canon])
	other := make([]string, 0, 1)
	for k := range h {
		if k != canon && strings.EqualFold(k, name) {
			other = append(other, k)
		}
	}
	slices.Sort(other) // the same order, whatever the map's
	for _, k := range other {
		vs = append(vs, h[k]...)
	}
	return vs
}

// checkKey refuses a key no server takes as one: empty, with a byte
// outside printable ASCII, a comma (a list separator in the header) or a
// space at either end (HTTP strips it).
func checkKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty", ErrKeyNotSendable)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e || c == ',' {
			return fmt.Errorf("%w: byte %#x at %d: a key is printable ASCII without commas", ErrKeyNotSendable, c, i)
		}
	}
	if strings.TrimSpace(key) != key {
		return fmt.Errorf("%w: space at either end", ErrKeyNotSendable)
	}
	return nil
}
