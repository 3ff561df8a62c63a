package httpproblem_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/idemkit/idemkit/httpproblem"
)

// TestProblemResponse: the default response of every problem is typed,
// never cached and never sniffed; Retry-After is sent exactly when the
// problem names a delay, in the same whole seconds as its retryAfter
// member; the body is the problem, zero extension members left out.
func TestProblemResponse(t *testing.T) {
	base := http.Header{"Content-Type": {"application/problem+json"}, "Cache-Control": {"no-store"}, "X-Content-Type-Options": {"nosniff"}}
	for _, tc := range []struct {
		name       string
		p          httpproblem.Details
		retryAfter string
		body       string
	}{
		{"no delay", httpproblem.Details{Type: httpproblem.TypeFingerprintMismatch, Title: "t", Status: 422, Detail: "d"}, "",
			`{"type":"https://idemkit.dev/problems/fingerprint-mismatch","title":"t","status":422,"detail":"d"}`},
		{"1 s", httpproblem.Details{Status: 409, RetryAfter: 1}, "1", `{"type":"","title":"","status":409,"detail":"","retryAfter":1}`},
		{"30 s", httpproblem.Details{Status: 503, RetryAfter: 30}, "30", `{"type":"","title":"","status":503,"detail":"","retryAfter":30}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.p.Response()
			want := base.Clone()
			if tc.retryAfter != "" {
				want["Retry-After"] = []string{tc.retryAfter}
			}
			if r.Status != tc.p.Status || !reflect.DeepEqual(r.Header, want) {
				t.Errorf("%d %v, want %d %v", r.Status, r.Header, tc.p.Status, want)
			}
			if string(r.Body) != tc.body || !json.Valid(r.Body) {
				t.Errorf("body %s, want %s", r.Body, tc.body)
			}
		})
	}
}
