package idemkit

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dunglas/httpsfv"
	"github.com/idemkit/idemkit/internal/recordid"
)

// DefaultMaxKeyLen is the longest Idempotency-Key accepted when
// [KeyOptions.MaxLen] is zero: 255 bytes, after one pair of quotes is removed.
const DefaultMaxKeyLen = 255

// Scope is the identity under which a request is remembered. Two requests
// share a record only when all three fields are equal.
type Scope struct {
	// Tenant identifies the authenticated caller. It comes from the
	// authorizer, never from the request body. It must not be empty.
	Tenant string
	// Operation names what the request does, by default its method and
	// concrete path ("POST /orders/1/capture").
	Operation string
	// Key is the parsed Idempotency-Key value.
	Key string
}

// MaxIDLen is the longest record ID [Scope.ID] returns, in bytes: the
// limit DynamoDB sets on a partition key.
const MaxIDLen = recordid.MaxLen

// MaxTenantLen is the longest tenant a [Guard] accepts, in bytes. A longer
// one is refused with [ErrTenantTooLong], and the request fails closed.
const MaxTenantLen = recordid.MaxTenantLen

// ID returns the store key of the scope. The encoding is unambiguous: each
// field is prefixed by its length in bytes, so no choice of field values can
// produce the ID of another scope. When accountWide is true the operation is
// left out of the ID (and checked against the stored record instead), so one
// key names one request across all operations of the tenant.
//
// An ID is at most [MaxIDLen] bytes. When the readable encoding would be
// longer, the operation and key are hashed (SHA-256), and, for a tenant
// over [MaxTenantLen] bytes, the tenant too. A store keeps the scope
// itself in the record, readable.
func (s Scope) ID(accountWide bool) string {
	return recordid.Encode(s.Tenant, s.Operation, s.Key, accountWide)
}

// KeyOptions configures [ParseKey]. The zero value accepts keys of up to
// [DefaultMaxKeyLen] bytes.
type KeyOptions struct {
	// MaxLen is the longest key accepted, in bytes after unquoting.
	// Zero means DefaultMaxKeyLen.
	MaxLen int
}

// ParseKey returns the Idempotency-Key carried by the given field values
// (every field line of the header, in order; an API Gateway v2 event joins
// them with commas).
//
// Both the structured-field string form ("abc", RFC 9651) and the bare form
// (abc) are accepted and compare equal. A quoted value may contain spaces; a
// bare value may hold only printable ASCII 0x21-0x7E other than the double
// quote and the comma. No key holds a comma, quoted or not: the comma
// separates field values (RFC 9110 §5.3), and lines joined with commas must
// read as they do apart. Several values that are all equal count as one.
// Each member of a comma-separated field value is read on its own, exactly
// as it would be on a line of its own, so one line may mix the two forms
// (0190a1b2-…, "0190a1b2-…") and several lines read the same joined or
// apart.
//
// Errors wrap [ErrInvalidKey] and one of [ErrKeyMissing], [ErrKeyEmpty],
// [ErrKeyTooLong], [ErrKeyInvalidChar], [ErrKeyMalformed] or
// [ErrKeyMultiple]. ParseKey returns ErrKeyMissing when values is empty.
func ParseKey(values []string, opts KeyOptions) (string, error) {
	max := opts.MaxLen
	if max <= 0 {
		max = DefaultMaxKeyLen
	}
	if len(values) == 0 {
		return "", ErrKeyMissing
	}
	var keys []string
	for _, v := range values {
		ks, err := splitKeyField(v)
		if err != nil {
			return "", err
		}
		keys = append(keys, ks...)
	}
	if len(keys) == 0 {
		return "", ErrKeyEmpty
	}
	for _, k := range keys[1:] {
		if k != keys[0] {
			return "", ErrKeyMultiple
		}
	}
	k := keys[0]
	if len(k) > max {
		return "", fmt.Errorf("%w: %d bytes, at most %d allowed", ErrKeyTooLong, len(k), max)
	}
	return k, nil
}

// splitKeyField returns the keys in one field value: a comma-separated
// list whose members are each parsed alone, so a value reads the same
// whether its members arrive on one line (an API Gateway v2 event joins
// header lines with commas) or on several.
func splitKeyField(v string) ([]string, error) {
	if strings.Trim(v, " \t") == "" {
		return nil, ErrKeyEmpty
	}
	// Every comma separates members, inside quotes too: a line that ends
	// inside a quoted string must not join the next one into a key.
	members := strings.Split(v, ",")
	keys := make([]string, 0, len(members))
	for i, m := range members {
		m = strings.Trim(m, " \t")
		if m == "" {
			// "a,,b" or "a," : an empty list element is malformed. The
			// error names where, never the value: it is logged.
			return nil, fmt.Errorf("%w: empty element %d of %d", ErrKeyMalformed, i+1, len(members))
		}
		k, err := parseKeyMember(m)
		if err != nil {
			if len(members) > 1 && m[0] == '"' && errors.Is(err, ErrKeyMalformed) {
				return nil, fmt.Errorf("%w (a key cannot hold a comma: commas separate header lines)", err)
			}
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// parseKeyMember returns the key of one list member: a structured-field
// string ("abc", RFC 9651) without parameters, or a bare value (abc).
func parseKeyMember(m string) (string, error) {
	if m[0] != '"' {
		if strings.IndexByte(m, '"') >= 0 {
			return "", fmt.Errorf("%w: quote inside a bare value", ErrKeyMalformed)
		}
		if i := invalidBareByte(m); i >= 0 {
			if m[i] == ' ' || m[i] == '\t' {
				return "", fmt.Errorf("%w: a space at offset %d of a bare key (send a key with spaces quoted: %q)", ErrKeyInvalidChar, i, `"a b"`)
			}
			return "", fmt.Errorf("%w: byte 0x%02x at offset %d (a key is printable ASCII)", ErrKeyInvalidChar, m[i], i)
		}
		return m, nil
	}
	item, err := httpsfv.UnmarshalItem([]string{m})
	if err != nil {
		if i := invalidQuotedByte(m); i >= 0 {
			return "", fmt.Errorf("%w: byte 0x%02x at offset %d (a key is printable ASCII)", ErrKeyInvalidChar, m[i], i)
		}
		return "", fmt.Errorf("%w: %v", ErrKeyMalformed, err)
	}
	k, ok := item.Value.(string)
	if !ok || len(item.Params.Names()) > 0 {
		return "", fmt.Errorf("%w: want a string without parameters", ErrKeyMalformed)
	}
	if k == "" {
		return "", ErrKeyEmpty
	}
	return k, nil
}

func invalidBareByte(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' {
			return i
		}
	}
	return -1
}

func invalidQuotedByte(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return i
		}
	}
	return -1
}
