package idemclient

import (
	"math"
	"net/http"
	"testing"
	"time"
)

// TestRetryAfter: Retry-After is whole seconds or an HTTP date; anything
// else is no Retry-After.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"3", 3 * time.Second, true},
		{" 30 ", 30 * time.Second, true},
		{"0", 0, true},
		{now.Add(10 * time.Second).Format(http.TimeFormat), 10 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{"", 0, false},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"99999999999", time.Duration(math.MaxInt64), true},
		{"9223372036", 9223372036 * time.Second, true},
		{"4294967296", 4294967296 * time.Second, true},
		// Past what a Duration holds (292 years): the longest one.
		{"9223372037", time.Duration(math.MaxInt64), true},
		{"18446744073709551616", time.Duration(math.MaxInt64), true},
		{"+5", 0, false},
		{"0x10", 0, false},
	} {
		got, ok := retryAfter(tc.v, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%q) = %s %v, want %s %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}
