package idemclient_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/idemclient"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/memstore"
)

// failingStore is memstore with its claims failing with err.
func failingStore(err error) *faultstore.Store {
	fs := faultstore.New(memstore.New())
	fs.OnOp(faultstore.OpClaim, faultstore.Fail(err))
	return fs
}

// omittingStore is memstore storing every response without its body, as
// the DynamoDB store does one too large for an item. It is a store's rule
// of size, not a fault: a faultstore.Store passes every record as given.
type omittingStore struct{ *memstore.Store }

func (s omittingStore) Replace(ctx context.Context, rec, prev *idemkit.Record) (*idemkit.Record, error) {
	if rec.Snapshot == nil {
		return s.Store.Replace(ctx, rec, prev)
	}
	c := *rec
	c.Snapshot = rec.Snapshot.Clone()
	c.Snapshot.Body, c.Snapshot.Omitted = nil, true
	return s.Store.Replace(ctx, &c, prev)
}

// unknownOutcome is a handler that cannot tell whether it took effect.
func unknownOutcome(w http.ResponseWriter, r *http.Request) {
	httpmw.Fail(r.Context(), fmt.Errorf("charge: %w", idemkit.ErrOutcomeUnknown))
}

// TestProblemsNotRetried: every answer of the server's own that a retry
// cannot change, or could make worse, is returned after one attempt as a
// ProblemError of its type, matching the sentinel of its kind, saying
// what a person must check. Each is the real answer of an httpmw guard.
func TestProblemsNotRetried(t *testing.T) {
	type call struct{ path, body string }
	order := call{"/orders", `{"sku":"book-42"}`}
	for _, tc := range []struct {
		name    string
		api     *api
		key     func(now time.Time) string // nil: a new key
		first   *call                      // sent before, under the same key
		advance time.Duration              // moves the clocks after first
		final   call
		typ     string
		status  int
		kind    error
		says    string
	}{
		{name: "key missing", api: &api{mw: httpmw.Config{Settings: httpconfig.Settings{Header: "X-Idempotency-Key"}}}, final: order,
			typ: httpproblem.TypeKeyMissing, status: 400, kind: idemclient.ErrRefused, says: "Config.Header names"},
		{name: "key invalid", api: &api{mw: httpmw.Config{Settings: httpconfig.Settings{MaxKeyLen: 8}}}, final: order,
			typ: httpproblem.TypeKeyInvalid, status: 400, kind: idemclient.ErrRefused, says: "(too long)"},
		{name: "key expired", api: &api{policy: idemkit.Policy{ReplayWindow: time.Hour, RecordRetention: time.Hour}},
			key: func(now time.Time) string { return idemclient.NewKeyAt(now.Add(-2 * time.Hour)) }, final: order,
			typ: httpproblem.TypeKeyExpired, status: 400, kind: idemclient.ErrRetentionPassed, says: "whether the first request took effect"},
		{name: "body invalid", api: &api{}, final: call{"/orders", `{"sku":1,"sku":2}`},
			typ: httpproblem.TypeBodyInvalid, status: 400, kind: idemclient.ErrRefused, says: "encodes the body"},
		{name: "body too large", api: &api{mw: httpmw.Config{MaxBodyBytes: 4}}, final: order,
			typ: httpproblem.TypeBodyTooLarge, status: 413, kind: idemclient.ErrRefused, says: "the body's size"},
		{name: "path too long", api: &api{}, final: call{"/orders/" + strings.Repeat("a", httpconfig.MaxPathLen), `{"sku":"book-42"}`},
			typ: httpproblem.TypePathTooLong, status: 414, kind: idemclient.ErrRefused, says: "builds the path"},
		{name: "query too large", api: &api{}, final: call{"/orders?" + strings.Repeat("a=1&", httpconfig.MaxQueryParams) + "a=1", `{"sku":"book-42"}`},
			typ: httpproblem.TypeQueryTooLarge, status: 414, kind: idemclient.ErrRefused, says: "the query string"},
		{name: "fingerprint mismatch", api: &api{}, first: &order, final: call{"/orders", `{"sku":"book-43"}`},
			typ: httpproblem.TypeFingerprintMismatch, status: 422, kind: idemclient.ErrKeyReused, says: "built the same on every retry"},
		{name: "operation mismatch", api: &api{guard: idemkit.Config{AccountWide: true}}, first: &order, final: call{"/payments", `{"sku":"book-42"}`},
			typ: httpproblem.TypeOperationMismatch, status: 422, kind: idemclient.ErrKeyReused, says: "its own key"},
		{name: "outcome unknown", api: &api{handler: unknownOutcome}, final: order,
			typ: httpproblem.TypeOutcomeUnknown, status: 503, kind: idemclient.ErrOperatorRequired, says: "idemkit resolve"},
		{name: "indeterminate", api: &api{handler: unknownOutcome}, first: &order, final: order,
			typ: httpproblem.TypeIndeterminate, status: 409, kind: idemclient.ErrOperatorRequired, says: "idemkit inspect"},
		{name: "replay window passed", api: &api{}, first: &order, advance: 25 * time.Hour, final: order,
			typ: httpproblem.TypeReplayWindowPassed, status: 410, kind: idemclient.ErrCompleted, says: "location /orders/ord_1"},
		{name: "response not stored", api: &api{store: omittingStore{memstore.New()}}, first: &order, final: order,
			typ: httpproblem.TypeResponseNotStored, status: 410, kind: idemclient.ErrCompleted, says: "status 201"},
		{name: "tenant missing", api: &api{mw: httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return "", nil }}}, final: order,
			typ: httpproblem.TypeTenantMissing, status: 500, kind: idemclient.ErrServerFailure, says: "Tenant setting"},
		{name: "record corrupt", api: &api{store: failingStore(idemkit.ErrCorruptRecord)}, final: order,
			typ: httpproblem.TypeCorruptRecord, status: 500, kind: idemclient.ErrServerFailure, says: "idemkit inspect"},
		{name: "guard failure", api: &api{store: failingStore(idemkit.ErrRecordInvalid)}, final: order,
			typ: httpproblem.TypeGuardFailure, status: 500, kind: idemclient.ErrServerFailure, says: "logs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.api.start(t)
			c, s := newClient(t, tc.api.clock, idemclient.Config{})
			key := idemclient.NewKeyAt(tc.api.clock.Now())
			if tc.key != nil {
				key = tc.key(tc.api.clock.Now())
			}
			ctx := idemclient.WithKey(context.Background(), key)
			sent := 0
			if tc.first != nil {
				post(ctx, c, srv.URL+tc.first.path, tc.first.body) // its answer is not under test
				sent = len(s.recorded()) + 1
			}
			tc.api.clock.Advance(tc.advance)
			resp, body, err := post(ctx, c, srv.URL+tc.final.path, tc.final.body)
			var pe *idemclient.ProblemError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v %q, err %v; want a ProblemError", resp, body, err)
			}
			if pe.Problem.Type != tc.typ || pe.Problem.Status != tc.status || pe.Key != key || pe.Attempts != 1 {
				t.Errorf("ProblemError %+v, want %s %d after 1 attempt under key %s", pe, tc.typ, tc.status, key)
			}
			if !errors.Is(err, tc.kind) {
				t.Errorf("%v is not %v", err, tc.kind)
			}
			for _, other := range []error{idemclient.ErrKeyReused, idemclient.ErrOperatorRequired, idemclient.ErrCompleted,
				idemclient.ErrRefused, idemclient.ErrServerFailure, idemclient.ErrRetentionPassed, idemclient.ErrBudgetSpent} {
				if other != tc.kind && errors.Is(err, other) {
					t.Errorf("%v is also %v", err, other)
				}
			}
			if msg := err.Error(); !strings.Contains(msg, "Check ") || !strings.Contains(msg, tc.says) {
				t.Errorf("error %q does not say what to check (%q)", msg, tc.says)
			}
			if keys, _ := tc.api.seen(); len(keys) != sent+1 {
				t.Errorf("server got %d requests, want %d: the answer was retried", len(keys), sent+1)
			}
		})
	}
}

