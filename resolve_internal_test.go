package idemkit

import (
	"testing"
	"time"

	"github.com/idemkit/idemkit/internal/policydefault"
)

// TestReplayAgain: an answer resolved late is replayed for the record's
// own replay window from now, and kept for its retention after that; a
// record without a window gets the default one; times already later than
// what now gives (an operator's clock behind the service's) are kept.
func TestReplayAgain(t *testing.T) {
	created := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	rec := &Record{CreatedAt: created, ReplayUntil: created.Add(time.Hour), ExpiresAt: created.Add(7 * 24 * time.Hour)}
	for _, tc := range []struct {
		name                 string
		rec                  *Record
		now                  time.Time
		replayUntil, expires time.Time
	}{
		{"two days later", rec, created.Add(48 * time.Hour), created.Add(49 * time.Hour), created.Add(49*time.Hour + 7*24*time.Hour - time.Hour)},
		{"clock behind the record's", rec, created.Add(-time.Minute), time.Time{}, time.Time{}},
		{"no window", &Record{CreatedAt: created, ReplayUntil: created, ExpiresAt: created},
			created.Add(time.Hour), created.Add(time.Hour + policydefault.ReplayWindow), created.Add(time.Hour + policydefault.ReplayWindow)},
	} {
		ru, ea := replayAgain(tc.rec, tc.now)
		if !ru.Equal(tc.replayUntil) || !ea.Equal(tc.expires) {
			t.Errorf("%s: replay until %v, expires %v; want %v, %v", tc.name, ru, ea, tc.replayUntil, tc.expires)
		}
	}
}
