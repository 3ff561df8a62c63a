// Package recordid encodes a record's ID from its scope, and reads the
// tenant and scope back where a store must route by them (package
// dynamo's regions).
//
// The encoding is unambiguous: each field is prefixed by its length in
// bytes, so no choice of field values can produce the ID of another scope.
// An account-wide ID leaves the operation out. An ID is at most MaxLen
// bytes: when the readable encoding ("o1|" or "a1|", then the fields) would
// be longer, the ID is the tenant followed by the SHA-256 of that encoding
// ("o1h|" or "a1h|"), and, for a tenant over MaxTenantLen bytes, the hash
// alone ("o1x|" or "a1x|").
package recordid

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxLen is the longest ID Encode returns, in bytes: the limit DynamoDB
// sets on a partition key.
const MaxLen = 2048

// MaxTenantLen is the longest tenant an ID names readably, in bytes.
const MaxTenantLen = 1024

// ErrHashed is returned by Parse for an ID whose operation and key are
// hashed; Tenant still reads its tenant.
var ErrHashed = errors.New("record ID is hashed")

// Encode returns the ID of a scope.
func Encode(tenant, operation, key string, accountWide bool) string {
	id := readable(tenant, operation, key, accountWide)
	if len(id) <= MaxLen {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	var b strings.Builder
	b.Grow(len(tenant) + 80)
	if accountWide {
		b.WriteString("a1")
	} else {
		b.WriteString("o1")
	}
	if len(tenant) <= MaxTenantLen {
		b.WriteString("h|")
		writeField(&b, tenant)
	} else {
		b.WriteString("x|")
	}
	b.WriteString(hex.EncodeToString(sum[:]))
	return b.String()
}

func readable(tenant, operation, key string, accountWide bool) string {
	var b strings.Builder
	b.Grow(len(tenant) + len(operation) + len(key) + 16)
	if accountWide {
		b.WriteString("a1|")
	} else {
		b.WriteString("o1|")
	}
	writeField(&b, tenant)
	if !accountWide {
		writeField(&b, operation)
	}
	writeField(&b, key)
	return b.String()
}

// Tenant returns the tenant of an ID, readable or hashed. It fails for an
// ID whose tenant, over MaxTenantLen bytes, is hashed too.
func Tenant(id string) (string, error) {
	rest, ok := strings.CutPrefix(id, "o1h|")
	if !ok {
		rest, ok = strings.CutPrefix(id, "a1h|")
	}
	if !ok {
		tenant, _, _, _, err := Parse(id)
		return tenant, err
	}
	tenant, tail, err := readField(rest)
	if err != nil || len(tail) != 2*sha256.Size {
		return "", fmt.Errorf("record ID %q: malformed hashed ID", id)
	}
	if _, err := hex.DecodeString(tail); err != nil {
		return "", fmt.Errorf("record ID %q: malformed hashed ID", id)
	}
	return tenant, nil
}

// Parse returns the scope a readable ID encodes and whether it is
// account-wide (operation is then empty): the inverse of Encode. For a
// hashed ID it returns an error wrapping ErrHashed.
func Parse(id string) (tenant, operation, key string, accountWide bool, err error) {
	for _, p := range []string{"o1h|", "a1h|", "o1x|", "a1x|"} {
		if strings.HasPrefix(id, p) {
			return "", "", "", false, fmt.Errorf("%w: %q", ErrHashed, id)
		}
	}
	rest, ok := strings.CutPrefix(id, "o1|")
	if !ok {
		if rest, ok = strings.CutPrefix(id, "a1|"); !ok {
			return "", "", "", false, fmt.Errorf("record ID %q: unknown encoding", id)
		}
		accountWide = true
	}
	fields := []*string{&tenant, &operation, &key}
	if accountWide {
		fields = []*string{&tenant, &key}
	}
	for _, f := range fields {
		var err error
		if *f, rest, err = readField(rest); err != nil {
			return "", "", "", false, fmt.Errorf("record ID %q: malformed field", id)
		}
	}
	if rest != "" {
		return "", "", "", false, fmt.Errorf("record ID %q: trailing bytes", id)
	}
	return tenant, operation, key, accountWide, nil
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
