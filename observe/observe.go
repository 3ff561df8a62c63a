// Package observe reports every idemkit outcome. A Guard passes each one,
// an [Event], to the [Observer] of its Config. [Logger] writes one
// structured log/slog line per guarded request. [EMF] prints CloudWatch
// Embedded Metric Format lines to stdout, which Lambda turns into metrics
// without an SDK call. Combine them with [Multi]:
//
//	idemkit.Config{Store: store, Observer: observe.Multi(
//		observe.Logger{},
//		&observe.EMF{Dimensions: map[string]string{"Service": "orders"}},
//	)}
//
// Lines are bounded whatever the request. Every text field (tenant,
// operation, key, error) is cut to [MaxFieldBytes]. The Idempotency-Key is
// written hashed by default ([Hashed]). With the tenant and the operation,
// the key makes the whole scope. From the scope, anyone who reads the logs
// could compute a handler's [github.com/idemkit/idemkit.ExecutionID] when
// no ExecutionSecret is set, and send it downstream as the handler would. The hash still
// finds every line of one key, since it is [Hash] of the key.
package observe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"

	"github.com/idemkit/idemkit/internal/clip"
)

// MaxFieldBytes bounds every text field an observer writes. A longer one
// is cut on a UTF-8 boundary and ends in "...", MaxFieldBytes bytes in
// all. It is above every scope the adapters accept (a path of
// httpconfig.MaxPathLen bytes, a tenant of 1024 bytes). So only
// refused requests and long errors are cut, and a line stays far below
// the 256 KB CloudWatch Logs keeps of an event.
const MaxFieldBytes = clip.MaxLogField

// Redaction says how an observer writes a tenant or a key. The zero value
// is the field's default, which each observer documents.
type Redaction uint8

const (
	// InClear writes the value as it is (bounded to MaxFieldBytes).
	InClear Redaction = iota + 1
	// Hashed writes [Hash] of the value. Lines of one value still share
	// it. A key, random and unguessable, cannot be read back from it. A
	// tenant can, by hashing the tenants one knows.
	Hashed
	// Omitted leaves the field out.
	Omitted
)

// Hash returns the form in which [Hashed] writes s. That is "sha256:" and
// the first 32 hex digits of the SHA-256 of s, the digits that
// `printf %s "$KEY" | sha256sum` prints first. Hash returns "" for "".
func Hash(s string) string {
	if s == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// field returns v as r writes it, and false when r omits it; def is the
// field's default.
func (r Redaction) field(v string, def Redaction) (string, bool) {
	if r == 0 {
		r = def
	}
	switch r {
	case Hashed:
		return Hash(v), true
	case Omitted:
		return "", false
	}
	return clip.String(v, MaxFieldBytes), true
}

// Logger is an Observer writing one slog line per outcome:
// executed and replayed at Info; conflicts, mismatches, refusals, released
// claims, takeovers and unreplayable outcomes at Warn; store errors,
// failed completions and indeterminate records at Error. The zero value
// writes to slog.Default(), the tenant in clear and the key hashed.
type Logger struct {
	Logger *slog.Logger
	// Tenant and Key say how the scope's tenant and Idempotency-Key are
	// written. Zero: the tenant InClear, the key Hashed.
	Tenant, Key Redaction
}

// Observe implements Observer.
func (l Logger) Observe(ctx context.Context, e Event) {
	lg := l.Logger
	if lg == nil {
		lg = slog.Default()
	}
	level := Level(e.Kind)
	if !lg.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs, slog.String("kind", string(e.Kind)))
	if v, ok := l.Tenant.field(e.Tenant, InClear); ok {
		attrs = append(attrs, slog.String("tenant", v))
	}
	attrs = append(attrs, slog.String("operation", clip.String(e.Operation, MaxFieldBytes)))
	if v, ok := l.Key.field(e.Key, Hashed); ok {
		attrs = append(attrs, slog.String("key", v))
	}
	attrs = append(attrs,
		slog.Float64("duration_ms", ms(e.Duration.Seconds())),
		slog.Int("store_calls", e.Usage.Calls),
		slog.Float64("read_units", e.Usage.ReadUnits),
		slog.Float64("write_units", e.Usage.WriteUnits),
	)
	if e.Status != 0 {
		attrs = append(attrs, slog.Int("status", e.Status))
	}
	if e.Handler > 0 {
		attrs = append(attrs, slog.Float64("handler_ms", ms(e.Handler.Seconds())))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", clip.String(e.Err.Error(), MaxFieldBytes)))
	}
	lg.LogAttrs(ctx, level, "idemkit "+string(e.Kind), attrs...)
}

// Level returns the log level of an outcome kind.
func Level(k EventKind) slog.Level {
	switch k {
	case EventExecuted, EventReplayed, EventCancelled:
		return slog.LevelInfo
	case EventStoreError, EventCompletionFailed, EventIndeterminate:
		return slog.LevelError
	}
	return slog.LevelWarn
}

func ms(seconds float64) float64 { return float64(int64(seconds*1e6)) / 1e3 }

// Multi returns an Observer passing every event to each of obs in order;
// nil entries are skipped.
func Multi(obs ...Observer) Observer {
	return ObserverFunc(func(ctx context.Context, e Event) {
		for _, o := range obs {
			if o != nil {
				o.Observe(ctx, e)
			}
		}
	})
}
