package recordid

import (
	"errors"
	"strings"
	"testing"
)

type scope struct{ tenant, operation, key string }

func (s scope) id(aw bool) string { return Encode(s.tenant, s.operation, s.key, aw) }

// TestParseRoundTrip: Parse reads back the scope of every readable ID,
// per operation and account-wide, and refuses what Encode never makes.
func TestParseRoundTrip(t *testing.T) {
	for _, s := range []scope{
		{"acme", "POST /orders", "k"},
		{"a|1:b", "2:x|", "3:y:z"},
		{"t", "", ""},
		{"ü", "PATCH /é", `"k"`},
	} {
		for _, aw := range []bool{false, true} {
			tenant, op, key, gotAW, err := Parse(s.id(aw))
			want := s
			if aw {
				want.operation = ""
			}
			if got := (scope{tenant, op, key}); err != nil || got != want || gotAW != aw {
				t.Fatalf("Parse(%q) = %+v, %v, %v; want %+v, %v", s.id(aw), got, gotAW, err, want, aw)
			}
		}
	}
	for _, bad := range []string{"", "x1|1:a", "o1|", "o1|1:a", "o1|2:a1:b1:c", "o1|1:a1:b1:cX", "o1|-1:a", "o1|01:a1:b1:c", "a1|1:a"} {
		if _, _, _, _, err := Parse(bad); err == nil {
			t.Fatalf("Parse(%q) accepted a malformed ID", bad)
		}
	}
}

// TestTenant: the tenant of a readable or hashed ID is read back, per
// operation and account-wide, an empty one too; an ID of no known
// encoding, or with a hashed tenant, is refused.
func TestTenant(t *testing.T) {
	long := strings.Repeat("x", 3000)
	for _, sc := range []scope{
		{"acme", "POST /orders", "k"},
		{"t|1:2 \u00fc", "PATCH /x", `"q"`},
		{"12:ab", "", "3:x"},
		{"", "op", "k"},
		{"acme", "POST /" + long, "k"},
		{strings.Repeat("t", MaxTenantLen), "POST /" + long, "k"},
	} {
		for _, aw := range []bool{false, true} {
			id := sc.id(aw)
			if len(id) > MaxLen {
				t.Fatalf("ID of %d bytes, over MaxLen", len(id))
			}
			got, err := Tenant(id)
			if err != nil || got != sc.tenant {
				t.Errorf("Tenant(%.40q) = %.20q, %v; want %.20q", id, got, err, sc.tenant)
			}
			hashed := len(sc.operation) > MaxLen && !aw // account-wide IDs leave the operation out
			if _, _, _, _, err := Parse(id); hashed != errors.Is(err, ErrHashed) || !hashed && err != nil {
				t.Errorf("Parse(%.40q): %v, hashed %v", id, err, hashed)
			}
		}
	}
	hashedTenant := scope{strings.Repeat("t", 4096), "POST /orders", "k"}
	for _, id := range []string{"", "x1|4:acme", "o1|", "o1|4acme", "o1|9:acme", "o1|-1:a", "o1|04:acme", "o1|+4:acme",
		"o1h|", "o1h|1:a", "o1h|1:a" + strings.Repeat("z", 64), "a1h|x:" + strings.Repeat("0", 64), hashedTenant.id(false), hashedTenant.id(true)} {
		if got, err := Tenant(id); err == nil {
			t.Errorf("Tenant(%.40q) = %q, want an error", id, got)
		}
	}
}
