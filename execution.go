package idemkit

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
)

// ErrOutcomeUnknown is returned by a handler (wrapped in its error) that
// cannot tell whether its effect took place: a write whose answer was lost,
// a downstream call that timed out. The guard then keeps the claim: the
// record becomes indeterminate at once instead of being released, so the
// request is never run again until an operator resolves it, and Do returns
// an error that is ErrOutcomeUnknown under errors.Is (a 5xx for the client:
// retrying with the same key is safe, it will not run twice).
var ErrOutcomeUnknown = errors.New("idemkit: the outcome of the request is unknown; the key is kept")

type executionKey struct{}

// ExecutionID returns the execution identity of the guarded request ctx
// belongs to, or "" outside a guarded handler. It is the same for every
// retry of one scope (tenant, operation, key) and distinct across scopes,
// so a handler can key its own writes on it (an order ID, a conditional
// put, a payment provider's idempotency key) and recognise a write of an
// earlier attempt whose answer was lost. It is 32 lowercase hex digits: an
// HMAC-SHA-256 over the whole scope, with Config.ExecutionSecret as the
// key when set, so it cannot be derived from the Idempotency-Key alone
// (nor, with a secret, from the scope).
func ExecutionID(ctx context.Context) string {
	id, _ := ctx.Value(executionKey{}).(string)
	return id
}

// executionID computes the execution identity of scope.
func executionID(secret []byte, scope Scope) string {
	key := secret
	if len(key) == 0 {
		key = []byte("idemkit execution id v1")
	}
	m := hmac.New(sha256.New, key)
	// Its own length-prefixed encoding of the whole scope, so that the
	// identity does not change with the store's record ID.
	for _, f := range []string{scope.Tenant, scope.Operation, scope.Key} {
		m.Write([]byte(strconv.Itoa(len(f)) + ":" + f))
	}
	return hex.EncodeToString(m.Sum(nil)[:16])
}
