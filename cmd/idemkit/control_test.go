package main

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

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
	evil := idemkit.Scope{Tenant: "acme\x1b]0;pwned\x07", Operation: "POST /orders/\x1b[2J\u009b2J\u202e" + forged, Key: "evil-1"}
	f.seedIndeterminate(idemkit.Scope{Tenant: evil.Tenant, Operation: "POST /orders", Key: "evil\x1b[2J" + forged}, time.Now().Add(-time.Hour))
	f.seedIndeterminate(evil, time.Now().Add(-time.Hour))
	done := idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "evil-2"}
	f.seedCompleted(done, &idemkit.Snapshot{Status: 201, Header: http.Header{"Location": {"/orders/1\x1b[31m\r\nStatus  200"}}})
	resolved := scopeOf("evil-3")
	rec := f.seedIndeterminate(resolved, time.Now().Add(-time.Hour))
	if _, _, err := idemkit.Resolve(t.Context(), f.store, rec.ID, idemkit.Resolution{As: idemkit.StateFailed, Operator: "mallory\x1b[8m", Reason: "ok\u009b2J\nResolved as   completed"}, time.Now()); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{
		{"list", "--tenant", evil.Tenant},
		{"list", "--output", "json", "--tenant", evil.Tenant},
		append([]string{"inspect"}, scopeArgs(evil)...),
		append([]string{"inspect", "--output", "json"}, scopeArgs(evil)...),
		append([]string{"inspect"}, scopeArgs(done)...),
		append([]string{"inspect"}, scopeArgs(resolved)...),
		append([]string{"resolve", "--as", "failed", "--reason", "r"}, scopeArgs(resolved)...),
	} {
		t.Run(strings.Join(args[:3], " ")+" "+args[len(args)-1], func(t *testing.T) {
			_, stdout, stderr := f.run(args...)
			for name, out := range map[string]string{"stdout": stdout, "stderr": stderr} {
				if strings.ContainsAny(out, terminalActs) {
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

// terminalActs holds characters a terminal acts on or that reorder or hide
// text: no output mode may print them raw.
const terminalActs = "\x1b\x07\r\u009b\u2028\u202e\u202c\u2066\u2069\u200b\ufeff"

// TestBodyQuotedInTable: inspect --body in the table output prints a text
// body holding control characters (a carriage return, an escape sequence,
// a C1 control) quoted as a Go string, so that it can neither act on the
// terminal nor forge a line of the record; --output json gives it exact.
func TestBodyQuotedInTable(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		key, body string
	}{
		{"crlf", "{\"id\":1}\r\nStatus        500\r\n"},
		{"overwrite", "charged\rResolved as   failed"},
		{"escape", "ok\x1b[2J\x1b]0;pwned\x07"},
		{"c1", "ok\u009b2J\u2028Resolved as   failed"},
		{"bidi", "refund \u202e001$\u202c \u2066x\u2069"},
		{"zero-width", "ord\u200b_1\ufeff"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			s := scopeOf("body-" + tc.key)
			f.seedCompleted(s, &idemkit.Snapshot{Status: 200, Body: []byte(tc.body)})
			code, stdout, stderr := f.run(append([]string{"inspect", "--body"}, scopeArgs(s)...)...)
			wantCode(t, code, exitOK, stdout, stderr)
			if strings.ContainsAny(stdout, terminalActs) {
				t.Errorf("stdout holds a control or format character: %q", stdout)
			}
			for _, line := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(line, "Status        500") || strings.HasPrefix(line, "Resolved as") {
					t.Errorf("forged line %q:\n%s", line, stdout)
				}
			}
			if want := "printed quoted as a Go string"; !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout)
			}
			if q := strconv.Quote(tc.body); !strings.Contains(stdout, "\n"+q+"\n") {
				t.Errorf("stdout lacks the quoted body %s:\n%s", q, stdout)
			}
			code, stdout, stderr = f.run(append([]string{"inspect", "--body", "--output", "json"}, scopeArgs(s)...)...)
			wantCode(t, code, exitOK, stdout, stderr)
			if strings.ContainsAny(stdout, terminalActs) {
				t.Errorf("json output holds a raw control or format character: %q", stdout)
			}
			got := decode[recordJSON](t, stdout).Snapshot
			if got == nil || got.Body == nil {
				t.Fatalf("json snapshot %+v, want the body", got)
			}
			exact := *got.Body
			if got.BodyEncoding == "base64" {
				b, err := base64.StdEncoding.DecodeString(exact)
				if err != nil {
					t.Fatal(err)
				}
				exact = string(b)
			}
			if exact != tc.body {
				t.Errorf("json body %q (%s), want %q exact", *got.Body, got.BodyEncoding, tc.body)
			}
		})
	}
}

// TestInvisibleTenantsTellApart: two tenants that differ only by a rune a
// terminal draws as nothing or as a blank (U+034F, a variation selector,
// a Hangul filler) are listed and inspected so that an operator sees two
// different tenants.
func TestInvisibleTenantsTellApart(t *testing.T) {
	f := newFixture(t)
	tenants := []string{"tenant-a", "tenant-a\u034f", "tenant-a\ufe0f", "tenant-a\u3164", "tenant-a\uffa0", "tenant-a\u115f"}
	for _, tn := range tenants {
		f.seedIndeterminate(idemkit.Scope{Tenant: tn, Operation: "POST /orders", Key: "k1"}, time.Now().Add(-time.Hour))
	}
	code, stdout, stderr := f.run("list")
	wantCode(t, code, exitOK, stdout, stderr)
	// Each tenant is ASCII but for its one invisible rune: what is shown
	// of it must be ASCII, else the rune is printed raw, as nothing.
	shown := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n")[1:] {
		if strings.ContainsFunc(line, func(r rune) bool { return r > unicode.MaxASCII }) {
			t.Errorf("a tenant printed raw: %q", line)
		}
		shown[strings.Fields(line)[0]] = true
	}
	if len(shown) != len(tenants) {
		t.Errorf("%d tenants listed as %d distinct ones:\n%s", len(tenants), len(shown), stdout)
	}
	seen := map[string]string{}
	for _, tn := range tenants {
		code, stdout, stderr := f.run(append([]string{"inspect"}, scopeArgs(idemkit.Scope{Tenant: tn, Operation: "POST /orders", Key: "k1"})...)...)
		wantCode(t, code, exitOK, stdout, stderr)
		for _, line := range strings.Split(stdout, "\n") {
			if strings.HasPrefix(line, "Tenant") {
				if strings.ContainsFunc(line, func(r rune) bool { return r > unicode.MaxASCII }) {
					t.Errorf("tenant %q printed raw: %q", tn, line)
				}
				if other, ok := seen[line]; ok {
					t.Errorf("tenants %q and %q both shown as %q", other, tn, line)
				}
				seen[line] = tn
			}
		}
	}
}
