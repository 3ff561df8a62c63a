// Package tenant holds what every adapter takes to find the tenant of a
// request: a [Func] that reads it from the authenticated caller, [Single]
// for a function that serves one key space, and [ErrInexact] for an
// identity that cannot name a tenant exactly.
package tenant

import (
	"context"
	"errors"
)

// Func returns the tenant of a request r, such as an API Gateway event,
// an *http.Request or a queue message. Every adapter takes one. It reads
// the authenticated caller only (the authorizer's identity, a verified
// token, the account a message belongs to), never the body or a header
// the client chooses.
//
// It returns "" when r has none. An empty tenant or an error fails the
// request closed. Nothing runs and nothing is stored, and the error,
// joined with idemkit.ErrTenantMissing, goes to the Observer, never to an
// HTTP caller.
//
// A tenant is exact or refused. Take the identity byte for byte, with no
// case folding, trimming or Unicode normalization, which could merge two
// callers. For an identity that may not be exact, return an error wrapping
// [ErrInexact], never a rounded value. A number past 2^53-1 decoded as a
// float64, for instance, may be the rounding of another caller's id.
type Func[R any] func(ctx context.Context, r R) (string, error)

// Single returns a Func that puts every request in the tenant name. Use
// it only where every caller shares one key space (an internal API, a
// queue of one account).
func Single[R any](name string) Func[R] {
	return func(context.Context, R) (string, error) { return name, nil }
}

// ErrInexact is wrapped by the error of a tenant [Func] given an identity
// that cannot name a tenant exactly. Such an identity is a number past
// 2^53-1 decoded as float64 (the decoder may have rounded it, and another
// caller's number to the same value), a fraction, a boolean, an object,
// an array, or text that spells one of them lossily. Like any tenant
// error, it fails the request closed. A tenant is exact or refused, never
// rounded into another caller's.
var ErrInexact = errors.New("idemkit: the caller's identity cannot name a tenant exactly")
