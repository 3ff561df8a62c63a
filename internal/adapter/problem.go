package adapter

import (
	"errors"
	"strconv"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/idemkey"
	"github.com/idemkit/idemkit/internal/clip"
	"github.com/idemkit/idemkit/internal/retryafter"
)

// HandlerFailed is the problem for a handler that failed without a
// response (httpmw.Fail): its key was freed and a retry runs it again.
func HandlerFailed() *httpproblem.Details {
	return &httpproblem.Details{Type: httpproblem.TypeHandlerFailed, Title: "Request failed", Status: 500,
		Detail: "The request failed before it reached an outcome, and its key was freed. Retry with the same key."}
}

// MaxEchoBytes bounds every fragment of a request, or of an error about
// it, that a problem detail repeats: a longer one is cut on a UTF-8
// boundary and ends in "...", MaxEchoBytes bytes in all.
const MaxEchoBytes = 200

// Echo returns s bounded to MaxEchoBytes, cut on a UTF-8 boundary, invalid
// UTF-8 replaced by U+FFFD, so a detail stays small whatever the request.
func Echo(s string) string { return clip.String(s, MaxEchoBytes) }

// NoMethod is the problem for an event without an HTTP method
// (ErrNoMethod): a misconfiguration, so the request fails closed.
func NoMethod() *httpproblem.Details {
	return &httpproblem.Details{Type: httpproblem.TypeGuardFailure, Title: "Idempotency guard failure", Status: 500,
		Detail: "The request was not run because its event names no HTTP method: the function's wrapper does not match the event source or the payload format version of its integration."}
}

// KeyMissing is the problem for a guarded request without a key.
func KeyMissing(header string) *httpproblem.Details {
	return &httpproblem.Details{Type: httpproblem.TypeKeyMissing, Title: "Idempotency key required", Status: 400,
		Detail: "This operation requires an " + header + " header."}
}

// TenantMissing is the problem for a guarded request whose tenant could not
// be determined: a misconfiguration, so the request fails closed.
func TenantMissing() *httpproblem.Details {
	return &httpproblem.Details{Type: httpproblem.TypeTenantMissing, Title: "Idempotency tenant not configured", Status: 500,
		Detail: "The idempotency guard found no authenticated caller (tenant) for this request and refused to run it. The Tenant setting or the authorizer of this route is misconfigured."}
}

// BodyInvalid is the problem for a body that cannot be fingerprinted.
func BodyInvalid(err error) *httpproblem.Details {
	return &httpproblem.Details{Type: httpproblem.TypeBodyInvalid, Title: "Request body cannot be fingerprinted", Status: 400,
		Detail: "The request body could not be read to compare retries: " + Echo(err.Error()) + "."}
}

// BodyTooLarge is the problem for a body over the configured limit.
func BodyTooLarge(limit int64) *httpproblem.Details {
	return &httpproblem.Details{Type: httpproblem.TypeBodyTooLarge, Title: "Request body too large", Status: 413,
		Detail: "The request body is larger than " + strconv.FormatInt(limit, 10) + " bytes."}
}

// PathTooLong is the problem for a path over httpconfig.MaxPathLen bytes.
func PathTooLong() *httpproblem.Details {
	return &httpproblem.Details{Type: httpproblem.TypePathTooLong, Title: "Request path too long", Status: 414,
		Detail: "The request path is longer than " + strconv.Itoa(httpconfig.MaxPathLen) + " bytes; it was not run."}
}

// QueryTooLarge is the problem for a query of more than
// httpconfig.MaxQueryParams parameters.
func QueryTooLarge() *httpproblem.Details {
	return &httpproblem.Details{Type: httpproblem.TypeQueryTooLarge, Title: "Query string too large", Status: 414,
		Detail: "The query string has more than " + strconv.Itoa(httpconfig.MaxQueryParams) + " parameters; it was not run."}
}

// ProblemFor maps an error returned by idemkit.Guard.Do before the handler
// ran to its problem. storeRetry is the Retry-After sent when the store is
// unavailable. Errors outside the guard's contract map to a 500
// guard-failure problem.
func ProblemFor(err error, storeRetry time.Duration) *httpproblem.Details {
	if p := requestProblem(err); p != nil {
		return p
	}
	if p := recordProblem(err, storeRetry); p != nil {
		return p
	}
	return &httpproblem.Details{Type: httpproblem.TypeGuardFailure, Title: "Idempotency guard failure", Status: 500,
		Detail: "The request was not run because the idempotency guard failed."}
}

