package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit/internal/recordid"
)

// TestResolutionBounds: resolve's flags are checked at their documented
// bounds before anything is read or written: a timeout must be positive;
// a tenant, a reason and an operator are accepted up to their limits and
// refused one byte over; a status must be 100 to 599; --as failed takes no
// part of an answer.
func TestResolutionBounds(t *testing.T) {
	valid := func() resolveFlags {
		rf := resolveFlags{as: "completed", reason: "checked the ledger", operator: "ops", status: 201}
		rf.common = common{store: StoreOptions{Table: "idemkit"}, output: "table", timeout: 30 * time.Second}
		rf.scope = scopeFlags{tenant: "acme", operation: "POST /orders", key: "k"}
		return rf
	}
	for _, tc := range []struct {
		name string
		mod  func(*resolveFlags)
		ok   bool
	}{
		{"valid", func(*resolveFlags) {}, true},
		{"zero timeout", func(rf *resolveFlags) { rf.timeout = 0 }, false},
		{"negative timeout", func(rf *resolveFlags) { rf.timeout = -time.Second }, false},
		{"tenant at its limit", func(rf *resolveFlags) { rf.scope.tenant = strings.Repeat("t", recordid.MaxTenantLen) }, true},
		{"tenant over its limit", func(rf *resolveFlags) { rf.scope.tenant = strings.Repeat("t", recordid.MaxTenantLen+1) }, false},
		{"reason at its limit", func(rf *resolveFlags) { rf.reason = strings.Repeat("r", maxReason) }, true},
		{"reason over its limit", func(rf *resolveFlags) { rf.reason = strings.Repeat("r", maxReason+1) }, false},
		{"operator at its limit", func(rf *resolveFlags) { rf.operator = strings.Repeat("o", maxOperator) }, true},
		{"operator over its limit", func(rf *resolveFlags) { rf.operator = strings.Repeat("o", maxOperator+1) }, false},
		{"status 100", func(rf *resolveFlags) { rf.status = 100 }, true},
		{"status 599", func(rf *resolveFlags) { rf.status = 599 }, true},
		{"status 99", func(rf *resolveFlags) { rf.status = 99 }, false},
		{"status 600", func(rf *resolveFlags) { rf.status = 600 }, false},
		{"failed", func(rf *resolveFlags) { rf.as, rf.status = "failed", 0 }, true},
		{"failed with a header", func(rf *resolveFlags) {
			rf.as, rf.status, rf.header.h = "failed", 0, http.Header{"Location": {"/orders/1"}}
		}, false},
		{"failed with --body-base64", func(rf *resolveFlags) { rf.as, rf.status, rf.bodyBase64 = "failed", 0, true }, false},
	} {
		rf := valid()
		tc.mod(&rf)
		c := &cli{env: Env{}.withDefaults()}
		_, id, err := c.resolution(&rf)
		switch {
		case tc.ok && (err != nil || id == ""):
			t.Errorf("%s: refused: %v", tc.name, err)
		case !tc.ok && exitCode(err) != exitUsage:
			t.Errorf("%s: %v (exit %d), want a usage error", tc.name, err, exitCode(err))
		}
	}
}
