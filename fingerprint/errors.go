package fingerprint

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by this package matches one of them
// with [errors.Is]; bad JSON Pointers are also reported as [*PointerError].
var (
	// ErrInvalidJSON reports a body that is not valid I-JSON (RFC 7493):
	// a syntax error, invalid UTF-8, a lone surrogate escape, trailing data,
	// a number (integer or not) beyond the float64 range, or a duplicate
	// object key.
	ErrInvalidJSON = errors.New("fingerprint: invalid JSON body")

	// ErrDuplicateKey reports an object with two members of the same name
	// (after unescaping). Such an error also matches ErrInvalidJSON.
	ErrDuplicateKey = errors.New("fingerprint: duplicate object key")

	// ErrTooDeep reports a JSON body nested deeper than Options.MaxDepth.
	ErrTooDeep = errors.New("fingerprint: JSON nesting too deep")

	// ErrInvalidForm reports an application/x-www-form-urlencoded body
	// that cannot be decoded (bad percent escape, semicolon separator).
	ErrInvalidForm = errors.New("fingerprint: invalid form body")

	// ErrInvalidBase64 reports an Input with IsBase64Encoded set whose Body
	// is not standard (padded) base64.
	ErrInvalidBase64 = errors.New("fingerprint: invalid base64 body")

	// ErrUnknownVersion reports a version this package does not know.
	ErrUnknownVersion = errors.New("fingerprint: unknown version")

	// ErrNotComparable reports that an older version's rules leave out a
	// part of the request that the Options hash under the current version
	// (v1 and a non-empty query string), so a fingerprint of that version
	// cannot show that the request is the same as the stored one.
	ErrNotComparable = errors.New("fingerprint: request not comparable under this version")

	// ErrInvalidOptions reports an Options value that cannot be used.
	// A [*PointerError] matches it too.
	ErrInvalidOptions = errors.New("fingerprint: invalid options")
)

// PointerError reports a malformed JSON Pointer (RFC 6901) in
// Options.Include or Options.Exclude. It matches [ErrInvalidOptions].
type PointerError struct {
	Pointer string // the pointer as given
	Reason  string
}

func (e *PointerError) Error() string {
	return fmt.Sprintf("fingerprint: invalid JSON Pointer %q: %s", e.Pointer, e.Reason)
}

// Unwrap returns ErrInvalidOptions.
func (e *PointerError) Unwrap() error { return ErrInvalidOptions }

// bodyError is a body error carrying one or two sentinels and a detail.
type bodyError struct {
	kind  error // sentinel named in the message
	also  error // optional second sentinel, not named in the message
	cause error // optional underlying error
	msg   string
}

func (e *bodyError) Error() string {
	if e.msg == "" {
		return e.kind.Error()
	}
	return e.kind.Error() + ": " + e.msg
}

func (e *bodyError) Unwrap() []error {
	errs := make([]error, 0, 3)
	errs = append(errs, e.kind)
	if e.also != nil {
		errs = append(errs, e.also)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}
