package testclock

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/idemkit/clock"
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

func TestClockIsAnIdemkitClock(t *testing.T) {
	var _ clock.Clock = New()
	c := New()
	c.Set(c.Now().Add(time.Hour))
	if d := time.Until(c.Now()); d < 59*time.Minute || d > time.Hour+time.Second {
		t.Fatalf("after Set(now+1h) the clock is %s ahead of the wall clock", d)
	}
	fired := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(fired) })
	<-fired // a real timer fires in real time, though the clock stands still
}

func TestSkewedClocks(t *testing.T) {
	c := New()
	ahead := c.Ahead(10 * time.Second)
	if got := ahead.Now().Sub(c.Now()); got != 10*time.Second {
		t.Fatalf("Ahead(10s) reads %s past its base", got)
	}
	c.Advance(time.Minute)
	if got := ahead.Now().Sub(c.Now()); got != 10*time.Second {
		t.Fatalf("after Advance, Ahead(10s) reads %s past its base", got)
	}
	behind := Skewed(-time.Hour)
	if d := time.Since(behind.Now()); d < time.Hour || d > time.Hour+time.Second {
		t.Fatalf("Skewed(-1h) is %s behind the wall clock", d)
	}
}
