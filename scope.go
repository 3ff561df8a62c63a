package idemkit

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dunglas/httpsfv"
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
const MaxIDLen = 2048

// MaxTenantLen is the longest tenant a [Guard] accepts, in bytes. A longer
// one is refused with [ErrTenantTooLong], and the request fails closed.
const MaxTenantLen = 1024

// ID returns the store key of the scope. The encoding is unambiguous: each
// field is prefixed by its length in bytes, so no choice of field values can
// produce the ID of another scope. When accountWide is true the operation is
// left out of the ID (and checked against the stored record instead), so one
// key names one request across all operations of the tenant.
//
// An ID is at most [MaxIDLen] bytes. When the readable encoding ("o1|" or
// "a1|", then the fields) would be longer, the ID is the tenant followed by
// the SHA-256 of that encoding ("o1h|" or "a1h|"), and, for a tenant over
// [MaxTenantLen] bytes, the hash alone ("o1x|" or "a1x|"). IDs of up to
// MaxIDLen bytes are the readable encoding, so records stored under them are
// found as before. A store keeps the scope itself in the record, readable.
func (s Scope) ID(accountWide bool) string {
	id := s.readableID(accountWide)
	if len(id) <= MaxIDLen {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	var b strings.Builder
	b.Grow(len(s.Tenant) + 80)
	if accountWide {
		b.WriteString("a1")
	} else {
		b.WriteString("o1")
	}
	if len(s.Tenant) <= MaxTenantLen {
		b.WriteString("h|")
		writeField(&b, s.Tenant)
	} else {
		b.WriteString("x|")
	}
	b.WriteString(hex.EncodeToString(sum[:]))
	return b.String()
}

func (s Scope) readableID(accountWide bool) string {
	var b strings.Builder
	b.Grow(len(s.Tenant) + len(s.Operation) + len(s.Key) + 16)
	if accountWide {
		b.WriteString("a1|")
	} else {
		b.WriteString("o1|")
	}
	writeField(&b, s.Tenant)
	if !accountWide {
		writeField(&b, s.Operation)
	}
	writeField(&b, s.Key)
	return b.String()
}

// ErrHashedID is returned by [ParseID] for an ID whose operation and key
// are hashed, because the scope is too long for a readable ID. [IDTenant]
// returns the tenant of such an ID; the scope itself is in the record.
var ErrHashedID = errors.New("idemkit: record ID is hashed")

// IDTenant returns the tenant of a record ID, readable or hashed. It fails
// for an ID whose tenant, over MaxTenantLen bytes, is hashed too.
func IDTenant(id string) (string, error) {
	rest, ok := strings.CutPrefix(id, "o1h|")
	if !ok {
		rest, ok = strings.CutPrefix(id, "a1h|")
	}
	if !ok {
		s, _, err := ParseID(id)
		return s.Tenant, err
	}
	tenant, tail, err := readField(rest)
	if err != nil || len(tail) != 2*sha256.Size {
		return "", fmt.Errorf("idemkit: record ID %q: malformed hashed ID", id)
	}
	if _, err := hex.DecodeString(tail); err != nil {
		return "", fmt.Errorf("idemkit: record ID %q: malformed hashed ID", id)
	}
	return tenant, nil
}

// ParseID returns the scope an ID encodes and whether it is account-wide
// (its Operation is then empty). It is the inverse of [Scope.ID] for a
// readable ID; for a hashed one it returns an error wrapping [ErrHashedID].
func ParseID(id string) (s Scope, accountWide bool, err error) {
	for _, p := range []string{"o1h|", "a1h|", "o1x|", "a1x|"} {
		if strings.HasPrefix(id, p) {
			return Scope{}, false, fmt.Errorf("%w: %q", ErrHashedID, id)
		}
	}
	rest, ok := strings.CutPrefix(id, "o1|")
	if !ok {
		if rest, ok = strings.CutPrefix(id, "a1|"); !ok {
			return Scope{}, false, fmt.Errorf("idemkit: record ID %q: unknown encoding", id)
		}
		accountWide = true
	}
	fields := []*string{&s.Tenant, &s.Operation, &s.Key}
	if accountWide {
		fields = []*string{&s.Tenant, &s.Key}
	}
	for _, f := range fields {
		var err error
		if *f, rest, err = readField(rest); err != nil {
			return Scope{}, false, fmt.Errorf("idemkit: record ID %q: malformed field", id)
		}
	}
	if rest != "" {
		return Scope{}, false, fmt.Errorf("idemkit: record ID %q: trailing bytes", id)
	}
	return s, accountWide, nil
}

// readField reads one "<len>:<bytes>" field off the front of s.
func readField(s string) (field, rest string, err error) {
	n, tail, ok := strings.Cut(s, ":")
	l, err := strconv.Atoi(n)
	if !ok || err != nil || l < 0 || l > len(tail) || strconv.Itoa(l) != n {
		return "", "", errors.New("malformed field")
	}
	return tail[:l], tail[l:], nil
}

func writeField(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
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
