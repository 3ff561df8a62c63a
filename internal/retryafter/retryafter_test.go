package retryafter

import (
	"testing"
	"time"
)

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{
		{-time.Second, 1},
		{0, 1},
		{time.Nanosecond, 1},
		{time.Second, 1},
		{time.Second + time.Nanosecond, 2},
		{2500 * time.Millisecond, 3},
		{time.Minute, 60},
	} {
		if got := Seconds(tc.d); got != tc.want {
			t.Errorf("Seconds(%v) = %d, want %d", tc.d, got, tc.want)
		}
		if got := Duration(tc.d); got != time.Duration(tc.want)*time.Second {
			t.Errorf("Duration(%v) = %v, want %ds", tc.d, got, tc.want)
		}
	}
}
