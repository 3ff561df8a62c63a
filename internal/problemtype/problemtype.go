// Package problemtype is the one table of the problem types an idemkit
// server answers with: their URIs and statuses. The server's adapters
// (through httpguard) and the client (idemclient) both read it, so the
// two cannot disagree. It has no dependencies, so that a client importing
// it links nothing of the server.
package problemtype

// Base is the prefix of every problem type URI.
const Base = "https://idemkit.dev/problems/"

// ContentType is the media type of a problem body (RFC 9457).
const ContentType = "application/problem+json"

// The problem types.
const (
	KeyMissing          = Base + "key-missing"
	KeyInvalid          = Base + "key-invalid"
	KeyExpired          = Base + "key-expired"
	BodyInvalid         = Base + "body-invalid"
	BodyTooLarge        = Base + "body-too-large"
	PathTooLong         = Base + "path-too-long"
	QueryTooLarge       = Base + "query-too-large"
	FingerprintMismatch = Base + "fingerprint-mismatch"
	OperationMismatch   = Base + "operation-mismatch"
	InFlight            = Base + "in-flight"
	Indeterminate       = Base + "indeterminate-operator-required"
	OutcomePending      = Base + "outcome-pending"
	ReplayWindowPassed  = Base + "replay-window-passed"
	ResponseNotStored   = Base + "response-not-stored"
	StoreUnavailable    = Base + "store-unavailable"
	OutcomeUnknown      = Base + "outcome-unknown"
	CorruptRecord       = Base + "record-corrupt"
	TenantMissing       = Base + "tenant-missing"
	GuardFailure        = Base + "guard-failure"
	HandlerFailed       = Base + "handler-failed"
)

// Entry is one problem type: its URI, the name its constants carry in
// the packages that export it (Type + Name: TypeKeyMissing), and its status.
type Entry struct {
	Type   string
	Name   string
	Status int
}

// All lists every problem type, in the order of the documentation's table.
var All = []Entry{
	{KeyMissing, "KeyMissing", 400},
	{KeyInvalid, "KeyInvalid", 400},
	{KeyExpired, "KeyExpired", 400},
	{BodyInvalid, "BodyInvalid", 400},
	{BodyTooLarge, "BodyTooLarge", 413},
	{PathTooLong, "PathTooLong", 414},
	{QueryTooLarge, "QueryTooLarge", 414},
	{FingerprintMismatch, "FingerprintMismatch", 422},
	{OperationMismatch, "OperationMismatch", 422},
	{InFlight, "InFlight", 409},
	{OutcomePending, "OutcomePending", 409},
	{Indeterminate, "Indeterminate", 409},
	{ReplayWindowPassed, "ReplayWindowPassed", 410},
	{ResponseNotStored, "ResponseNotStored", 410},
	{StoreUnavailable, "StoreUnavailable", 503},
	{OutcomeUnknown, "OutcomeUnknown", 503},
	{CorruptRecord, "CorruptRecord", 500},
	{TenantMissing, "TenantMissing", 500},
	{GuardFailure, "GuardFailure", 500},
	{HandlerFailed, "HandlerFailed", 500},
}
