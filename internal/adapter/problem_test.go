package adapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/idemkey"
)

// TestProblemFor pins the guard error -> status and type table.
func TestProblemFor(t *testing.T) {
	done := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		typ        string
		retryAfter int
	}{
		{"missing tenant", idemkit.ErrTenantMissing, 500, httpproblem.TypeTenantMissing, 0},
		{"key too long", fmt.Errorf("%w: 300 bytes", idemkey.ErrTooLong), 400, httpproblem.TypeKeyInvalid, 0},
		{"two key values", idemkey.ErrMultiple, 400, httpproblem.TypeKeyInvalid, 0},
		{"key expired", fmt.Errorf("%w: key time x", idemkit.ErrKeyExpired), 400, httpproblem.TypeKeyExpired, 0},
		{"operation mismatch", fmt.Errorf("%w: first used for %q", idemkit.ErrOperationMismatch, "POST /a"), 422, httpproblem.TypeOperationMismatch, 0},
		{"fingerprint mismatch", idemkit.ErrFingerprintMismatch, 422, httpproblem.TypeFingerprintMismatch, 0},
		{"in flight, 2.2 s left", &idemkit.ConflictError{RetryAfter: 2200 * time.Millisecond}, 409, httpproblem.TypeInFlight, 3},
		{"in flight, no time", &idemkit.ConflictError{}, 409, httpproblem.TypeInFlight, 1},
		{"indeterminate", idemkit.ErrIndeterminate, 409, httpproblem.TypeIndeterminate, 0},
		{"outcome pending", &idemkit.ConflictError{Reason: idemkit.ErrOutcomePending, RetryAfter: 4500 * time.Millisecond, Until: done}, 409, httpproblem.TypeOutcomePending, 5},
		{"replay window passed", &idemkit.OutcomeError{Reason: idemkit.ErrReplayWindowPassed, Status: 201, Location: "/o/1", CompletedAt: done}, 410, httpproblem.TypeReplayWindowPassed, 0},
		{"snapshot omitted", &idemkit.OutcomeError{Reason: idemkit.ErrSnapshotOmitted, Status: 200, CompletedAt: done}, 410, httpproblem.TypeResponseNotStored, 0},
		{"corrupt record", fmt.Errorf("idemkit: store get: %w", idemkit.ErrCorruptRecord), 500, httpproblem.TypeCorruptRecord, 0},
		{"store error", &idemkit.StoreError{Op: "claim", Err: errors.New("throttled")}, 503, httpproblem.TypeStoreUnavailable, 2},
		{"record refused by the store", fmt.Errorf("idemkit: store claim: %w", idemkit.ErrRecordInvalid), 500, httpproblem.TypeGuardFailure, 0},
		{"tenant too long", idemkit.ErrTenantTooLong, 500, httpproblem.TypeTenantMissing, 0},
		{"path too long", httpconfig.ErrPathTooLong, 414, httpproblem.TypePathTooLong, 0},
		{"query too large", httpconfig.ErrQueryTooLarge, 414, httpproblem.TypeQueryTooLarge, 0},
		{"unknown", errors.New("surprise"), 500, httpproblem.TypeGuardFailure, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ProblemFor(tc.err, 1500*time.Millisecond)
			if p.Status != tc.status || p.Type != tc.typ || p.RetryAfter != tc.retryAfter || p.Title == "" || p.Detail == "" {
				t.Fatalf("%+v, want %d %s retryAfter %d", p, tc.status, tc.typ, tc.retryAfter)
			}
			h := p.Response().Header
			if h.Get("Content-Type") != httpproblem.ContentType || h.Get("X-Content-Type-Options") != "nosniff" || (tc.retryAfter > 0) != (h.Get("Retry-After") != "") {
				t.Errorf("headers %v", h)
			}
			var m map[string]any
			if err := json.Unmarshal(p.Response().Body, &m); err != nil || m["status"] != float64(tc.status) {
				t.Errorf("body %s", p.Response().Body)
			}
			if oe := (*idemkit.OutcomeError)(nil); errors.As(tc.err, &oe) {
				if m["originalStatus"] != float64(oe.Status) || m["completedAt"] != "2026-01-02T03:04:05Z" {
					t.Errorf("outcome members missing: %s", p.Response().Body)
				}
			}
		})
	}
}

// TestAllowList: defaults, additions, and the names that are refused.
func TestAllowList(t *testing.T) {
	got, err := allowList([]string{"x-order-id", "location"})
	if err != nil || fmt.Sprint(got) != "[Content-Type Content-Encoding Location X-Order-Id]" {
		t.Errorf("%v %v", got, err)
	}
	for _, n := range []string{"Set-Cookie", "DATE", "Retry-After", "RateLimit-Policy", "X-RateLimit-Remaining", "X-Amzn-RequestId", "Traceparent", "Idempotent-Replayed", "Content-Length"} {
		if _, err := allowList([]string{n}); err == nil {
			t.Errorf("%s accepted", n)
		}
	}
}

// TestEcho: an echoed fragment is at most MaxEchoBytes bytes of valid
// UTF-8, cut on a rune boundary; a short valid one is kept as it is.
func TestEcho(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short", "unexpected end of JSON", "unexpected end of JSON"},
		{"exactly the bound", strings.Repeat("a", MaxEchoBytes), strings.Repeat("a", MaxEchoBytes)},
		{"one over", strings.Repeat("a", MaxEchoBytes+1), strings.Repeat("a", MaxEchoBytes-3) + "..."},
		{"2 MB", strings.Repeat("a", 2<<20), strings.Repeat("a", MaxEchoBytes-3) + "..."},
		{"cut inside a rune", strings.Repeat("a", MaxEchoBytes-4) + strings.Repeat("é", 100), strings.Repeat("a", MaxEchoBytes-4) + "..."},
		{"invalid UTF-8", "bad \xff byte", "bad \uFFFD byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Echo(tc.in)
			if got != tc.want {
				t.Errorf("Echo = %q, want %q", got, tc.want)
			}
			if len(got) > MaxEchoBytes || !utf8.ValidString(got) {
				t.Errorf("Echo returned %d bytes, valid UTF-8 %v", len(got), utf8.ValidString(got))
			}
		})
	}
}

// TestBodyInvalidBounded: the detail of a body-invalid problem stays small
// when the error quotes a huge body.
func TestBodyInvalidBounded(t *testing.T) {
	err := fmt.Errorf("fingerprint: invalid number %q", strings.Repeat("9", 2<<20))
	p := BodyInvalid(err)
	if len(p.Detail) > 400 || len(p.Response().Body) > 1024 {
		t.Fatalf("detail %d bytes, body %d bytes", len(p.Detail), len(p.Response().Body))
	}
}
