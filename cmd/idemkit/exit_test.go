package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/recordid"
)

// TestExitCode: each kind of error maps to its documented exit code,
// wrapped or not.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{usagef("--limit 0"), exitUsage},
		{fmt.Errorf("list: %w", idemkit.ErrInvalidPage), exitUsage},
		{fmt.Errorf("get: %w", idemkit.ErrNotFound), exitNotFound},
		{conflictf("record is completed"), exitConflict},
		{fmt.Errorf("resolve: %w", idemkit.ErrNotIndeterminate), exitConflict},
		{fmt.Errorf("mark: %w", idemkit.ErrNotOwner), exitConflict},
		{&idemkit.ResolveError{Reason: idemkit.ErrMayBeRunning, Record: &idemkit.Record{}}, exitConflict},
		{&idemkit.StoreError{Op: "get", Err: errors.New("throttled")}, exitUnavailable},
		{fmt.Errorf("get: %w", context.DeadlineExceeded), exitUnavailable},
		{fmt.Errorf("get: %w", idemkit.ErrCorruptRecord), exitError},
		{errors.New("operator identity unavailable"), exitError},
		{quietExit(exitOK), exitOK},
		{quietExit(exitError), exitError},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// TestFailQuiet: a command ended by a quietExit (help printed, conform's
// checks failed and reported) gets its code and no line on stderr; any
// other error gets one line naming the command.
func TestFailQuiet(t *testing.T) {
	var stderr strings.Builder
	c := &cli{stderr: &stderr}
	if code := c.fail("conform", quietExit(exitError)); code != exitError || stderr.Len() != 0 {
		t.Fatalf("quietExit: code %d, stderr %q; want %d and nothing", code, stderr.String(), exitError)
	}
	if code := c.fail("list", usagef("--limit 0")); code != exitUsage || stderr.String() != "idemkit list: --limit 0\n" {
		t.Fatalf("usage error: code %d, stderr %q", code, stderr.String())
	}
}

// TestCheckList: --limit is 1 to 1000; --state is indeterminate or stale.
func TestCheckList(t *testing.T) {
	o := &common{store: StoreOptions{Table: "idemkit"}, output: "json", timeout: time.Second}
	for _, tc := range []struct {
		state string
		limit int
		ok    bool
	}{
		{"indeterminate", 1, true}, {"stale", 1000, true},
		{"indeterminate", 0, false}, {"indeterminate", 1001, false}, {"completed", 10, false}, {"", 10, false},
	} {
		if err := checkList(o, tc.state, tc.limit, false, ""); (err == nil) != tc.ok {
			t.Errorf("checkList(--state %q --limit %d) = %v, want ok %v", tc.state, tc.limit, err, tc.ok)
		}
	}
}

// TestIsAccountWide: every form of an account-wide record ID is marked in
// listings (readable, hashed, and hashed for a tenant over MaxTenantLen);
// no per-operation ID is.
func TestIsAccountWide(t *testing.T) {
	scopes := []idemkit.Scope{
		{Tenant: "acme", Operation: "POST /orders", Key: "k"},
		{Tenant: "acme", Operation: "POST /orders", Key: strings.Repeat("k", recordid.MaxLen)},
		{Tenant: strings.Repeat("t", recordid.MaxTenantLen+1), Operation: "POST /orders", Key: strings.Repeat("k", recordid.MaxLen)},
	}
	prefixes := map[string]bool{}
	for _, s := range scopes {
		aw, op := s.ID(true), s.ID(false)
		prefixes[aw[:strings.IndexByte(aw, '|')+1]] = true
		if !isAccountWide(aw) || isAccountWide(op) {
			t.Errorf("%.20s…: account-wide %v for %.8q, %v for %.8q", s.Tenant, isAccountWide(aw), aw, isAccountWide(op), op)
		}
	}
	if len(prefixes) != 3 {
		t.Errorf("the scopes give ID prefixes %v, want all three forms", prefixes)
	}
}

// TestOperatorBlank: an identity that is empty or blank is no identity:
// resolve refuses instead of recording a decision by nobody.
func TestOperatorBlank(t *testing.T) {
	for _, id := range []string{"", "  ", "\t"} {
		c := &cli{env: Env{Operator: func(context.Context, StoreOptions) (string, error) { return id, nil }}.withDefaults()}
		if op, err := c.operator(context.Background(), StoreOptions{}); err == nil {
			t.Errorf("identity %q accepted as operator %q", id, op)
		}
	}
	c := &cli{env: Env{Operator: func(context.Context, StoreOptions) (string, error) { return "arn:aws:iam::1:user/ops", nil }}.withDefaults()}
	if op, err := c.operator(context.Background(), StoreOptions{}); err != nil || op != "arn:aws:iam::1:user/ops" {
		t.Errorf("operator %q, %v", op, err)
	}
}

// TestBodyText: a stored body is shown as text only when it is UTF-8
// without control characters other than tab and line breaks; anything
// else (DEL included) is shown base64.
func TestBodyText(t *testing.T) {
	for _, tc := range []struct {
		body, text, enc string
	}{
		{"{\"id\":1}\n\ttab\r\n", "{\"id\":1}\n\ttab\r\n", "text"},
		{"a\x7fb", "YX9i", "base64"},
		{"a\x1bb", "YRti", "base64"},
		{"\xff", "/w==", "base64"},
	} {
		if text, enc := bodyText([]byte(tc.body)); text != tc.text || enc != tc.enc {
			t.Errorf("bodyText(%q) = %q, %s; want %q, %s", tc.body, text, enc, tc.text, tc.enc)
		}
	}
}
