package testkit

import (
	"context"
	"fmt"
	"testing"
)

// Call runs the Lambda handler h on ev, failing t when h returns an
// error: the one way the tests of every front send an event.
func Call[E, R any](t testing.TB, h func(context.Context, E) (R, error), ev E) R {
	t.Helper()
	r, err := h(context.Background(), ev)
	if err != nil {
		t.Fatalf("handler error: %v", err)
	}
	return r
}

// PanicOf returns what f panics with, formatted, or "" when f returns.
func PanicOf(f func()) (msg string) {
	defer func() {
		if v := recover(); v != nil {
			msg = fmt.Sprint(v)
		}
	}()
	f()
	return ""
}
