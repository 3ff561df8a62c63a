package adapter

import (
	"context"
	"errors"
	"log/slog"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/clip"
)

// logUnobserved logs a store failure or a misconfiguration through
// slog.Default when g has no Observer. A wrong table name or a missing
// IAM permission answers every request 503 (or 500 for an unreadable
// record), a tenant extractor that finds no tenant 500 tenant-missing, a
// wrapper that does not match the event source 500 guard-failure; without
// an observer nothing else would say why. A request whose caller cancelled
// it (a net/http client that hung up) before its claim was made is no
// store failure, unless its claim could not be freed either.
func logUnobserved(ctx context.Context, g *idemkit.Guard, scope idemkit.Scope, err error) {
	if g.Observed() {
		return
	}
	msg := "idemkit: store failure (set an Observer, e.g. from package observe, to log every outcome instead)"
	switch {
	case errors.Is(err, idemkit.ErrTenantMissing) || errors.Is(err, ErrNoMethod):
		msg = "idemkit: misconfiguration, request refused (set an Observer, e.g. from package observe, to log every outcome instead)"
	case !(errors.Is(err, idemkit.ErrStoreUnavailable) || errors.Is(err, idemkit.ErrCorruptRecord)):
		return
	case callerCancelled(ctx, err):
		return
	}
	slog.Default().LogAttrs(ctx, slog.LevelError, msg,
		slog.String("operation", clip.String(scope.Operation, clip.MaxLogField)),
		slog.String("error", clip.String(err.Error(), clip.MaxLogField)))
}

// callerCancelled reports whether err, returned by a call made with ctx,
// is the caller's own cancellation of ctx and leaves nothing held, which
// the guard reports as observe.EventCancelled: no store failure. A claim
// that could not be freed (idemkit.ErrClaimUnknown) is a store failure
// even then.
func callerCancelled(ctx context.Context, err error) bool {
	return errors.Is(ctx.Err(), context.Canceled) && errors.Is(err, context.Canceled) && !errors.Is(err, idemkit.ErrClaimUnknown)
}
