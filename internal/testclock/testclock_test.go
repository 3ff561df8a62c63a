package testclock

import (
	"context"
	"testing"
	"time"
)

func TestNewStartsAtWallClock(t *testing.T) {
	c := New()
	if d := time.Since(c.Now()); d < 0 || d > 2*time.Second {
		t.Fatalf("New() is %s from the wall clock", d)
	}
	if c.Now().Nanosecond() != 0 {
		t.Fatalf("New() = %s, want whole seconds", c.Now())
	}
}

func TestDeadlineFollowsClock(t *testing.T) {
	c := New()
	ctx := c.Deadline(t, context.Background(), 10*time.Second)
	dl, ok := ctx.Deadline()
	if !ok || !dl.Equal(c.Now().Add(10*time.Second)) {
		t.Fatalf("deadline = %v %v, want clock + 10s", dl, ok)
	}
	if ctx.Err() != nil {
		t.Fatalf("fresh deadline already done: %v", ctx.Err())
	}
}

// TestDeadlineRefusesPinnedClock: a clock pinned a week away from today (in
// either direction) must not yield a real deadline.
func TestDeadlineRefusesPinnedClock(t *testing.T) {
	for _, off := range []time.Duration{-7 * 24 * time.Hour, 7 * 24 * time.Hour} {
		ft := &fakeTB{TB: t}
		func() {
			defer func() { _ = recover() }()
			At(time.Now().Add(off)).Deadline(ft, context.Background(), time.Second)
		}()
		if !ft.failed {
			t.Fatalf("offset %s: Deadline did not refuse a pinned clock", off)
		}
	}
}

type fakeTB struct {
	testing.TB
	failed bool
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}
