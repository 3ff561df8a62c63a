package adapter

import "github.com/idemkit/idemkit/httpguard"

// Problem is the problem an adapter answers with.
type Problem = httpguard.Problem

// ProblemBase and the problem types below are httpguard's, under the names
// internal/sim reads; new code uses httpguard's own.
const (
	ProblemBase             = httpguard.ProblemBase
	TypeKeyExpired          = httpguard.TypeKeyExpired
	TypeFingerprintMismatch = httpguard.TypeFingerprintMismatch
	TypeOperationMismatch   = httpguard.TypeOperationMismatch
	TypeInFlight            = httpguard.TypeInFlight
	TypeIndeterminate       = httpguard.TypeIndeterminate
	TypeReplayWindowPassed  = httpguard.TypeReplayWindowPassed
	TypeStoreUnavailable    = httpguard.TypeStoreUnavailable
	TypeOutcomeUnknown      = httpguard.TypeOutcomeUnknown
	TypeTenantMissing       = httpguard.TypeTenantMissing
)
