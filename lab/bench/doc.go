// Package bench measures what idemkit costs a Lambda handler: DynamoDB
// round trips and capacity units per request, latency overhead against
// raw SDK calls, CPU and allocations, cold start and binary size. Its
// command, cmd/idembench, is what `make bench` runs. RESULTS.md, beside
// it, records a run and explains the figures. The bodies and the request
// it sends are internal/testing/testpayload's.
package bench
