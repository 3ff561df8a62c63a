package idemkit

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"
)

// ErrOutcomeUnknown is returned by a handler (wrapped in its error) that
// cannot tell whether its effect took place, such as a write whose answer
// was lost or a downstream call that timed out. The guard then keeps the
// claim. The record becomes indeterminate at once instead of being
// released, so the request is never run again until an operator resolves
// it. Do returns an error that is ErrOutcomeUnknown under errors.Is, which
// the client gets as a 5xx. Retrying with the same key is safe; it will
// not run twice.
var ErrOutcomeUnknown = errors.New("idemkit: the outcome of the request is unknown; the key is kept")

type executionKey struct{}

// ExecutionID returns the execution identity of the guarded request ctx
// belongs to. It returns false outside a guarded handler, such as a
// handler called by its own unit test or a route the guard does not
// cover. A handler that keys its writes on it must then refuse to write,
// since every unguarded call would share one identity.
//
// The identity is the same for every retry of one request. It differs
// wherever the request's identity differs, which is its tenant, operation
// and key ([Scope]) and its concrete resource ([Request.Resource]). The
// resource is the path, which an operation named by a route template does
// not say, and the query when it is fingerprinted. So a key reused for
// another resource once its record is gone never gets the identity of the
// first. The identity does not depend on the fingerprint or its version.
//
// A handler can key its own writes on it (an order ID, a conditional put,
// a payment provider's idempotency key) and recognise a write of an
// earlier attempt whose answer was lost.
//
// It is 32 lowercase hex digits, an HMAC-SHA-256 over the scope and the
// resource. Config.ExecutionSecret is the HMAC key when set, so the
// identity cannot be derived from the Idempotency-Key alone (nor, with a
// secret, from the request). Any prefix of it is a shorter identity of the
// same kind. With 20 digits (80 bits), two of a billion executions share
// one with a chance below one in a million.
func ExecutionID(ctx context.Context) (id string, ok bool) {
	e, ok := ctx.Value(executionKey{}).(*execution)
	if !ok {
		return "", false
	}
	e.once.Do(func() { e.id = executionID(e.secret, e.scope, e.resource) })
	return e.id, true
}

// ExecutionIDOf returns the identity [ExecutionID] gives a guarded
// handler of scope and resource ([Request.Resource]) under secret
// (Config.ExecutionSecret, nil when unset). An operator's tool uses it to
// map a record to the effect its handler made or would have made, since a
// record does not store its resource.
func ExecutionIDOf(secret []byte, scope Scope, resource string) string {
	return executionID(secret, scope, resource)
}

// ScopeOf returns the tenant, operation and key of the guarded request ctx
// belongs to, and false outside a guarded handler.
func ScopeOf(ctx context.Context) (Scope, bool) {
	e, ok := ctx.Value(executionKey{}).(*execution)
	if !ok {
		return Scope{}, false
	}
	return e.scope, true
}

// execution is the identity of one guarded handler run, computed on first
// use: most handlers never ask for it.
type execution struct {
	secret   []byte
	scope    Scope
	resource string
	once     sync.Once
	id       string // set by once
}

// withExecution returns ctx carrying the execution identity of scope and
// resource.
func withExecution(ctx context.Context, secret []byte, scope Scope, resource string) context.Context {
	return context.WithValue(ctx, executionKey{}, &execution{secret: secret, scope: scope, resource: resource})
}

// executionID computes the execution identity of scope and resource.
func executionID(secret []byte, scope Scope, resource string) string {
	key := secret
	if len(key) == 0 {
		key = []byte("idemkit execution id v1")
	}
	m := hmac.New(sha256.New, key)
	// Its own length-prefixed encoding of the whole scope, so that the
	// identity does not change with the store's record ID; a resource is a
	// fourth field, so a request without one keeps the identity of its
	// scope, and no resource can make the encoding of another request.
	fields := []string{scope.Tenant, scope.Operation, scope.Key}
	if resource != "" {
		fields = append(fields, resource)
	}
	for _, f := range fields {
		m.Write([]byte(strconv.Itoa(len(f)) + ":" + f))
	}
	return hex.EncodeToString(m.Sum(nil)[:16])
}
