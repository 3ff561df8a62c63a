//go:build !race

package apigw_test

// largeBody is the body size of TestV2LargeBodyMemory: Lambda's payload limit.
const largeBody = 6 << 20
