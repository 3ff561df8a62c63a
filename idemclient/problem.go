package idemclient

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/idemkit/idemkit/internal/problemtype"
)

// ProblemBase is the prefix of the problem types an idemkit server
// answers with.
const ProblemBase = problemtype.Base

// The problem types of an idemkit server (README.md, "What clients get").
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
	TypeResponseNotStored   = problemtype.ResponseNotStored
	TypeReplayWindowPassed  = problemtype.ReplayWindowPassed
	TypeStoreUnavailable    = problemtype.StoreUnavailable
	TypeOutcomeUnknown      = problemtype.OutcomeUnknown
	TypeCorruptRecord       = problemtype.CorruptRecord
	TypeTenantMissing       = problemtype.TenantMissing
	TypeGuardFailure        = problemtype.GuardFailure
	TypeHandlerFailed       = problemtype.HandlerFailed
)

// Problem is an RFC 9457 problem detail, with the extension members an
// idemkit server sets.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`

	// Reason says why a key was refused (key-invalid).
	Reason string `json:"reason,omitempty"`
	// RetryAfter is the whole seconds of the Retry-After header.
	RetryAfter int `json:"retryAfter,omitempty"`
	// OriginalStatus, Location and CompletedAt name the first outcome of a
	// completed request whose response is not replayed (410).
	OriginalStatus int    `json:"originalStatus,omitempty"`
	Location       string `json:"location,omitempty"`
	CompletedAt    string `json:"completedAt,omitempty"`
}

// ProblemContentType is the media type of a problem body.
const ProblemContentType = problemtype.ContentType

// readProblem returns the problem body of resp, nil when it has none.
func readProblem(resp *http.Response, body []byte) *Problem {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != ProblemContentType {
		return nil
	}
	var p Problem
	if json.Unmarshal(body, &p) != nil || p.Type == "" {
		return nil
	}
	return &p
}

// verdict is what the client does with a problem type of the server's.
type verdict struct {
	retry bool
	// kind is the sentinel a ProblemError of the type matches.
	kind error
	// happened and check are the two halves of the error's text.
	happened, check string
}

// verdicts holds every problem type of problemtype.All.
var verdicts = map[string]verdict{
	TypeInFlight:         {retry: true},
	TypeStoreUnavailable: {retry: true},
	TypeHandlerFailed:    {retry: true},
	TypeOutcomePending:   {retry: true},

	TypeKeyMissing: {kind: ErrRefused,
		happened: "the server requires a key on this route and read none; nothing ran",
		check:    "that Config.Header names the header the server reads, and Config.Methods the methods it guards"},
	TypeKeyInvalid: {kind: ErrRefused,
		happened: "the server refused the key; nothing ran",
		check:    "the key the caller set (WithKey or the header): the server's reason is in Problem.Reason"},
	TypeKeyExpired: {kind: ErrRetentionPassed,
		happened: "the key is older than the server's record retention, which may have forgotten its first request; nothing ran now",
		check:    "whether the first request took effect (fetch the resource); send it again under a new key only if it did not, and set Config.Retention to the server's"},
	TypeBodyInvalid: {kind: ErrRefused,
		happened: "the server could not fingerprint the body (invalid JSON or duplicate members); nothing ran",
		check:    "the code that encodes the body"},
	TypeBodyTooLarge: {kind: ErrRefused,
		happened: "the body is larger than the server takes; nothing ran",
		check:    "the body's size against the server's limit"},
	TypePathTooLong: {kind: ErrRefused,
		happened: "the path is longer than the server takes (2,048 bytes); nothing ran",
		check:    "the code that builds the path"},
	TypeQueryTooLarge: {kind: ErrRefused,
		happened: "the query holds more parameters than the server takes (10,000); nothing ran",
		check:    "the code that builds the query string"},
	TypeFingerprintMismatch: {kind: ErrKeyReused,
		happened: "the key was first used with a different request (body, query string or resource); this one did not run, the first one's outcome stands",
		check:    "that the body is built the same on every retry (no timestamps or random values) and that a new request gets a new key"},
	TypeOperationMismatch: {kind: ErrKeyReused,
		happened: "the key was first used for another operation; this one did not run",
		check:    "that every request gets its own key"},
	TypeIndeterminate: {kind: ErrOutcomeUnknown,
		happened: "an earlier attempt stopped before its outcome was recorded, so it may or may not have taken effect; the server will not run it again",
		check:    "whether it took effect, with the server's operator, who resolves the key (idemkit inspect, idemkit resolve); a retry then gets that outcome"},
	TypeOutcomeUnknown: {kind: ErrOutcomeUnknown,
		happened: "the handler could not tell whether the request took effect; the server kept the key so that it never runs twice",
		check:    "whether it took effect, with the server's operator, who resolves the key (idemkit resolve); a retry then gets that outcome"},
	TypeReplayWindowPassed: {kind: ErrCompleted,
		happened: "the request completed, and its response is no longer replayed",
		check:    "the result itself (Problem.Location, Problem.OriginalStatus) instead of retrying"},
	TypeResponseNotStored: {kind: ErrCompleted,
		happened: "the request completed, and its response was too large to store",
		check:    "the result itself (Problem.Location, Problem.OriginalStatus) instead of retrying"},
	TypeTenantMissing: {kind: ErrServerFailure,
		happened: "the server found no authenticated caller for the request; nothing ran",
		check:    "the server's authentication and its Tenant setting"},
	TypeCorruptRecord: {kind: ErrServerFailure,
		happened: "the server cannot read its record of this key; nothing ran or was replayed",
		check:    "the record of this key with the server's operator (idemkit inspect)"},
	TypeGuardFailure: {kind: ErrServerFailure,
		happened: "the server's idempotency guard failed before running the request; nothing ran",
		check:    "the server's logs and configuration"},
}

// ProblemError is an answer of the server's that the client does not
// retry: its problem, the key and the attempts made. errors.Is matches it
// with the sentinel of its kind: ErrKeyReused, ErrOutcomeUnknown,
// ErrCompleted, ErrRefused, ErrRetentionPassed (key-expired) or
// ErrServerFailure.
type ProblemError struct {
	Key      string
	Attempts int
	Problem  Problem
}

func (e *ProblemError) Error() string {
	v := verdicts[e.Problem.Type]
	msg := fmt.Sprintf("idemclient: key %s: %d %s: %s", e.Key, e.Problem.Status,
		strings.TrimPrefix(e.Problem.Type, ProblemBase), v.happened)
	switch {
	case e.Problem.Type == TypeKeyInvalid && e.Problem.Reason != "":
		msg += " (" + e.Problem.Reason + ")"
	case v.kind == ErrCompleted:
		msg += fmt.Sprintf(" (status %d", e.Problem.OriginalStatus)
		if e.Problem.Location != "" {
			msg += ", location " + e.Problem.Location
		}
		if e.Problem.CompletedAt != "" {
			msg += ", completed " + e.Problem.CompletedAt
		}
		msg += ")"
	}
	return msg + ". Check " + v.check + "."
}

// Is reports whether target is the sentinel of e's kind.
func (e *ProblemError) Is(target error) bool {
	v, ok := verdicts[e.Problem.Type]
	return ok && v.kind != nil && target == v.kind
}
