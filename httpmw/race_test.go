//go:build race

package httpmw

// raceEnabled: under the race detector bytes.Buffer's growth allocates
// the new buffer twice (TestReadBodyAllocations).
const raceEnabled = true
