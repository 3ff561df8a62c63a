package event_test

import (
	"context"
	"errors"
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/event"
)

// TestExecutionID: a wrapped function's ExecutionID is the same for every
// delivery of one input (tenant, operation, key), a failed run's
// redelivery included, and differs wherever one of them does. The key is
// the business identifier of what the input acts on, so no resource
// beyond it names the input.
func TestExecutionID(t *testing.T) {
	type in struct{ Tenant, Key string }
	run := func(op string, fail bool, x in) (ids []string) {
		cfg := event.Config[in]{
			Key:       func(x in) (string, error) { return x.Key, nil },
			Tenant:    func(_ context.Context, x in) (string, error) { return x.Tenant, nil },
			Operation: op,
		}
		fn := event.Wrap(testguard.Mem(t), cfg, func(ctx context.Context, _ in) (string, error) {
			id, _ := idemkit.ExecutionID(ctx)
			ids = append(ids, id)
			if fail {
				fail = false
				return "", errors.New("downstream timeout")
			}
			return "done", nil
		})
		for range 2 { // a delivery, then its redelivery
			fn(context.Background(), x)
		}
		return ids
	}
	first := run("transfers.execute", true, in{"acct-1", "tr-1"})
	if len(first) != 2 || first[0] == "" || first[0] != first[1] {
		t.Fatalf("a failed run and its redelivery: identities %q, want one", first)
	}
	for name, ids := range map[string][]string{
		"another tenant":    run("transfers.execute", false, in{"acct-2", "tr-1"}),
		"another key":       run("transfers.execute", false, in{"acct-1", "tr-2"}),
		"another operation": run("transfers.refund", false, in{"acct-1", "tr-1"}),
	} {
		if len(ids) != 1 || ids[0] == "" || ids[0] == first[0] {
			t.Errorf("%s: identities %q, want one other than %s", name, ids, first[0])
		}
	}
}
