package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/recordid"
)

// TestLongScope: a record whose scope is too long for a readable ID (its
// ID is hashed) is found by inspect and resolved by resolve from the
// full tenant, operation and key, and list prints its scope.
func TestLongScope(t *testing.T) {
	f := newFixture(t)
	s := idemkit.Scope{Tenant: "acme", Operation: "POST /orders/" + strings.Repeat("x", 2100), Key: "long-1"}
	if _, _, _, _, err := recordid.Parse(s.ID(false)); !errors.Is(err, recordid.ErrHashed) {
		t.Fatalf("the scope's ID parses (%v); the test needs a hashed one", err)
	}
	f.seedIndeterminate(s, time.Now().Add(-time.Hour))

	code, stdout, stderr := f.run(append([]string{"inspect"}, scopeArgs(s)...)...)
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stdout, "State         indeterminate") || !strings.Contains(stdout, s.Operation) {
		t.Errorf("inspect output:\n%s", stdout)
	}
	code, stdout, stderr = f.run("list", "--tenant", "acme")
	wantCode(t, code, exitOK, stdout, stderr)
	if !strings.Contains(stdout, "long-1") {
		t.Errorf("list output lacks the record:\n%s", stdout)
	}
	code, stdout, stderr = f.run(append([]string{"resolve", "--as", "failed", "--reason", "no charge at the processor"}, scopeArgs(s)...)...)
	wantCode(t, code, exitOK, stdout, stderr)
	if rec := f.get(s); rec.State != idemkit.StateFailed {
		t.Fatalf("state %s after resolve, want failed", rec.State)
	}
}
