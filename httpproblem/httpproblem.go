// Package httpproblem holds the problem responses of idemkit's HTTP
// adapters: the one list of their problem types, each with its status, the
// problem [Details] and the [Response] that carries them. The adapters
// (lambda/apigw, lambda/alb, httpmw) answer with them, and the client
// (idemclient) reads them, so the two cannot disagree. It imports nothing
// of the server, so that a client importing it links nothing of the
// server.
//
// Refusals are RFC 9457 problem responses (application/problem+json, with
// Cache-Control: no-store and X-Content-Type-Options: nosniff) whose type
// is a stable URI under https://idemkit.dev/problems/. A detail repeats at
// most 200 bytes of anything taken from the request. The table lists the
// problem types of every adapter. When several apply, the one returned
// follows the order of precedence of
// [github.com/idemkit/idemkit.Guard.Do].
//
//	key-missing                      400  the route requires a key and none was sent
//	key-invalid                      400  empty, too long, not printable ASCII, two values
//	key-expired                      400  a UUIDv7 key older than the record retention
//	body-invalid                     400  the body cannot be fingerprinted (bad JSON, duplicate keys, too deep)
//	body-too-large                   413  httpmw only: the body is over MaxBodyBytes or an outer http.MaxBytesReader's limit
//	path-too-long                    414  the path is over httpconfig.MaxPathLen (2,048) bytes; nothing ran
//	query-too-large                  414  the query has more than httpconfig.MaxQueryParams (10,000) parameters, as net/url refuses; nothing ran
//	fingerprint-mismatch             422  the key was used with a different request (body, query, resource)
//	operation-mismatch               422  account-wide keys: the key was used for another operation
//	in-flight                        409  a request with the key is running; Retry-After says when to retry
//	outcome-pending                  409  an earlier run outlived its lease a moment ago and may still complete; Retry-After says when to retry
//	indeterminate-operator-required  409  an earlier run ended without a recorded outcome; an operator must resolve it
//	replay-window-passed             410  completed; the response is no longer replayed (originalStatus, location, completedAt)
//	response-not-stored              410  completed; the response was too large to store (originalStatus, location, completedAt)
//	store-unavailable                503  the store did not confirm the key; nothing ran; Retry-After
//	outcome-unknown                  503  the handler returned idemkit.ErrOutcomeUnknown; the key is kept, never run again
//	record-corrupt                   500  the stored record is unreadable; nothing ran or replayed
//	tenant-missing                   500  no authenticated caller: the Tenant setting is misconfigured; nothing ran
//	guard-failure                    500  an unexpected guard error, a record the store refuses, or an event without an HTTP method; nothing ran
//	handler-failed                   500  httpmw only: the handler called httpmw.Fail; the key was freed
package httpproblem

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Base is the prefix of every problem type URI.
const Base = "https://idemkit.dev/problems/"

// ContentType is the media type of a problem body (RFC 9457).
const ContentType = "application/problem+json"

// The problem types, each a stable URI under Base; the package
// documentation lists them with their statuses.
const (
	TypeKeyMissing          = Base + "key-missing"
	TypeKeyInvalid          = Base + "key-invalid"
	TypeKeyExpired          = Base + "key-expired"
	TypeBodyInvalid         = Base + "body-invalid"
	TypeBodyTooLarge        = Base + "body-too-large"
	TypePathTooLong         = Base + "path-too-long"
	TypeQueryTooLarge       = Base + "query-too-large"
	TypeFingerprintMismatch = Base + "fingerprint-mismatch"
	TypeOperationMismatch   = Base + "operation-mismatch"
	TypeInFlight            = Base + "in-flight"
	TypeIndeterminate       = Base + "indeterminate-operator-required"
	TypeOutcomePending      = Base + "outcome-pending"
	TypeReplayWindowPassed  = Base + "replay-window-passed"
	TypeResponseNotStored   = Base + "response-not-stored"
	TypeStoreUnavailable    = Base + "store-unavailable"
	TypeOutcomeUnknown      = Base + "outcome-unknown"
	TypeCorruptRecord       = Base + "record-corrupt"
	TypeTenantMissing       = Base + "tenant-missing"
	TypeGuardFailure        = Base + "guard-failure"
	TypeHandlerFailed       = Base + "handler-failed"
)

// TypeStatus is a problem type and the status it is answered with.
type TypeStatus struct {
	Type   string
	Status int
}

// Types returns every problem type with its status, in the order of the
// package documentation's table.
func Types() []TypeStatus {
	return []TypeStatus{
		{TypeKeyMissing, 400},
		{TypeKeyInvalid, 400},
		{TypeKeyExpired, 400},
		{TypeBodyInvalid, 400},
		{TypeBodyTooLarge, 413},
		{TypePathTooLong, 414},
		{TypeQueryTooLarge, 414},
		{TypeFingerprintMismatch, 422},
		{TypeOperationMismatch, 422},
		{TypeInFlight, 409},
		{TypeOutcomePending, 409},
		{TypeIndeterminate, 409},
		{TypeReplayWindowPassed, 410},
		{TypeResponseNotStored, 410},
		{TypeStoreUnavailable, 503},
		{TypeOutcomeUnknown, 503},
		{TypeCorruptRecord, 500},
		{TypeTenantMissing, 500},
		{TypeGuardFailure, 500},
		{TypeHandlerFailed, 500},
	}
}

// Details is an RFC 9457 problem detail: why idemkit answered a request
// itself instead of running or replaying it. The fields after Detail are
// extension members; zero ones are left out of the JSON.
type Details struct {
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
// httpconfig.Settings.ProblemResponse returns it.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Response returns the default response for p: an RFC 9457 problem,
// application/problem+json, with Cache-Control: no-store,
// X-Content-Type-Options: nosniff (a browser never reads the body as
// anything else) and, when p.RetryAfter is set, Retry-After.
func (p Details) Response() Response {
	h := http.Header{
		"Content-Type":           {ContentType},
		"Cache-Control":          {"no-store"},
		"X-Content-Type-Options": {"nosniff"},
	}
	if p.RetryAfter > 0 {
		h["Retry-After"] = []string{strconv.Itoa(p.RetryAfter)}
	}
	b, err := json.Marshal(p)
	if err != nil {
		// Details hold only strings and ints.
		panic("httpproblem: marshal problem: " + err.Error())
	}
	return Response{Status: p.Status, Header: h, Body: b}
}
