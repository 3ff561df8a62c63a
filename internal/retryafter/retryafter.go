// Package retryafter rounds a wait to what an HTTP Retry-After header can
// state: whole seconds, at least one.
package retryafter

import "time"

// Seconds rounds d up to whole seconds, at least one.
func Seconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return s
}

// Duration is Seconds(d) as a duration.
func Duration(d time.Duration) time.Duration {
	return time.Duration(Seconds(d)) * time.Second
}
