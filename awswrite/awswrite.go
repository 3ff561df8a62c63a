// Package awswrite tells, from the error of an AWS SDK for Go v2 call,
// whether the call was applied. A guarded handler must know that before it
// ends. With a plain error its key is freed and a retry runs it again. With
// an error wrapping idemkit.ErrOutcomeUnknown its key is kept for an
// operator.
//
//	_, err := client.PutItem(ctx, in)
//	switch awswrite.Classify(err) {
//	case awswrite.Applied:     // written
//	case awswrite.NotApplied:  // nothing written: a retry may write it
//	case awswrite.Unknown:     // it may have been written: look, or keep the key
//	}
//
// The classification reads the SDK's error types only (smithy.APIError, the
// HTTP response and send errors, the retryer's errors, context errors),
// never message text. It reads the HTTP status of a service's answer, not
// the SDK's client/server fault labels, which an unmodelled error
// (dynalite's UnknownOperationException) does not carry.
package awswrite

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/idemkit/idemkit"
)

// Outcome is what an SDK call's error says about the call. The zero value
// is Unknown.
type Outcome int

const (
	// Unknown: the call may have been applied. The request was sent and
	// its answer was lost (a timeout, a reset connection, a cancelled
	// context), the service failed (5xx) after receiving it, or the SDK
	// retried and an earlier attempt's fate is not in the error.
	Unknown Outcome = iota
	// Applied: the call succeeded (a nil error).
	Applied
	// NotApplied: the call changed nothing. The service refused it with a
	// 4xx answer (a failed condition, a cancelled transaction, a
	// validation error, a throttle, a missing table or permission, an
	// operation it does not support), or the request was never sent (its
	// parameters were invalid, it could not be serialized or signed, no
	// connection could be opened). Credentials that cannot be had are
	// Unknown: the SDK reports them in an untyped error.
	NotApplied
)

func (o Outcome) String() string {
	switch o {
	case Applied:
		return "applied"
	case NotApplied:
		return "not applied"
	}
	return "unknown"
}

// Classify returns what err, returned by one call of an AWS SDK v2 client,
// says about whether the call was applied. It returns Applied for nil, and
// NotApplied only where the error proves that nothing was changed. It
// returns Unknown otherwise, for an error it does not recognise too.
//
// The SDK retries an attempt that failed retryably, and its error is the
// last attempt's. Classify reports Unknown when the error shows that
// earlier attempts failed (the retryer gave up after more than one
// attempt, its pause was cut short, or its retry quota ran out), since one
// of them may have been applied. A refusal returned without those marks
// ended the call at once. Classify takes it as the answer every attempt
// would have got. That holds for the service's refusals: a request that
// is invalid, or names a missing table, is refused on every attempt.
//
// A failed condition (ConditionalCheckFailedException, or a
// TransactionCanceledException for one) is NotApplied, since this call
// wrote nothing. The item that failed it may be an earlier write of the
// same request, whose answer was lost. A write keyed on
// idemkit.ExecutionID reads the item back and takes it as its own.
func Classify(err error) Outcome {
	if err == nil {
		return Applied
	}
	if retried(err) {
		return Unknown
	}
	var ipe smithy.InvalidParamsError
	var se *smithy.SerializationError
	var sign *v4.SigningError
	if errors.As(err, &ipe) || errors.As(err, &se) || errors.As(err, &sign) {
		// Refused by the client before the request was built or sent.
		return NotApplied
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// Cancelled before the request was sent, or while it was on the
		// wire: the error does not say which.
		return Unknown
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() != 0 {
		return answered(err, status.HTTPStatusCode())
	}
	var send *smithyhttp.RequestSendError
	var op *net.OpError
	if errors.As(err, &send) && errors.As(err, &op) && op.Op == "dial" {
		// No connection was opened (refused, no route, no such host):
		// nothing was sent.
		return NotApplied
	}
	return Unknown
}

// answered classifies a call the service answered with an HTTP status.
func answered(err error, code int) Outcome {
	if code < 400 || code >= 500 || code == 408 {
		// A 5xx or a request timeout: the service may have applied the
		// call before failing. A 2xx or 3xx with an error is an answer
		// the client could not read.
		return Unknown
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "TransactionInProgressException", "PriorRequestNotComplete",
			"RequestTimeout", "RequestTimeoutException":
			// An earlier request with the same token may still apply, or
			// the service stopped waiting for this one.
			return Unknown
		}
	}
	return NotApplied
}

// retried reports whether err shows that the SDK retried the call: its
// last attempt's error then says nothing of the earlier ones.
func retried(err error) bool {
	var max *retry.MaxAttemptsError
	if errors.As(err, &max) && max.Attempt > 1 {
		return true
	}
	var quota ratelimit.QuotaExceededError
	var pause *aws.RequestCanceledError
	return errors.As(err, &quota) || errors.As(err, &pause)
}

// HandlerError returns the error a guarded handler ends with after a
// failed call. It returns nil for nil. It returns err itself when the call
// was not applied; the key is then freed and a retry runs the handler
// again. It returns err wrapped in idemkit.ErrOutcomeUnknown when the call
// may have been applied; the key is then kept for an operator, and the
// handler never runs again. Use it only after a call that cannot be
// keyed. For a write keyed on idemkit.ExecutionID and conditional on that
// key, return the plain error whatever Classify says: the retry's
// conditional write finds the item if it landed, where HandlerError would
// keep the key for an operator after a retried throttle or a timeout.
func HandlerError(err error) error {
	if err == nil || Classify(err) == NotApplied {
		return err
	}
	return fmt.Errorf("%w: %w", idemkit.ErrOutcomeUnknown, err)
}
