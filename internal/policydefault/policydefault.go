// Package policydefault holds the values the guard gives the zero fields
// of an idemkit.Policy, for the packages that must agree with them (a
// store's failover fence, the simulations, tests). idemkit.Policy's field
// docs state each one.
package policydefault

import "time"

// The defaults of the zero fields of an idemkit.Policy.
const (
	// Lease is the lease of a request without a context deadline.
	Lease = 30 * time.Second
	// LeaseMargin is added to the context deadline to make the lease.
	LeaseMargin = 2 * time.Second
	// ReplayWindow is how long a response is replayed.
	ReplayWindow = 24 * time.Hour
	// RecordRetention is how long a record is kept.
	RecordRetention = 7 * 24 * time.Hour
	// KeyClockSkew is the clock skew tolerated for a UUIDv7 key.
	KeyClockSkew = 5 * time.Minute
	// MaxRenewals bounds the lease renewals of one execution.
	MaxRenewals = 120
)
