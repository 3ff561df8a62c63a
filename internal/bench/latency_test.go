package bench

import (
	"testing"
	"time"
)

// TestSummarisePaired holds the paired estimate: each round's wrapped time
// less its own round's baselines, whose median the rounds' drift leaves
// alone while it moves the medians of the two series apart.
func TestSummarisePaired(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	tests := []struct {
		name                string
		wrapped, bare, same []time.Duration
		ratio, paired       float64
		added               time.Duration
	}{
		{"steady", ms(10, 20, 30), ms(0, 0, 0), ms(9, 19, 29), 20.0 / 19, 1 + 1.0/19, time.Millisecond},
		// The server slowed down in round 2 for the baseline only, and in
		// round 3 for both: the medians compare round 2's wrapped with
		// round 1's same requests.
		{"drift", ms(5, 30, 31), ms(0, 0, 0), ms(4, 6, 30), 30.0 / 6, 1 + 1.0/6, time.Millisecond},
		{"bare counted", ms(12, 22, 32), ms(1, 1, 1), ms(9, 19, 29), 22.0 / 20, 1 + 2.0/20, 2 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rg := &rig{obs: &usageObserver{}, raw: &raw{calls: 2}}
			var row Row
			rg.summarise(&row, samples{wrapped: tt.wrapped, bare: tt.bare, same: tt.same, min: tt.same})
			if row.Added != tt.added {
				t.Errorf("Added = %v, want %v", row.Added, tt.added)
			}
			if !near(row.Ratio, tt.ratio) || !near(row.Paired, tt.paired) {
				t.Errorf("Ratio, Paired = %.4f, %.4f, want %.4f, %.4f", row.Ratio, row.Paired, tt.ratio, tt.paired)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
