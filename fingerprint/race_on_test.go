//go:build race

package fingerprint

// memTestSize is the body size of the memory tests: smaller under the race
// detector, which makes them slow.
const memTestSize = 256 << 10
