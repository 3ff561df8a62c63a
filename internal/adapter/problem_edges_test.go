package adapter

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpproblem"
)

// TestProblemForEdges: the cases of the problem table that TestProblemFor
// leaves open.
func TestProblemForEdges(t *testing.T) {
	t.Run("in flight without a ConflictError", func(t *testing.T) {
		// A store may report ErrInFlight bare: the client still gets a
		// delay to wait, never a 409 it would retry at once.
		p := ProblemFor(fmt.Errorf("store: %w", idemkit.ErrInFlight), time.Second)
		if p.Status != 409 || p.Type != httpproblem.TypeInFlight || p.RetryAfter != 1 || p.Response().Header.Get("Retry-After") != "1" {
			t.Errorf("%+v, want 409 in-flight with Retry-After 1", p)
		}
	})
	t.Run("completedAt in UTC", func(t *testing.T) {
		done := time.Date(2026, 1, 2, 5, 4, 5, 0, time.FixedZone("EET", 2*3600))
		p := ProblemFor(&idemkit.OutcomeError{Reason: idemkit.ErrReplayWindowPassed, Status: 201, CompletedAt: done}, time.Second)
		if p.CompletedAt != "2026-01-02T03:04:05Z" {
			t.Errorf("completedAt %q, want 2026-01-02T03:04:05Z", p.CompletedAt)
		}
	})
	t.Run("no completedAt when unknown", func(t *testing.T) {
		p := ProblemFor(&idemkit.OutcomeError{Reason: idemkit.ErrSnapshotOmitted, Status: 201, Location: "/orders/1"}, time.Second)
		var m map[string]any
		if err := json.Unmarshal(p.Response().Body, &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["completedAt"]; ok || p.Status != 410 || m["location"] != "/orders/1" || m["originalStatus"] != float64(201) {
			t.Errorf("body %s: want 410 with location and originalStatus, without completedAt", p.Response().Body)
		}
	})
	t.Run("record refused by the store", func(t *testing.T) {
		// Not a store outage: the detail must not invite a retry.
		p := ProblemFor(fmt.Errorf("dynamo: claim: %w: ValidationException", idemkit.ErrRecordInvalid), time.Second)
		if p.Status != 500 || p.Type != httpproblem.TypeGuardFailure || p.RetryAfter != 0 || !strings.Contains(p.Detail, "cannot succeed") {
			t.Errorf("%+v, want a 500 guard-failure saying a retry cannot succeed", p)
		}
	})
}

// TestDecodeQueryPlusInName: a "+" in a name alone (values plain) is a
// space, as in a value: a retry that spells it %20 is the same query.
func TestDecodeQueryPlusInName(t *testing.T) {
	want := map[string][]string{"sort by": {"date"}}
	for _, q := range []map[string][]string{{"sort+by": {"date"}}, {"sort%20by": {"date"}}} {
		if got := DecodeQuery(q); !reflect.DeepEqual(got, want) {
			t.Errorf("DecodeQuery(%q) = %q, want %q", q, got, want)
		}
	}
}
