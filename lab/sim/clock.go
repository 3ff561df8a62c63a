package sim

import (
	"container/heap"
	"sync"
	"time"

	idemclock "github.com/idemkit/idemkit/clock"
)

// timeline is the world's one true time and the timers set on it. Every
// instance reads it through a clock of its own, offset by its skew. A
// timer fires only when the world advances time past it, one at a time,
// in the order of their times (then of their setting): nothing happens
// between steps.
type timeline struct {
	mu     sync.Mutex
	now    time.Time // guarded by mu
	seq    uint64    // guarded by mu
	timers timerHeap // guarded by mu
}

// Now returns the true time.
func (tl *timeline) Now() time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.now
}

// next removes and returns the earliest timer due at or before t, and
// moves the time to it; nil when none is due.
func (tl *timeline) next(t time.Time) *timer {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if len(tl.timers) == 0 || tl.timers[0].at.After(t) {
		return nil
	}
	tm := heap.Pop(&tl.timers).(*timer)
	tm.fired = true
	if tm.at.After(tl.now) {
		tl.now = tm.at
	}
	return tm
}

// set moves the time to t (never back).
func (tl *timeline) set(t time.Time) {
	tl.mu.Lock()
	if t.After(tl.now) {
		tl.now = t
	}
	tl.mu.Unlock()
}

// clock is one instance's idemclock.Clock: the true time plus its skew.
type clock struct {
	tl   *timeline
	skew time.Duration
}

func (c *clock) Now() time.Time { return c.tl.Now().Add(c.skew) }

func (c *clock) AfterFunc(d time.Duration, f func()) idemclock.Timer {
	tl := c.tl
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.seq++
	t := &timer{tl: tl, at: tl.now.Add(max(d, 0)), seq: tl.seq, f: f, idx: -1}
	heap.Push(&tl.timers, t)
	return t
}

// timer is a timer on the timeline.
type timer struct {
	tl    *timeline
	at    time.Time // guarded by tl.mu
	seq   uint64    // guarded by tl.mu
	f     func()
	idx   int  // index in the heap, -1 when not in it; guarded by tl.mu
	fired bool // guarded by tl.mu
}

func (t *timer) Stop() bool {
	t.tl.mu.Lock()
	defer t.tl.mu.Unlock()
	if t.idx < 0 {
		return false
	}
	heap.Remove(&t.tl.timers, t.idx)
	return true
}

func (t *timer) Reset(d time.Duration) bool {
	t.tl.mu.Lock()
	defer t.tl.mu.Unlock()
	active := t.idx >= 0
	if active {
		heap.Remove(&t.tl.timers, t.idx)
	}
	t.tl.seq++
	t.at, t.seq, t.fired = t.tl.now.Add(max(d, 0)), t.tl.seq, false
	heap.Push(&t.tl.timers, t)
	return active
}

type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i]; h[i].idx = i; h[j].idx = j }
func (h *timerHeap) Push(x any)   { t := x.(*timer); t.idx = len(*h); *h = append(*h, t) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.idx = -1
	return t
}