// requestProblem returns the problem of err when the request itself is
// refused (its tenant, path, query, key, or a key reused for another
// request), nil otherwise: the first half of ProblemFor's order.
func requestProblem(err error) *httpproblem.Details {
	var ke *idemkey.Error
	switch {
	case errors.Is(err, idemkit.ErrTenantMissing):
		return TenantMissing()
	case errors.Is(err, httpconfig.ErrPathTooLong):
		return PathTooLong()
	case errors.Is(err, httpconfig.ErrQueryTooLarge):
		return QueryTooLarge()
	case errors.Is(err, idemkit.ErrKeyExpired):
		return &httpproblem.Details{Type: httpproblem.TypeKeyExpired, Title: "Idempotency key expired", Status: 400,
			Detail: "The key embeds a time older than this operation's record retention: its first request may have been forgotten, so it is not run. Use a new key only if you know the first request did not take effect."}
	case errors.As(err, &ke):
		return &httpproblem.Details{Type: httpproblem.TypeKeyInvalid, Title: "Invalid idempotency key", Status: 400,
			Detail: "The idempotency key is invalid: " + Echo(ke.Reason) + ".", Reason: Echo(ke.Reason)}
	case errors.Is(err, idemkit.ErrOperationMismatch):
		return &httpproblem.Details{Type: httpproblem.TypeOperationMismatch, Title: "Idempotency key reused for a different operation", Status: 422,
			Detail: "This key was first used for a different operation. Use a new key for a new request."}
	case errors.Is(err, idemkit.ErrFingerprintMismatch):
		return &httpproblem.Details{Type: httpproblem.TypeFingerprintMismatch, Title: "Idempotency key reused with a different request", Status: 422,
			Detail: "This key was first used with a different request (body, query string or resource). Use a new key for a new request."}
	}
	return nil
}

