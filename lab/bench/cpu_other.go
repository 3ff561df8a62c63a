//go:build !unix

package bench

import "time"

// ProcessCPU returns 0: this platform's CPU time is not read.
func ProcessCPU() time.Duration { return 0 }
