package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	lambdaevent "github.com/idemkit/idemkit/lambda/event"
	"github.com/idemkit/idemkit/tenant"
)

// transferEvent is an asynchronous invocation's event: the Lambda service
// delivers it again, unchanged, after a function error or a timeout, and
// may deliver it twice.
type transferEvent struct {
	TransferID string `json:"transferId"`
	Amount     int    `json:"amount"`
}

type transferReceipt struct {
	TransferID string `json:"transferId"`
	Ref        string `json:"ref"`
}

// TestEventRedeliveredUnderFaults: lambda/event's Wrap on dynalite, the same event
// delivered again by the Lambda service after each kind of first attempt,
// with faults on the kit's calls. The function's effects are counted in
// its effects table. A delivery that finds the result stored gets that
// result (the same receipt), never a second run; one that finds the first
// still running gets an error that is idemkit.ErrInFlight (the event is
// retried later); one that finds its outcome lost gets
// idemkit.ErrIndeterminate under FailClosed.
func TestEventRedeliveredUnderFaults(t *testing.T) {
	const lease = 2 * time.Second
	for _, tc := range []struct {
		name   string
		policy idemkit.StalePolicy
		rules  []faults.Rule
		// failFirst: the function's first run fails before its effect.
		failFirst bool
		// during: a delivery while the first still runs.
		during bool
		// after is what a delivery after the lease gets: "receipt" (the
		// first result), "run" (a new one), "indeterminate".
		after   string
		effects int
	}{
		{name: "completion-lost-ack-always", rules: []faults.Rule{onComplete(faults.LostAck, 0, never)}, after: "receipt", effects: 1},
		{name: "claim-lost-ack-always+release-lost-ack", rules: []faults.Rule{onClaim(faults.LostAck, 0, 3*dynamo.DefaultMaxAttempts), onRelease(faults.LostAck, 0, 1)}, after: "run", effects: 1},
		{name: "function-error+release-lost-ack", failFirst: true, rules: []faults.Rule{onRelease(faults.LostAck, 0, 1)}, after: "run", effects: 1},
		{name: "delivered-twice-at-once", during: true, after: "receipt", effects: 1},
		{name: "completion-5xx-always/fail-closed", rules: []faults.Rule{onComplete(faults.ServerError, 0, never)}, after: "indeterminate", effects: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := faults.New(baseTransport(), tc.rules...)
			store, raw, _ := newStore(t, ft, dynamo.Options{CallTimeout: dynalite.Scale(time.Second), MaxBackoff: 10 * time.Millisecond})
			fx := newEffects(t, raw)
			clk := testclock.New()
			g := testguard.New(t, idemkit.Config{Store: store, Clock: clk, Policy: idemkit.Policy{Lease: lease, OnStaleLease: tc.policy}})
			key := "tr-" + tc.name
			started, finish := make(chan struct{}), make(chan struct{})
			runs := 0
			fn := func(ctx context.Context, in transferEvent) (transferReceipt, error) {
				runs++
				if tc.failFirst && runs == 1 {
					return transferReceipt{}, errors.New("ledger unavailable")
				}
				if tc.during && runs == 1 {
					close(started)
					<-finish
				}
				if _, err := fx.record(context.WithoutCancel(ctx), key); err != nil {
					return transferReceipt{}, err
				}
				return transferReceipt{TransferID: in.TransferID, Ref: "ref_" + token()}, nil
			}
			h := lambdaevent.Wrap(g, lambdaevent.Config[transferEvent]{
				Key:       func(in transferEvent) (string, error) { return in.TransferID, nil },
				Tenant:    tenant.Single[transferEvent]("acme"),
				Operation: "transfers.execute",
			}, fn)
			ev := transferEvent{TransferID: key, Amount: 1999}
			ctx := context.Background()

			type result struct {
				r   transferReceipt
				err error
			}
			firstc := make(chan result, 1)
			go func() {
				r, err := h(ctx, ev)
				firstc <- result{r, err}
			}()
			if tc.during {
				<-started
				if _, err := h(ctx, ev); !errors.Is(err, idemkit.ErrInFlight) {
					t.Fatalf("delivery while the first runs: %v, want ErrInFlight", err)
				}
				close(finish)
			}
			first := <-firstc
			switch {
			case tc.failFirst:
				if first.err == nil {
					t.Fatalf("first delivery: %+v, want the function's error", first.r)
				}
			case first.err != nil && tc.name == "claim-lost-ack-always+release-lost-ack":
				// The claim could not be confirmed: retried later.
				if !errors.Is(first.err, idemkit.ErrStoreUnavailable) {
					t.Fatalf("first delivery: %v, want ErrStoreUnavailable", first.err)
				}
			case first.err != nil:
				t.Fatalf("first delivery: %v", first.err)
			}
			if len(tc.rules) > 0 && len(ft.Events()) == 0 {
				t.Fatal("no fault was injected")
			}
			ft.Clear()
			clk.Advance(time.Minute) // the service's retry delay: past the lease

			var want transferReceipt
			for i := 0; i < 3; i++ {
				r, err := h(ctx, ev)
				switch {
				case tc.after == "indeterminate":
					if !errors.Is(err, idemkit.ErrIndeterminate) {
						t.Fatalf("delivery %d after the lease: %+v, %v; want ErrIndeterminate", i, r, err)
					}
					continue
				case err != nil:
					t.Fatalf("delivery %d after the lease: %v", i, err)
				}
				if want.Ref == "" {
					want = r
					if tc.after == "receipt" && first.err == nil && r != first.r {
						t.Fatalf("delivery %d: %+v, want the first result %+v", i, r, first.r)
					}
				}
				if r != want || r.TransferID != key {
					t.Fatalf("delivery %d: %+v, want %+v", i, r, want)
				}
			}
			if got := fx.counts(t)[key]; got != tc.effects {
				t.Fatalf("%d effects, want %d (function runs %d)", got, tc.effects, runs)
			}
			summary(t, "first %v; then %s; function runs %d, effects %d; %d faults injected", first.err == nil, tc.after, runs, tc.effects, len(ft.Events()))
		})
	}
}
