package orders

import (
	"context"
	"errors"
	"time"
)

// Test cards of the example's simulated payment processor. Every other
// valid card number is captured.
const (
	// CardDeclined is declined: 402, a business outcome the key keeps.
	CardDeclined = "4000000000000002"
	// CardProcessorDown makes the processor unavailable: 503, never stored,
	// so a retry with the same key runs again.
	CardProcessorDown = "4000000000000119"
	// CardOutcomeUnknown makes the processor lose its answer after it may
	// have charged: the handler cannot tell and cannot ask again, so it
	// ends with idemkit.ErrOutcomeUnknown (503 outcome-unknown; the key
	// is kept indeterminate for an operator). For practising the runbook
	// (docs/OPERATIONS.md) on a local server.
	CardOutcomeUnknown = "4000000000000259"
)

var (
	errDeclined      = errors.New("orders: card declined")
	errProcessorDown = errors.New("orders: processor unavailable")
	errChargeUnknown = errors.New("orders: the processor's answer was lost; the card may have been charged")
)

// capture charges a card with the simulated processor. It first waits
// delay (the processor is slow), unless ctx ends first: then it returns
// ctx's error and charges nothing. ref is the charge's idempotency key at
// the processor, the payment's ID: a real processor charges a ref once, so
// a retry that captures again after its payment write failed is not a
// second charge. The simulation charges nothing, so it has no use for ref.
func capture(ctx context.Context, ref, card string, delay time.Duration) error {
	_ = ref
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
	}
	switch card {
	case CardDeclined:
		return errDeclined
	case CardProcessorDown:
		return errProcessorDown
	case CardOutcomeUnknown:
		return errChargeUnknown
	}
	return nil
}

// validCard reports whether s is 12 to 19 digits with a valid Luhn check
// digit.
func validCard(s string) bool {
	if len(s) < 12 || len(s) > 19 {
		return false
	}
	sum := 0
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			return false
		}
		d := int(c - '0')
		if (len(s)-1-i)%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}
