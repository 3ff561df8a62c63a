package idemkit

import "github.com/idemkit/idemkit/internal/recordid"

// Scope is the identity under which a request is remembered. Two requests
// share a record only when all three fields are equal.
type Scope struct {
	// Tenant identifies the authenticated caller. It comes from the
	// authorizer, never from the request body. It must not be empty, and
	// a Guard refuses one over 1024 bytes (ErrTenantTooLong).
	Tenant string
	// Operation names what the request does, by default its method and
	// concrete path ("POST /orders/1/capture").
	Operation string
	// Key is the Idempotency-Key value, as package idemkey parses it. It
	// must not be empty.
	Key string
}

// ID returns the store key of the scope. The encoding is unambiguous: each
// field is prefixed by its length in bytes, so no choice of field values can
// produce the ID of another scope. When accountWide is true the operation is
// left out of the ID (and checked against the stored record instead), so one
// key names one request across all operations of the tenant.
//
// An ID is at most 2048 bytes, the limit DynamoDB sets on a partition
// key. When the readable encoding would be longer, the operation and key
// are hashed (SHA-256), and, for a tenant over 1024 bytes, the tenant
// too. A store keeps the scope itself in the record, readable.
func (s Scope) ID(accountWide bool) string {
	return recordid.Encode(s.Tenant, s.Operation, s.Key, accountWide)
}
