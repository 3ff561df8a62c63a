package main

import (
	"context"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/memstore"
)

// TestResolveStaleMarkFails: resolving an in_flight record whose lease
// ended first marks it indeterminate; when that mark fails, resolve stops
// with the mark's error (an outage: exit 5) and writes nothing, rather
// than going on to a resolution that then fails for another reason. The
// lease ended an hour ago: long past the time a failed decision waits.
func TestResolveStaleMarkFails(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	mem := memstore.New()
	s := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k"}
	id := s.ID(false)
	rec := &idemkit.Record{ID: id, Scope: s, State: idemkit.StateInFlight, Owner: "owner-1", Version: "claim-1",
		CreatedAt: now.Add(-time.Hour), LeaseUntil: now.Add(-time.Hour), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(24 * time.Hour)}
	if met, err := mem.Create(ctx, rec); err != nil || met != nil {
		t.Fatalf("seed: %+v %v", met, err)
	}
	// The mark fails as an outage does.
	out, prev, err := idemkit.Resolve(ctx, writesFail{mem}, id, idemkit.Resolution{As: idemkit.StateFailed, Reason: "r", Operator: "ops"}, now)
	if prev != idemkit.StateInFlight || out != nil || exitCode(err) != exitUnavailable {
		t.Errorf("resolve: was %s, %v, %v (exit %d); want in_flight, nothing, exit %d", prev, out, err, exitCode(err), exitUnavailable)
	}
	if got, err := mem.Get(ctx, id); err != nil || got.State != idemkit.StateInFlight || got.Version != rec.Version || got.Resolution != nil {
		t.Errorf("record after a failed mark: %+v %v; want it unchanged", got, err)
	}
}
