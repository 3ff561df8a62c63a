package idemkit

import "context"

// TenantFunc returns the tenant of a request r, such as an API Gateway
// event, an *http.Request or a queue message. Every adapter takes one. It
// reads the authenticated caller only (the authorizer's identity, a
// verified token, the account a message belongs to), never the body or a
// header the client chooses.
//
// It returns "" when r has none. An empty tenant or an error fails the
// request closed. Nothing runs and nothing is stored, and the error,
// joined with [ErrTenantMissing], goes to the Observer, never to an HTTP
// caller.
//
// A tenant is exact or refused. Take the identity byte for byte, with no
// case folding, trimming or Unicode normalization, which could merge two
// callers. For an identity that may not be exact, return an error wrapping
// [ErrTenantInexact], never a rounded value. A number past 2^53-1 decoded
// as a float64, for instance, may be the rounding of another caller's id.
type TenantFunc[R any] func(ctx context.Context, r R) (string, error)

// SingleTenant returns a TenantFunc that puts every request in the tenant
// name. Use it only where every caller shares one key space (an internal
// API, a queue of one account).
func SingleTenant[R any](name string) TenantFunc[R] {
	return func(context.Context, R) (string, error) { return name, nil }
}