// TestRetriedAnswers: what a retry may change is retried under the same
// key, and what is a final answer of the handler's (a stored outcome, a
// replay) is returned as it came, after the attempts given.
func TestRetriedAnswers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answers  []int // the handler's status on each run; 0: httpmw.Fail
		status   int   // returned
		replayed bool
		attempts int
		runs     int
		waits    []time.Duration
	}{
		{"handler failed, key freed", []int{0, 201}, 201, false, 2, 2, []time.Duration{75 * time.Millisecond}},
		{"503 not stored", []int{503, 503, 201}, 201, false, 3, 3, []time.Duration{3 * time.Second, 3 * time.Second}},
		{"429 not stored", []int{429, 201}, 201, false, 2, 2, []time.Duration{3 * time.Second}},
		{"502 not stored", []int{502, 201}, 201, false, 2, 2, []time.Duration{75 * time.Millisecond}},
		{"500 stored, then replayed", []int{500}, 500, true, 2, 1, []time.Duration{75 * time.Millisecond}},
		{"402 returned", []int{402}, 402, false, 1, 1, nil},
		{"handler's own 409 returned", []int{409}, 409, false, 1, 1, nil},
		{"handler's own 422 problem returned", []int{422}, 422, false, 1, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &api{}
			a.handler = func(w http.ResponseWriter, r *http.Request) {
				n := int(a.runs.Add(1))
				s := tc.answers[min(n, len(tc.answers))-1]
				if s == 0 {
					httpmw.Fail(r.Context(), errors.New("database down"))
					return
				}
				if s == 503 || s == 429 {
					w.Header().Set("Retry-After", "3")
				}
				w.Header().Set("Content-Type", httpproblem.ContentType)
				w.WriteHeader(s)
				fmt.Fprintf(w, `{"type":"https://example.com/problems/%d","status":%d}`, s, s)
			}
			srv := a.start(t)
			c, sl := newClient(t, a.clock, idemclient.Config{})
			resp, _, err := post(context.Background(), c, srv.URL+"/orders", `{}`)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || idemclient.Replayed(resp) != tc.replayed {
				t.Errorf("got %d replayed=%v, want %d replayed=%v", resp.StatusCode, idemclient.Replayed(resp), tc.status, tc.replayed)
			}
			keys, _ := a.seen()
			if len(keys) != tc.attempts || int(a.runs.Load()) != tc.runs {
				t.Errorf("%d attempts and %d runs, want %d and %d", len(keys), a.runs.Load(), tc.attempts, tc.runs)
			}
			if w := sl.recorded(); fmt.Sprint(w) != fmt.Sprint(tc.waits) {
				t.Errorf("waits %v, want %v", w, tc.waits)
			}
		})
	}
}
