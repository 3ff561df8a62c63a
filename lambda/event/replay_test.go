package event_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/event"
)

type traceKey struct{}

// tracedReceipt is a result that names the trace of the call that
// returned it, and whether it was replayed.
type tracedReceipt struct {
	TransferID string `json:"transferId"`
	Run        int32  `json:"run"`
	Trace      string `json:"trace"`
	Replayed   bool   `json:"replayed"`
}

// TestAdjustReplay: the AdjustReplay hooks pass every replayed result,
// in order, before it is returned: they get the call's context and input
// and the stored result. The call that runs the function is not passed
// through them, and what they return is not stored: each replay starts
// from the stored result.
func TestAdjustReplay(t *testing.T) {
	runs := 0
	var seen []transfer
	h := event.Wrap(testguard.Mem(t), transferConfig, func(ctx context.Context, tr transfer) (tracedReceipt, error) {
		runs++
		return tracedReceipt{TransferID: tr.TransferID, Run: int32(runs), Trace: ctx.Value(traceKey{}).(string)}, nil
	},
		event.AdjustReplay(func(ctx context.Context, in transfer, stored tracedReceipt) tracedReceipt {
			seen = append(seen, in)
			if stored.Replayed || stored.Trace != "t-1" {
				t.Errorf("stored %+v, want the first call's result", stored)
			}
			stored.Replayed, stored.Trace = true, ctx.Value(traceKey{}).(string)
			return stored
		}),
		event.AdjustReplay(func(_ context.Context, _ transfer, r tracedReceipt) tracedReceipt {
			if !r.Replayed {
				t.Error("the second hook ran before the first")
			}
			r.Trace += "+"
			return r
		}),
	)
	in := transfer{TransferID: "tr_1", Account: "acct-acme", Amount: 100}
	call := func(trace string) tracedReceipt {
		t.Helper()
		r, err := h(context.WithValue(context.Background(), traceKey{}, trace), in)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := call("t-1"); r != (tracedReceipt{TransferID: "tr_1", Run: 1, Trace: "t-1"}) {
		t.Errorf("first call %+v, want the function's result, not adjusted", r)
	}
	for _, trace := range []string{"t-2", "t-3"} {
		if r := call(trace); r != (tracedReceipt{TransferID: "tr_1", Run: 1, Trace: trace + "+", Replayed: true}) {
			t.Errorf("replay %s: %+v", trace, r)
		}
	}
	if runs != 1 || len(seen) != 2 || seen[0] != in {
		t.Errorf("%d runs, the hook saw %v; want one run and two replays", runs, seen)
	}
}

// TestBusinessKeyAge: a key that is a UUIDv7 minted 8 days ago (a
// transfer id), older than the default 7-day retention, runs on its
// first call: the age of a business key says nothing about when its
// message was first sent. With CheckKeyAge it is refused
// (idemkit.ErrKeyExpired), as an HTTP Idempotency-Key would be.
func TestBusinessKeyAge(t *testing.T) {
	u, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	ms := uint64(time.Now().Add(-8 * 24 * time.Hour).UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	in := transfer{TransferID: u.String(), Account: "acct-acme", Amount: 100}
	runs := 0
	if _, err := event.Wrap(testguard.Mem(t), transferConfig, runTransfer(&runs))(context.Background(), in); err != nil || runs != 1 {
		t.Errorf("default: %v after %d runs, want one run", err, runs)
	}
	cfg := transferConfig
	cfg.CheckKeyAge = true
	runs = 0
	if _, err := event.Wrap(testguard.Mem(t), cfg, runTransfer(&runs))(context.Background(), in); !errors.Is(err, idemkit.ErrKeyExpired) || runs != 0 {
		t.Errorf("CheckKeyAge: %v after %d runs, want ErrKeyExpired and none", err, runs)
	}
}

// TestTextPayload: a Payload that is text starting with "[" (a log
// line) is compared byte for byte: it runs once, and its redelivery gets
// the stored result instead of being refused as JSON that does not parse.
func TestTextPayload(t *testing.T) {
	cfg := transferConfig
	cfg.Payload = func(tr transfer) ([]byte, error) { return []byte("[INFO] transfer " + tr.TransferID), nil }
	runs := 0
	h := event.Wrap(testguard.Mem(t), cfg, runTransfer(&runs))
	in := transfer{TransferID: "tr_1"}
	for i := range 2 {
		if r, err := h(context.Background(), in); err != nil || r.Run != 1 {
			t.Errorf("call %d: %+v %v", i, r, err)
		}
	}
}
