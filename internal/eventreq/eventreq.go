// Package eventreq builds the guard request of a non-HTTP input (a Lambda
// event, a record of a batch): its key, tenant and fingerprint. The
// lambda/event and lambda/batch wrappers share it, so that one input is
// guarded the same way by both.
package eventreq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/idemkey"
	"github.com/idemkit/idemkit/tenant"
)

// Spec says how the guard request of an input of type In is made. Its
// fields mean what the fields of lambda/event's Config of the same names
// mean.
type Spec[In any] struct {
	Key       func(In) (string, error)
	MaxKeyLen int
	Tenant    tenant.Func[In] // nil: no tenant
	Operation string
	Payload   func(In) ([]byte, error) // nil: the JSON encoding of the input
	Print     *fingerprint.Fingerprinter
	// ContentType is the payload's media type for the fingerprint's
	// ModeAuto: "application/json" reads it as JSON; empty, as JSON when
	// it starts with "{" or "[", as raw bytes otherwise.
	ContentType string
	// Raw, when set, fingerprints a payload Print cannot read as JSON (it
	// starts with "{" or "[" but does not parse, or nests too deep) as its
	// bytes, so that such a payload is compared byte for byte instead of
	// refused on every delivery. Nil: such a payload is an error.
	Raw *fingerprint.Fingerprinter
	// CheckKeyAge applies the policy's UUIDv7 key-age check to the key
	// (idemkit.ErrKeyExpired). False: the request sets IgnoreKeyTime.
	CheckKeyAge bool
	// Prefix starts the errors of Key, Payload and the fingerprint
	// ("event").
	Prefix string
}

// MustPrint panics, naming the wrapper pkg, when tenantSet is false
// (hint says what to set instead) or opts cannot be used; it returns
// opts' fingerprinter. Both wrappers call it when they are built, so a bad
// setup stops the function at init, and fails there the same way.
func MustPrint(pkg string, tenantSet bool, hint string, opts fingerprint.Options) *fingerprint.Fingerprinter {
	if !tenantSet {
		panic(pkg + ": invalid Config: the Tenant setting is nil: " + hint)
	}
	fp, err := fingerprint.New(opts)
	if err != nil {
		panic(pkg + ": invalid Config: " + err.Error())
	}
	return fp
}

// RawFallback returns the Fingerprinter of Spec.Raw for opts: nil unless
// opts.Mode is fingerprint.ModeAuto, where the mode is guessed from the
// payload. A payload that ModeJSON was asked for must be JSON.
func RawFallback(opts fingerprint.Options) *fingerprint.Fingerprinter {
	if opts.Mode != fingerprint.ModeAuto {
		return nil
	}
	opts.Mode = fingerprint.ModeRaw
	raw, err := fingerprint.New(opts)
	if err != nil {
		return nil // opts were checked by the caller's own fingerprint.New
	}
	return raw
}

// print returns the fingerprint of fin under version v, falling back to
// s.Raw for a payload that is not JSON.
func (s *Spec[In]) print(v string, fin fingerprint.Input) (string, error) {
	sum, err := s.Print.ComputeVersion(v, fin)
	if err != nil && s.Raw != nil && (errors.Is(err, fingerprint.ErrInvalidJSON) || errors.Is(err, fingerprint.ErrTooDeep)) {
		return s.Raw.ComputeVersion(v, fin)
	}
	return sum, err
}

// Request returns the guard request for in. A nil Key is
// idemkey.ErrMissing; an error of Tenant is joined with
// idemkit.ErrTenantMissing and reported to g's observer as a refusal.
func (s *Spec[In]) Request(ctx context.Context, g *idemkit.Guard, in In) (idemkit.Request, error) {
	if s.Key == nil {
		return idemkit.Request{}, idemkey.ErrMissing
	}
	raw, err := s.Key(in)
	if err != nil {
		return idemkit.Request{}, fmt.Errorf("%s: key: %w", s.Prefix, err)
	}
	key, err := idemkey.Check(raw, s.MaxKeyLen)
	if err != nil {
		return idemkit.Request{}, err
	}
	var tenant string
	if s.Tenant != nil {
		if tenant, err = s.Tenant(ctx, in); err != nil {
			// Keep the cause: the caller and the observer see both.
			err = errors.Join(idemkit.ErrTenantMissing, fmt.Errorf("%s: tenant: %w", s.Prefix, err))
			g.Refuse(ctx, idemkit.Scope{Operation: s.Operation, Key: key}, err)
			return idemkit.Request{}, err
		}
	}
	var payload []byte
	if s.Payload != nil {
		payload, err = s.Payload(in)
	} else {
		payload, err = json.Marshal(in)
	}
	if err != nil {
		return idemkit.Request{}, fmt.Errorf("%s: payload: %w", s.Prefix, err)
	}
	fin := fingerprint.Input{ContentType: s.ContentType, Body: payload}
	sum, err := s.print(fingerprint.CurrentVersion, fin)
	if err != nil {
		return idemkit.Request{}, fmt.Errorf("%s: fingerprint: %w", s.Prefix, err)
	}
	return idemkit.Request{
		Scope:         idemkit.Scope{Tenant: tenant, Operation: s.Operation, Key: key},
		Fingerprint:   sum,
		FingerprintAs: func(v string) (string, error) { return s.print(v, fin) },
		IgnoreKeyTime: !s.CheckKeyAge,
	}, nil
}
