package bench

import (
	"testing"
	"time"
)

// TestPool: a variant's phases count together, every request over all
// their time, so that one fast or slow phase does not decide its rate.
func TestPool(t *testing.T) {
	ms := time.Millisecond
	fast := phaseRun{lat: []time.Duration{1 * ms, 2 * ms, 3 * ms}, wall: 100 * ms, cpu: 30 * ms}
	slow := phaseRun{lat: []time.Duration{4 * ms, 5 * ms, 6 * ms, 7 * ms, 8 * ms}, wall: 300 * ms, cpu: 50 * ms}
	l := pool(32, []phaseRun{fast, slow})
	if l.Clients != 32 || l.Requests != 8 {
		t.Fatalf("clients %d, requests %d; want 32 and 8", l.Clients, l.Requests)
	}
	if want := 8 / 0.4; l.PerSec != want {
		t.Errorf("%.1f requests per second, want %.1f (8 requests over 400 ms, not the faster phase's 30)", l.PerSec, want)
	}
	if l.CPU != 10*ms {
		t.Errorf("CPU per request %v, want 10ms (80 ms over 8 requests)", l.CPU)
	}
	if l.P50 != 4*ms || l.P99 != 8*ms {
		t.Errorf("p50 %v, p99 %v; want 4ms and 8ms over all 8 requests", l.P50, l.P99)
	}
	if empty := pool(8, nil); empty.Requests != 0 || empty.PerSec != 0 {
		t.Errorf("no phase: %+v, want no requests", empty)
	}
}
