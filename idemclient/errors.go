package idemclient

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/idemkit/idemkit/httpproblem"
)

// The kinds of [*ProblemError], matched with errors.Is.
var (
	// ErrKeyReused: the key was first used with another request (422
	// fingerprint-mismatch, operation-mismatch). The request did not run.
	ErrKeyReused = errors.New("idemclient: key reused for a different request")
	// ErrOperatorRequired: the request may or may not have taken effect, and
	// the server keeps the key until an operator resolves it (409
	// indeterminate-operator-required, 503 outcome-unknown).
	ErrOperatorRequired = errors.New("idemclient: outcome unknown, operator resolution required")
	// ErrCompleted: the request completed, but its response is not replayed
	// (410 replay-window-passed, response-not-stored).
	ErrCompleted = errors.New("idemclient: completed, response not replayed")
	// ErrRefused: the server refused the request before running it (400
	// key-missing, key-invalid, body-invalid; 413 body-too-large; 414 path-too-long, query-too-large).
	ErrRefused = errors.New("idemclient: refused before it ran")
	// ErrServerFailure: the server is misconfigured or cannot read its
	// record; nothing ran (500 tenant-missing, record-corrupt,
	// guard-failure).
	ErrServerFailure = errors.New("idemclient: server failure")
)

var (
	// ErrRetentionPassed: the key is older than the server's record
	// retention, less Config.Margin, so a request sent with it could run a
	// second time. The Transport does not send it ([*GiveUpError]); a
	// server that noticed first answers 400 key-expired ([*ProblemError]).
	ErrRetentionPassed = errors.New("idemclient: the server's retention of the key has passed")
	// ErrBudgetSpent: Config.Budget or Config.MaxAttempts ran out before a
	// final answer ([*GiveUpError]).
	ErrBudgetSpent = errors.New("idemclient: retry budget spent")
	// ErrBudgetTooLong: New was given a Budget that reaches past the
	// server's retention, less Margin.
	ErrBudgetTooLong = errors.New("idemclient: retry budget longer than the server's retention")
	// ErrBodyNotReplayable: a guarded request has a body but no GetBody, so
	// a retry could not send it again. Nothing was sent.
	ErrBodyNotReplayable = errors.New("idemclient: request body cannot be replayed (Request.GetBody is nil): build it with http.NewRequest from a bytes.Reader, bytes.Buffer or strings.Reader, or set GetBody")
	// ErrKeyNotSendable: the caller's key cannot be sent. Nothing was sent.
	ErrKeyNotSendable = errors.New("idemclient: invalid idempotency key")
)

// GiveUpError reports a request the client stopped retrying with its
// outcome open: an earlier attempt may have taken effect. Retry it, within
// RetryBefore, with the same key ([WithKey]), never with a new one.
type GiveUpError struct {
	Key      string
	Attempts int
	// Elapsed is the time since the first attempt.
	Elapsed time.Duration
	// RetryBefore is when the server's retention of the key ends, less
	// Config.Margin: a retry after it could run the request a second time.
	RetryBefore time.Time
	// Reason says why the client stopped: ErrBudgetSpent,
	// ErrRetentionPassed, the context's error, or a transport error that
	// no retry can help (a TLS certificate refused, a malformed URL).
	Reason error
	// Status and Problem are the last attempt's answer, if it got one; Err
	// is its transport error, if any.
	Status  int
	Problem *httpproblem.Details
	Err     error
	// asked is the Retry-After the last answer asked for, when the budget
	// left was shorter.
	asked time.Duration
}

func (e *GiveUpError) Error() string {
	var b strings.Builder
	if e.Attempts == 0 {
		fmt.Fprintf(&b, "idemclient: key %s not sent: its time is past the server's retention less the margin (%s): the server may have forgotten its first request and would run it again; check whether that took effect before sending it anew under a new key",
			e.Key, e.RetryBefore.UTC().Format(time.RFC3339))
		return b.String()
	}
	attempts := "attempts"
	if e.Attempts == 1 {
		attempts = "attempt"
	}
	fmt.Fprintf(&b, "idemclient: key %s: gave up after %d %s in %s: %s", e.Key, e.Attempts, attempts,
		e.Elapsed.Round(time.Millisecond), strings.TrimPrefix(fmt.Sprint(e.Reason), "idemclient: "))
	if e.asked > 0 {
		fmt.Fprintf(&b, " (the server asked to wait %s)", e.asked)
	}
	switch {
	case e.Problem != nil:
		fmt.Fprintf(&b, "; last answer %d %s", e.Status, strings.TrimPrefix(e.Problem.Type, httpproblem.Base))
		if e.Problem.Type == httpproblem.TypeInFlight {
			b.WriteString(" (the first request is still running)")
		}
	case e.Status != 0:
		fmt.Fprintf(&b, "; last answer %d", e.Status)
	case e.Err != nil && e.Err != e.Reason:
		fmt.Fprintf(&b, "; last error %v", e.Err)
	}
	if errors.Is(e.Reason, ErrRetentionPassed) {
		b.WriteString("; it may have taken effect, and the server may have forgotten it: check before sending it anew under a new key")
	} else {
		fmt.Fprintf(&b, "; it may have taken effect: retry with the same key before %s, never with a new one",
			e.RetryBefore.UTC().Format(time.RFC3339))
	}
	return b.String()
}

// Unwrap returns Reason and Err.
func (e *GiveUpError) Unwrap() []error {
	var errs []error
	if e.Reason != nil {
		errs = append(errs, e.Reason)
	}
	if e.Err != nil && e.Err != e.Reason {
		errs = append(errs, e.Err)
	}
	return errs
}
