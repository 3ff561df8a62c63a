package event_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/idemkey"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/event"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/tenant"
)

// transferConfig keys a transfer by its id, with no Payload: the whole
// input is compared.
var transferConfig = event.Config[transfer]{
	Key:       func(t transfer) (string, error) { return t.TransferID, nil },
	Tenant:    tenant.Single[transfer]("acme"),
	Operation: "transfers.execute",
}

func runTransfer(runs *int) func(context.Context, transfer) (receipt, error) {
	return func(_ context.Context, t transfer) (receipt, error) {
		*runs++
		return receipt{TransferID: t.TransferID, Run: int32(*runs)}, nil
	}
}

// TestDefaultPayload: without Payload the whole input is fingerprinted: a
// redelivery of the same input gets the stored result, and another input
// under the same key is ErrFingerprintMismatch, never the first result.
func TestDefaultPayload(t *testing.T) {
	runs := 0
	h := event.Wrap(testguard.Mem(t), transferConfig, runTransfer(&runs))
	in := transfer{TransferID: "tr_1", Account: "acct-acme", Amount: 100}
	first := testkit.Call(t, h, in)
	if again, err := h(context.Background(), in); err != nil || again != first {
		t.Errorf("redelivery: %+v %v, want %+v", again, err, first)
	}
	for _, other := range []transfer{{TransferID: "tr_1", Account: "acct-acme", Amount: 200}, {TransferID: "tr_1", Account: "acct-other", Amount: 100}} {
		if got, err := h(context.Background(), other); !errors.Is(err, idemkit.ErrFingerprintMismatch) {
			t.Errorf("%+v under the same key: %+v %v, want ErrFingerprintMismatch", other, got, err)
		}
	}
	if runs != 1 {
		t.Errorf("ran %d times, want 1", runs)
	}
}

// TestKeyLength: a key is accepted up to MaxKeyLen bytes (255 when zero)
// and refused one byte over, before anything runs.
func TestKeyLength(t *testing.T) {
	for _, tc := range []struct {
		max, n int
		ok     bool
	}{{0, 255, true}, {0, 256, false}, {8, 8, true}, {8, 9, false}} {
		cfg := transferConfig
		cfg.MaxKeyLen = tc.max
		runs := 0
		_, err := event.Wrap(testguard.Mem(t), cfg, runTransfer(&runs))(context.Background(), transfer{TransferID: strings.Repeat("k", tc.n)})
		if tc.ok != (err == nil) || (!tc.ok && (!errors.Is(err, idemkey.ErrTooLong) || runs != 0)) {
			t.Errorf("MaxKeyLen %d, %d-byte key: %v after %d runs, want accepted %v", tc.max, tc.n, err, runs, tc.ok)
		}
	}
}

// TestStoredAnswerNotAResult: a completed record whose answer is not a
// result this package stored (an operator's resolution with another
// status) is ErrCorruptRecord, never decoded into a result as if it had
// been returned.
func TestStoredAnswerNotAResult(t *testing.T) {
	store := memstore.New()
	g := testguard.New(t, idemkit.Config{Store: store})
	in := transfer{TransferID: "tr_1", Account: "acct-acme", Amount: 100}
	payload, _ := json.Marshal(in)
	fp, err := fingerprint.Compute(fingerprint.Input{ContentType: "application/json", Body: payload}, fingerprint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s := idemkit.Scope{Tenant: "acme", Operation: "transfers.execute", Key: "tr_1"}
	rec := &idemkit.Record{ID: s.ID(false), Scope: s, State: idemkit.StateInFlight, Owner: "operator", Version: "operator", Fingerprint: fp,
		CreatedAt: now.Add(-time.Minute), LeaseUntil: now, ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(24 * time.Hour)}
	if met, err := store.Create(context.Background(), rec); err != nil || met != nil {
		t.Fatalf("seed: %+v %v", met, err)
	}
	done := rec.Clone()
	done.State, done.CompletedAt, done.Version = idemkit.StateCompleted, now.Add(-time.Minute), "operator.1"
	done.Snapshot = &idemkit.Snapshot{Status: 201, Body: []byte(`{"transferId":"tr_1","run":7}`)}
	if met, err := store.Replace(context.Background(), done, rec); err != nil || met != nil {
		t.Fatalf("seed: %+v %v", met, err)
	}
	runs := 0
	got, err := event.Wrap(g, transferConfig, runTransfer(&runs))(context.Background(), in)
	if !errors.Is(err, idemkit.ErrCorruptRecord) || runs != 0 || got != (receipt{}) {
		t.Errorf("%+v %v after %d runs, want ErrCorruptRecord without a run", got, err, runs)
	}
}
