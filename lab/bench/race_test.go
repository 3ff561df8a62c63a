//go:build race

package bench

// raceEnabled: the race detector makes more values escape to the heap,
// so the allocation budgets get more room (TestAllocBudget).
const raceEnabled = true