// recordProblem returns the problem of err when the key's record or the
// store answers the request (in flight, pending, indeterminate, completed,
// unreadable, kept, unavailable), nil otherwise: the second half of
// ProblemFor's order.
func recordProblem(err error, storeRetry time.Duration) *httpproblem.Details {
	var (
		ce *idemkit.ConflictError
		oe *idemkit.OutcomeError
		cu *idemkit.ClaimUnknownError
	)
	switch {
	case errors.As(err, &ce) && errors.Is(err, idemkit.ErrOutcomePending):
		return &httpproblem.Details{Type: httpproblem.TypeOutcomePending, Title: "Outcome pending: the earlier request may still complete", Status: 409,
			Detail:     "An earlier request with this key outlived its lease before its outcome was recorded, and it may still complete. Retry with the same key after the delay given in Retry-After: until " + ce.Until.UTC().Format(time.RFC3339) + " a retry gets its response once it completes, or this answer again; after that the key waits for an operator (indeterminate-operator-required).",
			RetryAfter: retryafter.Seconds(ce.RetryAfter)}
	case errors.As(err, &ce):
		s := retryafter.Seconds(ce.RetryAfter)
		return &httpproblem.Details{Type: httpproblem.TypeInFlight, Title: "Request with this idempotency key in progress", Status: 409,
			Detail: "A request with this key is being processed. Retry after the delay given in Retry-After.", RetryAfter: s}
	case errors.Is(err, idemkit.ErrInFlight):
		return &httpproblem.Details{Type: httpproblem.TypeInFlight, Title: "Request with this idempotency key in progress", Status: 409,
			Detail: "A request with this key is being processed. Retry after the delay given in Retry-After.", RetryAfter: 1}
	case errors.Is(err, idemkit.ErrIndeterminate):
		return &httpproblem.Details{Type: httpproblem.TypeIndeterminate, Title: "Outcome unknown: operator resolution required", Status: 409,
			Detail: "An earlier request with this key stopped before its outcome was recorded, so it may or may not have taken effect. It will not be run again until an operator resolves the key."}
	case errors.As(err, &oe):
		return outcomeProblem(oe)
	case errors.Is(err, idemkit.ErrCorruptRecord):
		return &httpproblem.Details{Type: httpproblem.TypeCorruptRecord, Title: "Idempotency record unreadable", Status: 500,
			Detail: "The stored record for this key could not be read; nothing was run or replayed."}
	case errors.Is(err, idemkit.ErrOutcomeUnknown) && markFailed(err):
		// The key could not be kept: the record stays in flight until its
		// lease ends, then follows the operation's stale-lease policy.
		return &httpproblem.Details{Type: httpproblem.TypeOutcomeUnknown, Title: "Outcome unknown: the request could not be kept", Status: 503,
			Detail:     "The request may or may not have taken effect, and the store failed while its key was being kept. Until the key's lease ends a retry gets 409 in-flight; after it, an operation that fails closed waits for an operator (409 indeterminate-operator-required), and one that allows takeover runs again.",
			RetryAfter: retryafter.Seconds(storeRetry)}
	case errors.Is(err, idemkit.ErrOutcomeUnknown):
		return &httpproblem.Details{Type: httpproblem.TypeOutcomeUnknown, Title: "Outcome unknown: the request is kept", Status: 503,
			Detail: "The request may or may not have taken effect; its key is kept so that it is never run twice. Retrying with the same key is safe: the answer is 409 indeterminate-operator-required until an operator resolves the key, then the resolved outcome."}
	case errors.As(err, &cu):
		// The store is unavailable too, but "nothing stored" would not be
		// true: the claim may have been stored with its answer lost.
		return &httpproblem.Details{Type: httpproblem.TypeStoreUnavailable, Title: "Idempotency store unavailable", Status: 503,
			Detail:     "The request was not run, but its key may have been recorded before the store failed, and it could not be freed. Retrying with the same key is safe: until the key's lease ends a retry may get 409 in-flight; after that the key is listed as a stale lease, and the retry runs or, for operations that fail closed, waits for an operator.",
			RetryAfter: retryafter.Seconds(storeRetry)}
	case errors.Is(err, idemkit.ErrRecordInvalid):
		return &httpproblem.Details{Type: httpproblem.TypeGuardFailure, Title: "Idempotency guard failure", Status: 500,
			Detail: "The request was not run because the idempotency store refused its record as invalid. Retrying the same request cannot succeed."}
	case errors.Is(err, idemkit.ErrStoreUnavailable):
		return &httpproblem.Details{Type: httpproblem.TypeStoreUnavailable, Title: "Idempotency store unavailable", Status: 503,
			Detail: "The request was not run because the idempotency store did not confirm its key. Retry with the same key.", RetryAfter: retryafter.Seconds(storeRetry)}
	}
	return nil
}

// markFailed reports whether err carries the guard's failure to keep a key
// whose outcome is unknown (its mark failed on every attempt). It
// looks at every *StoreError in err's tree, not only the first: the
// handler's own error, joined before the guard's, may carry one too.
func markFailed(err error) bool {
	if se, ok := err.(*idemkit.StoreError); ok && se.Op == "mark unknown" {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return markFailed(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if markFailed(e) {
				return true
			}
		}
	}
	return false
}

// outcomeProblem is the 410 problem of a completed request whose response
// cannot be replayed.
func outcomeProblem(oe *idemkit.OutcomeError) *httpproblem.Details {
	p := &httpproblem.Details{Status: 410, OriginalStatus: oe.Status, Location: oe.Location}
	if !oe.CompletedAt.IsZero() {
		p.CompletedAt = oe.CompletedAt.UTC().Format(time.RFC3339)
	}
	if errors.Is(oe.Reason, idemkit.ErrSnapshotOmitted) {
		p.Type, p.Title = httpproblem.TypeResponseNotStored, "Completed, response not stored"
		p.Detail = "The request with this key completed, but its response was too large to store. Its status and location are given here; fetch the result instead of retrying."
	} else {
		p.Type, p.Title = httpproblem.TypeReplayWindowPassed, "Completed, replay window passed"
		p.Detail = "The request with this key completed, and its response is no longer replayed. Its status and location are given here; fetch the result instead of retrying."
	}
	return p
}
