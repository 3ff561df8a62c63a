package httpguard

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/idemkit/idemkit/internal/problemtype"
)

// ProblemBase is the prefix of every problem type URI.
const ProblemBase = problemtype.Base

// ProblemContentType is the media type of a problem body (RFC 9457).
const ProblemContentType = problemtype.ContentType

// The problem types, each a stable URI under ProblemBase; the package
// documentation lists them with their statuses.
const (
	TypeKeyMissing          = problemtype.KeyMissing
	TypeKeyInvalid          = problemtype.KeyInvalid
	TypeKeyExpired          = problemtype.KeyExpired
	TypeBodyInvalid         = problemtype.BodyInvalid
	TypeBodyTooLarge        = problemtype.BodyTooLarge
	TypePathTooLong         = problemtype.PathTooLong
	TypeQueryTooLarge       = problemtype.QueryTooLarge
	TypeFingerprintMismatch = problemtype.FingerprintMismatch
	TypeOperationMismatch   = problemtype.OperationMismatch
	TypeInFlight            = problemtype.InFlight
	TypeIndeterminate       = problemtype.Indeterminate
	TypeOutcomePending      = problemtype.OutcomePending
	TypeReplayWindowPassed  = problemtype.ReplayWindowPassed
	TypeResponseNotStored   = problemtype.ResponseNotStored
	TypeStoreUnavailable    = problemtype.StoreUnavailable
	TypeOutcomeUnknown      = problemtype.OutcomeUnknown
	TypeCorruptRecord       = problemtype.CorruptRecord
	TypeTenantMissing       = problemtype.TenantMissing
	TypeGuardFailure        = problemtype.GuardFailure
	TypeHandlerFailed       = problemtype.HandlerFailed
)

// Problem is an RFC 9457 problem detail: why idemkit answered a request
// itself instead of running or replaying it. The fields after Detail are
// extension members; zero ones are left out of the JSON.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`

	// Reason says why a key was refused (key-invalid).
	Reason string `json:"reason,omitempty"`
	// RetryAfter is the delay, in whole seconds, after which a retry may
	// succeed (in-flight, store-unavailable, outcome-unknown); zero when
	// there is none. The default response also sends it as Retry-After.
	RetryAfter int `json:"retryAfter,omitempty"`
	// OriginalStatus, Location and CompletedAt name the first outcome of a
	// completed request whose response cannot be replayed (410).
	OriginalStatus int    `json:"originalStatus,omitempty"`
	Location       string `json:"location,omitempty"`
	CompletedAt    string `json:"completedAt,omitempty"`
}

// Response is the HTTP response an adapter sends for a problem, as
// Settings.ProblemResponse returns it.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Response returns the default response for p: an RFC 9457 problem,
// application/problem+json, with Cache-Control: no-store,
// X-Content-Type-Options: nosniff (a browser never reads the body as
// anything else) and, when p.RetryAfter is set, Retry-After.
func (p Problem) Response() Response {
	h := http.Header{
		"Content-Type":           {ProblemContentType},
		"Cache-Control":          {"no-store"},
		"X-Content-Type-Options": {"nosniff"},
	}
	if p.RetryAfter > 0 {
		h["Retry-After"] = []string{strconv.Itoa(p.RetryAfter)}
	}
	b, err := json.Marshal(p)
	if err != nil {
		// A Problem holds only strings and ints.
		panic("httpguard: marshal problem: " + err.Error())
	}
	return Response{Status: p.Status, Header: h, Body: b}
}
