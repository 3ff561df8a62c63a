package idemkit_test

import (
	"strings"
	"testing"

	"github.com/idemkit/idemkit"
)

func TestScopeIDUnambiguous(t *testing.T) {
	// Field values that contain the encoding's separators and digits must
	// never make two different scopes share an ID.
	scopes := []idemkit.Scope{
		{Tenant: "a", Operation: "POST /x", Key: "k"},
		{Tenant: "a|", Operation: "POST /x", Key: "k"},
		{Tenant: "a", Operation: "|POST /x", Key: "k"},
		{Tenant: "a1:", Operation: "POST /x", Key: "k"},
		{Tenant: "a", Operation: "1:POST /x", Key: "k"},
		{Tenant: "a:7:POST /x", Operation: "", Key: "k"},
		{Tenant: "a", Operation: "POST /x1:k", Key: ""},
		{Tenant: "a", Operation: "POST /x", Key: "1:k"},
		{Tenant: "", Operation: "1:aPOST /x", Key: "k"},
		{Tenant: "1:a", Operation: "POST /x", Key: "k"},
		{Tenant: "t", Operation: "o", Key: "1:k"},
		{Tenant: "t", Operation: "o1:k", Key: ""},
		{Tenant: "t1:o", Operation: "", Key: "k"},
	}
	seen := map[string]idemkit.Scope{}
	for _, accountWide := range []bool{false, true} {
		for _, s := range scopes {
			id := s.ID(accountWide)
			if accountWide {
				s.Operation = "" // not part of the account-wide identity
			}
			if prev, ok := seen[id]; ok && prev != s {
				t.Fatalf("scopes %+v and %+v share ID %q", prev, s, id)
			}
			seen[id] = s
		}
	}
	a := idemkit.Scope{Tenant: "t", Operation: "POST /a", Key: "k"}
	b := idemkit.Scope{Tenant: "t", Operation: "POST /b", Key: "k"}
	if a.ID(false) == b.ID(false) {
		t.Fatal("two operations share an ID with per-operation keys")
	}
	if a.ID(true) != b.ID(true) {
		t.Fatal("account-wide IDs differ by operation")
	}
	if a.ID(true) == a.ID(false) {
		t.Fatal("account-wide and per-operation IDs collide")
	}
}

// TestHashedIDs: the IDs of scopes too long to be readable are fixed (a
// change would lose every record stored under the old ones, and their
// requests would run again), and are as unambiguous as readable ones:
// moving bytes from one field to the next gives another ID.
func TestHashedIDs(t *testing.T) {
	long := strings.Repeat("o", 2100)
	for _, tc := range []struct {
		scope       idemkit.Scope
		accountWide bool
		want        string
	}{
		{idemkit.Scope{Tenant: "acme", Operation: "POST /" + long, Key: "k-1"}, false, "o1h|4:acme729588b090e408c69560cbf650049bb044e72b9b2bd93a2b153a0df8c357f0ef"},
		{idemkit.Scope{Tenant: "acme", Operation: "POST /o", Key: strings.Repeat("k", 2100)}, true, "a1h|4:acme8e0a25d2fe8c68212a547df55a30def76284ec01b47de5e7af4d673484090835"},
	} {
		if got := tc.scope.ID(tc.accountWide); got != tc.want {
			t.Errorf("ID(%v) of a %d-byte scope = %q, want %q", tc.accountWide, len(tc.scope.Operation)+len(tc.scope.Key), got, tc.want)
		}
	}
	a := idemkit.Scope{Tenant: "acme", Operation: "POST /" + long + "x", Key: "k"}
	b := idemkit.Scope{Tenant: "acme", Operation: "POST /" + long, Key: "xk"}
	c := idemkit.Scope{Tenant: "acmeP", Operation: "OST /" + long, Key: "xk"}
	for _, aw := range []bool{false, true} {
		ids := map[string]idemkit.Scope{}
		for _, s := range []idemkit.Scope{a, b, c} {
			if aw {
				s.Key += long // long enough to be hashed without its operation
			}
			id := s.ID(aw)
			if prev, ok := ids[id]; ok {
				t.Fatalf("account-wide %v: scopes %.40q and %.40q share ID %q", aw, prev, s, id)
			}
			ids[id] = s
		}
	}
}
