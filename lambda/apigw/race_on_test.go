//go:build race

package apigw_test

// largeBody is the body size of TestV2LargeBodyMemory: smaller under the
// race detector, which makes it slow.
const largeBody = 1 << 20
