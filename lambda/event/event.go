// Package event makes non-HTTP Lambda handlers (an SQS message, an
// EventBridge detail, a Step Functions task) run at most once per key.
// [Wrap] stores the JSON encoding of the first run's result and returns it
// to every later call with the same key, without running again.
//
// A call whose key is held by a running call fails at once with an error
// that is idemkit.ErrInFlight under errors.Is. An SQS message then returns
// to the queue and is retried later. The other refusals are the errors of
// idemkit.Guard.Do. An error returned by the function is returned as
// Guard.Do returns it, after the claim was released, so a retry runs
// again. An error wrapping idemkit.ErrOutcomeUnknown keeps the key
// instead.
//
// A key is a business identifier taken from the input, so its age is not
// read: an order id minted days before its message runs on its first
// delivery (Config.CheckKeyAge turns the UUIDv7 key-age check back on). A
// payload that starts like JSON but is not JSON is compared byte for byte,
// never refused (under fingerprint.ModeAuto, the default). [AdjustReplay]
// changes the result a replay returns.
package event

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/internal/eventreq"
	"github.com/idemkit/idemkit/tenant"
)

// Config configures Wrap for inputs of type In. Tenant has no default:
// Wrap panics without one, as every idemkit adapter does. A Config without
// a Key refuses every call (idemkey.ErrMissing).
type Config[In any] struct {
	// Key returns the idempotency key of an input: a business identifier
	// that stays the same on redelivery (an order id, a transfer id, an
	// SQS message id). An empty key or one longer than MaxKeyLen is
	// refused with an error that is idemkey.ErrInvalid under errors.Is.
	Key func(In) (string, error)
	// MaxKeyLen is the longest key accepted, in bytes. Zero: 255.
	MaxKeyLen int
	// Tenant returns the tenant of an input (the account the message
	// belongs to), as tenant.Func says. Use tenant.Single for
	// a function that serves one key space. Required: Wrap panics without
	// it. An empty result or an error refuses the call with an error that
	// is idemkit.ErrTenantMissing under errors.Is. For an error, it is also
	// that error.
	Tenant tenant.Func[In]
	// Operation names what the function does; two functions sharing a
	// store need different names. Empty: the Go type of In ("events.SQSMessage").
	Operation string
	// Payload returns the bytes that must be equal for a redelivery to get
	// the stored result, fingerprinted as JSON by default. Nil: the JSON
	// encoding of the whole input. Set it for inputs that carry delivery
	// metadata (an SQS message's receive count): return the body only.
	// Under the default Mode (fingerprint.ModeAuto) a payload that is not
	// JSON (a line of text, "[INFO] started", that only starts like JSON,
	// or one nested too deep) is compared byte for byte; under
	// fingerprint.ModeJSON it is refused.
	Payload func(In) ([]byte, error)
	// Fingerprint selects what of the payload is compared (Include,
	// Exclude, Mode). Zero: all of it.
	Fingerprint fingerprint.Options
	// CheckKeyAge refuses a UUIDv7 key older than the record retention
	// with idemkit.ErrKeyExpired, as the HTTP adapters do (see
	// idemkit.Policy.KeyClockSkew). Set it only when the key is an
	// idempotency key its sender minted for its first attempt. False: a
	// key's age is never read, since the age of a business id (an order id
	// minted 8 days ago) says nothing about when its message was first
	// sent.
	CheckKeyAge bool
}

// Option is an option of [Wrap] that Config cannot hold, since Config
// does not know the result type.
type Option[In, Out any] struct {
	adjust func(ctx context.Context, in In, stored Out) Out
}

// AdjustReplay returns the Option that passes every replayed result
// through adjust before it is returned, as httpconfig.Settings.AdjustReplay
// does for the header of a replayed HTTP response. adjust gets the input
// of this call and the stored result, decoded, and returns the result to
// return: mark it replayed, or set what belongs to this call rather than
// the first one (a trace id). It never runs for the call that ran the
// function, and what it returns is not stored: each later replay starts
// again from the stored result.
func AdjustReplay[In, Out any](adjust func(ctx context.Context, in In, stored Out) Out) Option[In, Out] {
	return Option[In, Out]{adjust: adjust}
}

// Wrap returns fn guarded by g. The function it returns has fn's signature,
// runs fn at most once per (tenant, operation, key), and returns the stored
// result to later calls, through the [AdjustReplay] hooks of opts in
// order. Out must encode to and decode from JSON. Wrap panics when g is
// nil, cfg has no Tenant, or cfg.Fingerprint cannot be used. It panics
// when it is called, not at the first call of fn, so a bad setup stops
// the function at init.
func Wrap[In, Out any](g *idemkit.Guard, cfg Config[In], fn func(context.Context, In) (Out, error), opts ...Option[In, Out]) func(context.Context, In) (Out, error) {
	if g == nil {
		panic("event: nil *idemkit.Guard")
	}
	fp := eventreq.MustPrint("event", cfg.Tenant != nil, "name whom an input belongs to (the account of the message), "+
		"event.InvocationTenant, or tenant.Single for a function that serves one key space", cfg.Fingerprint)
	op := cfg.Operation
	if op == "" {
		op = reflect.TypeFor[In]().String()
	}
	var adjust []func(context.Context, In, Out) Out
	for _, o := range opts {
		if o.adjust != nil {
			adjust = append(adjust, o.adjust)
		}
	}
	spec := &eventreq.Spec[In]{Key: cfg.Key, MaxKeyLen: cfg.MaxKeyLen, Tenant: cfg.Tenant,
		Operation: op, Payload: cfg.Payload, Print: fp, Raw: eventreq.RawFallback(cfg.Fingerprint),
		CheckKeyAge: cfg.CheckKeyAge, ContentType: "application/json", Prefix: "event"}
	return func(ctx context.Context, in In) (Out, error) {
		var zero Out
		req, err := spec.Request(ctx, g, in)
		if err != nil {
			return zero, err
		}
		key := req.Scope.Key
		var fresh Out
		snap, replayed, err := g.Do(ctx, req, func(ctx context.Context) (*idemkit.Snapshot, error) {
			out, err := fn(ctx, in)
			if err != nil {
				return nil, err
			}
			body, err := json.Marshal(out)
			if err != nil {
				return nil, fmt.Errorf("event: encode result: %w", err)
			}
			fresh = out
			return &idemkit.Snapshot{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}, nil
		})
		switch {
		case err != nil:
			return zero, err
		case !replayed:
			return fresh, nil
		}
		var out Out
		if snap.Status != http.StatusOK || json.Unmarshal(snap.Body, &out) != nil {
			return zero, fmt.Errorf("%w: stored result of %q is not a %T", idemkit.ErrCorruptRecord, key, out)
		}
		for _, f := range adjust {
			out = f(ctx, in, out)
		}
		return out, nil
	}
}
