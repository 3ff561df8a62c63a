package httpmw

import (
	"context"
	"errors"
	"fmt"

	"github.com/idemkit/idemkit"
)

// failureKey is the context key under which a guarded handler finds its
// *failure.
type failureKey struct{}

// ErrWroteNothing is wrapped, with idemkit.ErrOutcomeUnknown, by the
// error reported for a guarded handler that returned without writing
// anything, and without calling Fail, after its request's context was
// done. The handler may have stopped before acting, or gone on and meant
// an implicit 200. So the key is kept, rather than run again or answered
// with a 200 that may never have been meant.
var ErrWroteNothing = errors.New("httpmw: the handler wrote nothing after its request's context was done")

// stoppedUnwritten returns the outcome of a handler that wrote nothing,
// called Fail with nothing, and whose context ctx is done: the lease lost
// (idemkit.ErrLeaseLost, under Takeover) frees the key; any other end of
// the context (the client hung up, a Shutdown cut short) keeps it as an
// unknown outcome. It returns nil for every other handler.
func stoppedUnwritten(ctx context.Context, rec *response) error {
	if rec.sent != nil || rec.body.Len() > 0 || ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	if errors.Is(cause, idemkit.ErrLeaseLost) {
		return cause
	}
	return fmt.Errorf("%w: %w (%w)", idemkit.ErrOutcomeUnknown, ErrWroteNothing, cause)
}

// failure is where Fail leaves a guarded handler's error.
type failure struct{ err error }

// Fail ends the guarded request that ctx (the request's context) belongs to
// with err instead of the response the handler wrote, which is discarded.
// It is the net/http counterpart of a Lambda handler returning an error.
//
//   - When err wraps idemkit.ErrOutcomeUnknown, the key is kept
//     (indeterminate) and the client gets 503 outcome-unknown, so the
//     request never runs twice.
//   - For any other err, the key is freed and the client gets 500
//     handler-failed, so a retry runs the handler again.
//
// Call it before returning from the handler. It reports false, doing
// nothing, when ctx is not a guarded request's.
func Fail(ctx context.Context, err error) bool {
	f, ok := ctx.Value(failureKey{}).(*failure)
	if !ok || err == nil {
		return false
	}
	f.err = err
	return true
}
