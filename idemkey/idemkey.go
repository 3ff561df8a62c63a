// Package idemkey reads Idempotency-Key values and says why one is
// refused. Every adapter applies its rules: the HTTP adapters parse the
// header with [Parse], and lambda/event and lambda/batch refuse a key of
// their own with its errors. A refused key is [ErrInvalid] under
// errors.Is, and an [*Error] under errors.As.
package idemkey

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dunglas/httpsfv"
)

// DefaultMaxLen is the longest key accepted when [Options.MaxLen] is zero:
// 255 bytes, after one pair of quotes is removed.
const DefaultMaxLen = 255

// ErrInvalid is wrapped by every error [Parse] returns.
var ErrInvalid = errors.New("idemkit: invalid Idempotency-Key")

// The reasons a key is refused. Each is also [ErrInvalid] under errors.Is.
// The guard refuses a request with an empty key (Scope.Key) with ErrEmpty
// too.
var (
	ErrMissing        = &Error{Reason: "missing"}
	ErrEmpty          = &Error{Reason: "empty"}
	ErrTooLong        = &Error{Reason: "too long"}
	ErrCharNotAllowed = &Error{Reason: "character not allowed in a key"}
	ErrMalformed      = &Error{Reason: "malformed"}
	ErrMultiple       = &Error{Reason: "two different values in one request"}
)

// Error says why an Idempotency-Key value was refused.
type Error struct {
	Reason string
}

func (e *Error) Error() string { return "idemkit: invalid Idempotency-Key: " + e.Reason }

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Options configures [Parse]. The zero value accepts keys of up to
// [DefaultMaxLen] bytes.
type Options struct {
	// MaxLen is the longest key accepted, in bytes after unquoting.
	// Zero means DefaultMaxLen.
	MaxLen int
}

// Parse returns the Idempotency-Key carried by the given field values
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
// Errors wrap [ErrInvalid] and one of [ErrMissing], [ErrEmpty],
// [ErrTooLong], [ErrCharNotAllowed], [ErrMalformed] or [ErrMultiple]. Parse
// returns ErrMissing when values is empty.
func Parse(values []string, opts Options) (string, error) {
	if len(values) == 0 {
		return "", ErrMissing
	}
	var keys []string
	for _, v := range values {
		ks, err := splitField(v)
		if err != nil {
			return "", err
		}
		keys = append(keys, ks...)
	}
	if len(keys) == 0 {
		return "", ErrEmpty
	}
	for _, k := range keys[1:] {
		if k != keys[0] {
			return "", ErrMultiple
		}
	}
	return Check(keys[0], opts.MaxLen)
}

// Check applies the rules that fit a key from anywhere, such as a message
// attribute: not empty, and not longer than max bytes ([DefaultMaxLen]
// when max is zero). It returns the key, or an error as [Parse] does.
func Check(key string, max int) (string, error) {
	if max <= 0 {
		max = DefaultMaxLen
	}
	switch {
	case key == "":
		return "", ErrEmpty
	case len(key) > max:
		return "", fmt.Errorf("%w: %d bytes, at most %d allowed", ErrTooLong, len(key), max)
	}
	return key, nil
}

// splitField returns the keys in one field value: a comma-separated
// list whose members are each parsed alone, so a value reads the same
// whether its members arrive on one line (an API Gateway v2 event joins
// header lines with commas) or on several.
func splitField(v string) ([]string, error) {
	if strings.Trim(v, " \t") == "" {
		return nil, ErrEmpty
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
			return nil, fmt.Errorf("%w: empty element %d of %d", ErrMalformed, i+1, len(members))
		}
		k, err := parseMember(m)
		if err != nil {
			if len(members) > 1 && m[0] == '"' && errors.Is(err, ErrMalformed) {
				return nil, fmt.Errorf("%w (a key cannot hold a comma: commas separate header lines)", err)
			}
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// parseMember returns the key of one list member: a structured-field
// string ("abc", RFC 9651) without parameters, or a bare value (abc).
func parseMember(m string) (string, error) {
	if m[0] != '"' {
		if strings.IndexByte(m, '"') >= 0 {
			return "", fmt.Errorf("%w: quote inside a bare value", ErrMalformed)
		}
		if i := invalidBareByte(m); i >= 0 {
			if m[i] == ' ' || m[i] == '\t' {
				return "", fmt.Errorf("%w: a space at offset %d of a bare key (send a key with spaces quoted: %q)", ErrCharNotAllowed, i, `"a b"`)
			}
			return "", fmt.Errorf("%w: byte 0x%02x at offset %d (a key is printable ASCII)", ErrCharNotAllowed, m[i], i)
		}
		return m, nil
	}
	item, err := httpsfv.UnmarshalItem([]string{m})
	if err != nil {
		if i := invalidQuotedByte(m); i >= 0 {
			return "", fmt.Errorf("%w: byte 0x%02x at offset %d (a key is printable ASCII)", ErrCharNotAllowed, m[i], i)
		}
		return "", fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	k, ok := item.Value.(string)
	if !ok || len(item.Params.Names()) > 0 {
		return "", fmt.Errorf("%w: want a string without parameters", ErrMalformed)
	}
	if k == "" {
		return "", ErrEmpty
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
