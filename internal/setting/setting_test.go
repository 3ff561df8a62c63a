package setting

import (
	"testing"
	"time"
)

func TestOr(t *testing.T) {
	for _, tc := range []struct{ v, def, want int }{
		{0, 5, 5},
		{-1, 5, 5},
		{1, 5, 1},
		{7, 5, 7},
	} {
		if got := Or(tc.v, tc.def); got != tc.want {
			t.Errorf("Or(%d, %d) = %d, want %d", tc.v, tc.def, got, tc.want)
		}
	}
	if got := Or(-time.Second, time.Minute); got != time.Minute {
		t.Errorf("Or(-1s, 1m) = %v, want 1m", got)
	}
	if got := Or(time.Second, time.Minute); got != time.Second {
		t.Errorf("Or(1s, 1m) = %v, want 1s", got)
	}
}
