package idemkit_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/recordid"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/observe"
)

// TestScopeIDBounded: an ID is at most MaxIDLen bytes whatever the scope;
// one that fits is the readable encoding, as before; a longer one keeps
// its tenant readable and hashes the rest; different scopes keep
// different IDs.
func TestScopeIDBounded(t *testing.T) {
	// fill returns a scope whose readable per-operation ID is n bytes.
	fill := func(tenant string, n int) idemkit.Scope {
		field := func(s string) int { return len(strconv.Itoa(len(s))) + 1 + len(s) }
		s := idemkit.Scope{Tenant: tenant, Operation: "POST /", Key: "k"}
		for len("o1|")+field(s.Tenant)+field(s.Operation)+field(s.Key) < n {
			s.Operation += "x"
		}
		if got := len("o1|") + field(s.Tenant) + field(s.Operation) + field(s.Key); got != n {
			t.Fatalf("cannot build a readable ID of %d bytes (got %d)", n, got)
		}
		return s
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name     string
		scope    idemkit.Scope
		readable bool
	}{
		{"short", idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "k"}, true},
		{"exactly MaxIDLen", fill("acme", recordid.MaxLen), true},
		{"one byte over", fill("acme", recordid.MaxLen+1), false},
		{"long operation", idemkit.Scope{Tenant: "acme", Operation: "POST /" + long(3000), Key: "k"}, false},
		{"long key", idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: long(64 << 10)}, false},
		{"long everything", idemkit.Scope{Tenant: long(recordid.MaxTenantLen), Operation: "POST /" + long(1500), Key: long(255)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := tc.scope.ID(false)
			if len(id) > recordid.MaxLen {
				t.Fatalf("ID of %d bytes, over MaxIDLen", len(id))
			}
			if readable := strings.HasPrefix(id, "o1|"); readable != tc.readable {
				t.Fatalf("ID %.40q readable %v, want %v", id, readable, tc.readable)
			}
			// The same scope gives the same ID; a change of one byte
			// anywhere gives another.
			if tc.scope.ID(false) != id {
				t.Error("ID is not deterministic")
			}
			seen := map[string]string{id: "original"}
			for name, o := range map[string]idemkit.Scope{
				"tenant":    {Tenant: tc.scope.Tenant + "!", Operation: tc.scope.Operation, Key: tc.scope.Key},
				"operation": {Tenant: tc.scope.Tenant, Operation: tc.scope.Operation + "!", Key: tc.scope.Key},
				"key":       {Tenant: tc.scope.Tenant, Operation: tc.scope.Operation, Key: tc.scope.Key + "!"},
			} {
				oid := o.ID(false)
				if prev, ok := seen[oid]; ok {
					t.Errorf("changed %s shares the ID of %s", name, prev)
				}
				seen[oid] = name
			}
			if tc.scope.ID(true) == id {
				t.Error("account-wide and per-operation IDs collide")
			}
		})
	}
}

// TestScopeIDTenantTooLong: a tenant over MaxTenantLen is hashed too; the
// ID stays bounded.
func TestScopeIDTenantTooLong(t *testing.T) {
	s := idemkit.Scope{Tenant: strings.Repeat("t", 4096), Operation: "POST /orders", Key: "k"}
	for _, aw := range []bool{false, true} {
		id := s.ID(aw)
		if len(id) > recordid.MaxLen || strings.Contains(id, s.Tenant) {
			t.Fatalf("ID of %d bytes, holding the tenant: want it bounded and hashed", len(id))
		}
	}
}

// TestLongScopeRunsOnce: a request whose scope is too long for a readable
// ID runs once and is replayed, like any other.
func TestLongScopeRunsOnce(t *testing.T) {
	f := newFixture(t, nil)
	r := req(strings.Repeat("k", 255))
	r.Scope.Operation = "POST /" + strings.Repeat("segment/", 400)
	for i := 0; i < 2; i++ {
		snap, replayed, err := f.do(t, r, respond(201, `{"id":"p1"}`))
		if err != nil || replayed != (i == 1) || snap.Status != 201 {
			t.Fatalf("call %d: %+v replayed %v err %v", i, snap, replayed, err)
		}
	}
	if f.runs != 1 {
		t.Fatalf("ran %d times", f.runs)
	}
}

// TestTenantTooLong: a tenant over MaxTenantLen fails closed before the
// store, as a tenant misconfiguration.
func TestTenantTooLong(t *testing.T) {
	f := newFixture(t, nil)
	r := req("k")
	r.Scope.Tenant = strings.Repeat("t", recordid.MaxTenantLen+1)
	_, _, err := f.do(t, r, respond(201, "x"))
	if !errors.Is(err, idemkit.ErrTenantTooLong) || !errors.Is(err, idemkit.ErrTenantMissing) || f.runs != 0 {
		t.Fatalf("err %v runs %d, want ErrTenantTooLong (ErrTenantMissing) and no run", err, f.runs)
	}
	if e := f.obs.Last(); e.Kind != observe.EventRefused || !errors.Is(e.Err, idemkit.ErrTenantTooLong) {
		t.Fatalf("event %+v, want a refusal", e)
	}
	r.Scope.Tenant = strings.Repeat("t", recordid.MaxTenantLen)
	if _, _, err := f.do(t, r, respond(201, "x")); err != nil || f.runs != 1 {
		t.Fatalf("tenant of MaxTenantLen bytes: %v, runs %d", err, f.runs)
	}
}

// TestRecordInvalidIsNotTransient: a store's refusal of a record as
// invalid is returned as ErrRecordInvalid, never ErrStoreUnavailable (a
// retry with the same key cannot succeed), and nothing runs.
func TestRecordInvalidIsNotTransient(t *testing.T) {
	f, fs := faultFixture(t, nil)
	fs.OnOp(faultstore.OpClaim, faultstore.Fail(errors.Join(idemkit.ErrRecordInvalid, errors.New("ValidationException: key too large"))))
	_, _, err := f.do(t, req("k"), respond(201, "x"))
	if !errors.Is(err, idemkit.ErrRecordInvalid) || errors.Is(err, idemkit.ErrStoreUnavailable) || f.runs != 0 {
		t.Fatalf("err %v runs %d, want ErrRecordInvalid, not ErrStoreUnavailable, and no run", err, f.runs)
	}
}
