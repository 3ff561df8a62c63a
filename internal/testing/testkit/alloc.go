package testkit

import "runtime"

// Allocated returns the heap allocations and the bytes one call of f
// makes, counted from a fresh collection.
func Allocated(f func()) (allocs, bytes uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
}
