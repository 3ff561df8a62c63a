package testkit

import (
	"strconv"
	"strings"
)

// Keys returns n distinct idempotency keys (k-0, k-1, ...), for a
// benchmark to make before its timer starts.
func Keys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "k-" + strconv.Itoa(i)
	}
	return keys
}

// OrderBody returns an order's JSON answer padded to size bytes (at
// least 23), the response body the benchmarks of every front send.
func OrderBody(size int) string {
	const bare = `{"id":"ord_1","pad":""}`
	return `{"id":"ord_1","pad":"` + strings.Repeat("x", size-len(bare)) + `"}`
}
