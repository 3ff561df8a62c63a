package idemclient

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/idemkit/idemkit/httpproblem"
)

// readProblem returns the problem body of resp, nil when it has none.
func readProblem(resp *http.Response, body []byte) *httpproblem.Details {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != httpproblem.ContentType {
		return nil
	}
	var p httpproblem.Details
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

// verdicts holds every problem type of httpproblem.Types().
var verdicts = map[string]verdict{
	httpproblem.TypeInFlight:         {retry: true},
	httpproblem.TypeStoreUnavailable: {retry: true},
	httpproblem.TypeHandlerFailed:    {retry: true},
	httpproblem.TypeOutcomePending:   {retry: true},

	httpproblem.TypeKeyMissing: {kind: ErrRefused,
		happened: "the server requires a key on this route and read none; nothing ran",
		check:    "that Config.Header names the header the server reads, and Config.Methods the methods it guards"},
	httpproblem.TypeKeyInvalid: {kind: ErrRefused,
		happened: "the server refused the key; nothing ran",
		check:    "the key the caller set (WithKey or the header): the server's reason is in Problem.Reason"},
	httpproblem.TypeKeyExpired: {kind: ErrRetentionPassed,
		happened: "the key is older than the server's record retention, which may have forgotten its first request; nothing ran now",
		check:    "whether the first request took effect (fetch the resource); send it again under a new key only if it did not, and set Config.Retention to the server's"},
	httpproblem.TypeBodyInvalid: {kind: ErrRefused,
		happened: "the server could not fingerprint the body (invalid JSON or duplicate members); nothing ran",
		check:    "the code that encodes the body"},
	httpproblem.TypeBodyTooLarge: {kind: ErrRefused,
		happened: "the body is larger than the server takes; nothing ran",
		check:    "the body's size against the server's limit"},
	httpproblem.TypePathTooLong: {kind: ErrRefused,
		happened: "the path is longer than the server takes (2,048 bytes); nothing ran",
		check:    "the code that builds the path"},
	httpproblem.TypeQueryTooLarge: {kind: ErrRefused,
		happened: "the query holds more parameters than the server takes (10,000); nothing ran",
		check:    "the code that builds the query string"},
	httpproblem.TypeFingerprintMismatch: {kind: ErrKeyReused,
		happened: "the key was first used with a different request (body, query string or resource); this one did not run, the first one's outcome stands",
		check:    "that the body is built the same on every retry (no timestamps or random values) and that a new request gets a new key"},
	httpproblem.TypeOperationMismatch: {kind: ErrKeyReused,
		happened: "the key was first used for another operation; this one did not run",
		check:    "that every request gets its own key"},
	httpproblem.TypeIndeterminate: {kind: ErrOperatorRequired,
		happened: "an earlier attempt stopped before its outcome was recorded, so it may or may not have taken effect; the server will not run it again",
		check:    "whether it took effect, with the server's operator, who resolves the key (idemkit inspect, idemkit resolve); a retry then gets that outcome"},
	httpproblem.TypeOutcomeUnknown: {kind: ErrOperatorRequired,
		happened: "the handler could not tell whether the request took effect; the server kept the key so that it never runs twice",
		check:    "whether it took effect, with the server's operator, who resolves the key (idemkit resolve); a retry then gets that outcome"},
	httpproblem.TypeReplayWindowPassed: {kind: ErrCompleted,
		happened: "the request completed, and its response is no longer replayed",
		check:    "the result itself (Problem.Location, Problem.OriginalStatus) instead of retrying"},
	httpproblem.TypeResponseNotStored: {kind: ErrCompleted,
		happened: "the request completed, and its response was too large to store",
		check:    "the result itself (Problem.Location, Problem.OriginalStatus) instead of retrying"},
	httpproblem.TypeTenantMissing: {kind: ErrServerFailure,
		happened: "the server found no authenticated caller for the request; nothing ran",
		check:    "the server's authentication and its Tenant setting"},
	httpproblem.TypeCorruptRecord: {kind: ErrServerFailure,
		happened: "the server cannot read its record of this key; nothing ran or was replayed",
		check:    "the record of this key with the server's operator (idemkit inspect)"},
	httpproblem.TypeGuardFailure: {kind: ErrServerFailure,
		happened: "the server's idempotency guard failed before running the request; nothing ran",
		check:    "the server's logs and configuration"},
}

// ProblemError is an answer of the server's that the client does not
// retry: its problem, the key and the attempts made. errors.Is matches it
// with the sentinel of its kind: ErrKeyReused, ErrOperatorRequired,
// ErrCompleted, ErrRefused, ErrRetentionPassed (key-expired) or
// ErrServerFailure.
type ProblemError struct {
	Key      string
	Attempts int
	Problem  httpproblem.Details
}

func (e *ProblemError) Error() string {
	v := verdicts[e.Problem.Type]
	msg := fmt.Sprintf("idemclient: key %s: %d %s: %s", e.Key, e.Problem.Status,
		strings.TrimPrefix(e.Problem.Type, httpproblem.Base), v.happened)
	switch {
	case e.Problem.Type == httpproblem.TypeKeyInvalid && e.Problem.Reason != "":
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
