package idemkit

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idemkit/idemkit/observe"
)

func TestEventFor(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want observe.EventKind
	}{
		{"replay", nil, observe.EventReplayed},
		{"fingerprint mismatch", ErrFingerprintMismatch, observe.EventMismatch},
		{"operation mismatch", fmt.Errorf("%w: first used for %q", ErrOperationMismatch, "POST /a"), observe.EventMismatch},
		{"conflict", &ConflictError{RetryAfter: time.Second}, observe.EventConflict},
		{"in flight", ErrInFlight, observe.EventConflict},
		{"indeterminate", ErrIndeterminate, observe.EventIndeterminate},
		{"replay window passed", &OutcomeError{Reason: ErrReplayWindowPassed, Status: 201}, observe.EventOutcome},
		{"snapshot omitted", &OutcomeError{Reason: ErrSnapshotOmitted, Status: 201}, observe.EventOutcome},
		{"corrupt record", fmt.Errorf("%w: unknown state", ErrCorruptRecord), observe.EventStoreError},
		{"store error", &StoreError{Op: "mark indeterminate", Err: errors.New("reset")}, observe.EventStoreError},
		{"other", errors.New("anything else"), observe.EventStoreError},
	} {
		if got := eventFor(tc.err); got != tc.want {
			t.Errorf("%s: eventFor(%v) = %s, want %s", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestStoreErrMessage(t *testing.T) {
	reset := errors.New("connection reset")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"plain error", reset, "idemkit: store claim: connection reset"},
		{"store error kept", &StoreError{Op: "claim", Err: reset}, "idemkit: store claim: connection reset"},
		{"wrapped store error kept", fmt.Errorf("dynamo: %w", &StoreError{Op: "claim", Err: reset}), "dynamo: idemkit: store claim: connection reset"},
		{"sentinel", fmt.Errorf("%w: too large", ErrRecordInvalid), "idemkit: store claim: " + ErrRecordInvalid.Error() + ": too large"},
	} {
		err := storeErr("claim", tc.err)
		if err.Error() != tc.want {
			t.Errorf("%s: message %q, want %q", tc.name, err, tc.want)
		}
		if !errors.Is(err, reset) && !errors.Is(err, ErrRecordInvalid) {
			t.Errorf("%s: %v lost its cause", tc.name, err)
		}
	}
	if err := storeErr("claim", reset); !errors.Is(err, ErrStoreUnavailable) {
		t.Errorf("storeErr(plain) = %v, want ErrStoreUnavailable", err)
	}
}
