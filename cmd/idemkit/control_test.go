package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
)

// TestControlCharactersQuoted: text stored in a record (an operation from
// a request's path, a tenant, header values, an operator's name and
// reason) that holds control characters is printed quoted in the table
// output, so that it can neither send escape sequences to the operator's
// terminal nor forge a row of the listing.
func TestControlCharactersQuoted(t *testing.T) {
	f := newFixture(t)
	const forged = "\nacme  POST /refunds  innocent-key  1h00m"
	evil := idemkit.Scope{Tenant: "acme\x1b]0;pwned\x07", Operation: "POST /orders/\x1b[2J" + forged, Key: "evil-1"}
	f.seedIndeterminate(idemkit.Scope{Tenant: evil.Tenant, Operation: "POST /orders", Key: "evil\x1b[2J" + forged}, time.Now().Add(-time.Hour))
	f.seedIndeterminate(evil, time.Now().Add(-time.Hour))
	done := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "evil-2"}
	f.seedCompleted(done, &idemkit.Snapshot{Status: 201, Header: http.Header{"Location": {"/orders/1\x1b[31m\r\nStatus  200"}}})
	resolved := scopeOf("evil-3")
	rec := f.seedIndeterminate(resolved, time.Now().Add(-time.Hour))
	if _, err := f.store.Resolve(t.Context(), rec.ID, idemkit.Resolution{As: idemkit.StateFailed, Operator: "mallory\x1b[8m", Reason: "ok\u009b2J\nResolved as   completed"}, time.Now()); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{
		{"list", "--tenant", evil.Tenant},
		append([]string{"inspect"}, scopeArgs(evil)...),
		append([]string{"inspect"}, scopeArgs(done)...),
		append([]string{"inspect"}, scopeArgs(resolved)...),
		append([]string{"resolve", "--as", "failed", "--reason", "r"}, scopeArgs(resolved)...),
	} {
		t.Run(args[0]+" "+args[len(args)-1], func(t *testing.T) {
			_, stdout, stderr := f.run(args...)
			for name, out := range map[string]string{"stdout": stdout, "stderr": stderr} {
				if strings.ContainsAny(out, "\x1b\x07\r\u009b") {
					t.Errorf("%s holds a control character: %q", name, out)
				}
				for _, line := range strings.Split(out, "\n") {
					if strings.HasPrefix(line, "acme  POST /refunds") || strings.HasPrefix(line, "Status  200") || strings.HasPrefix(line, "Resolved as   completed") {
						t.Errorf("%s has a forged line %q:\n%s", name, line, out)
					}
				}
			}
		})
	}
}
