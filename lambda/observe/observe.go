// Package observe reports every idemkit outcome: [Logger] writes one
// structured log/slog line per guarded request, and [EMF] prints
// CloudWatch Embedded Metric Format lines to stdout, which Lambda turns
// into metrics without an SDK call. Combine them with [Multi]:
//
//	idemkit.Config{Store: store, Observer: observe.Multi(
//		observe.Logger{},
//		&observe.EMF{Dimensions: map[string]string{"Service": "orders"}},
//	)}
package observe

import (
	"context"
	"log/slog"

	"github.com/idemkit/idemkit"
)

// Logger is an idemkit.Observer writing one slog line per outcome:
// executed and replayed at Info; conflicts, mismatches, refusals, released
// claims, takeovers and unreplayable outcomes at Warn; store errors,
// failed completions and indeterminate records at Error. The zero value
// writes to slog.Default().
type Logger struct {
	Logger *slog.Logger
}

// Observe implements idemkit.Observer.
func (l Logger) Observe(ctx context.Context, e idemkit.Event) {
	lg := l.Logger
	if lg == nil {
		lg = slog.Default()
	}
	level := Level(e.Kind)
	if !lg.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("kind", string(e.Kind)),
		slog.String("tenant", e.Scope.Tenant),
		slog.String("operation", e.Scope.Operation),
		slog.String("key", e.Scope.Key),
		slog.Float64("duration_ms", ms(e.Duration.Seconds())),
		slog.Int("store_calls", e.Usage.Calls),
		slog.Float64("read_units", e.Usage.ReadUnits),
		slog.Float64("write_units", e.Usage.WriteUnits),
	}
	if e.Status != 0 {
		attrs = append(attrs, slog.Int("status", e.Status))
	}
	if e.Handler > 0 {
		attrs = append(attrs, slog.Float64("handler_ms", ms(e.Handler.Seconds())))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", e.Err.Error()))
	}
	lg.LogAttrs(ctx, level, "idemkit "+string(e.Kind), attrs...)
}

// Level returns the log level of an outcome kind.
func Level(k idemkit.EventKind) slog.Level {
	switch k {
	case idemkit.EventExecuted, idemkit.EventReplayed, idemkit.EventCancelled:
		return slog.LevelInfo
	case idemkit.EventStoreError, idemkit.EventCompletionFailed, idemkit.EventIndeterminate:
		return slog.LevelError
	}
	return slog.LevelWarn
}

func ms(seconds float64) float64 { return float64(int64(seconds*1e6)) / 1e3 }

// Multi returns an Observer passing every event to each of obs in order;
// nil entries are skipped.
func Multi(obs ...idemkit.Observer) idemkit.Observer {
	return idemkit.ObserverFunc(func(ctx context.Context, e idemkit.Event) {
		for _, o := range obs {
			if o != nil {
				o.Observe(ctx, e)
			}
		}
	})
}
