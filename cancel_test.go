package idemkit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/idemkit/idemkit"
)

func TestCallerCancelled(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), 0)
	defer cancel2()
	<-expired.Done()
	storeCancel := fmt.Errorf("idemkit: store claim: %w", context.Canceled)
	unknown := &idemkit.ClaimUnknownError{Err: context.Canceled}
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"the caller cancelled and the call ended with it", cancelled, storeCancel, true},
		{"the caller cancelled but the store failed otherwise", cancelled, errors.New("throttled"), false},
		{"a claim that could not be freed", cancelled, unknown, false},
		{"the context is live", context.Background(), storeCancel, false},
		{"a deadline is no cancellation", expired, fmt.Errorf("x: %w", context.DeadlineExceeded), false},
		{"no error", cancelled, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := idemkit.CallerCancelled(tt.ctx, tt.err); got != tt.want {
				t.Errorf("CallerCancelled = %v, want %v", got, tt.want)
			}
		})
	}
}
