//go:build !race

package fingerprint

// memTestSize is the body size of the memory tests.
const memTestSize = 2 << 20
