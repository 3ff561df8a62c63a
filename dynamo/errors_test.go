package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
)

// storeCalls calls every Store method once.
var storeCalls = map[string]func(ctx context.Context, s idemkit.OperatorStore) error{
	"Create": func(ctx context.Context, s idemkit.OperatorStore) error {
		sc := idemkit.Scope{Tenant: "acme", Operation: "POST /x", Key: "k"}
		now := time.Now()
		_, err := s.Create(ctx, &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o", Version: "v1",
			LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)})
		return err
	},
	"Replace": func(ctx context.Context, s idemkit.OperatorStore) error {
		sc := idemkit.Scope{Tenant: "acme", Operation: "POST /x", Key: "k"}
		now := time.Now()
		prev := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o", Version: "v1", LeaseUntil: now, ExpiresAt: now.Add(time.Hour)}
		done := prev.Clone()
		done.State, done.Version, done.Snapshot = idemkit.StateCompleted, "v2", &idemkit.Snapshot{Status: 200}
		_, err := s.Replace(ctx, done, prev)
		return err
	},
	"Get": func(ctx context.Context, s idemkit.OperatorStore) error {
		_, err := s.Get(ctx, "o1|1:a1:b1:c")
		return err
	},
	"ListIndeterminate": func(ctx context.Context, s idemkit.OperatorStore) error {
		_, _, err := s.ListIndeterminate(ctx, "", "", 0, time.Now())
		return err
	},
}

// TestUnreachable: every method on an endpoint nothing listens on returns
// ErrStoreUnavailable before the context's deadline.
func TestUnreachable(t *testing.T) {
	s := storeOn(t, endpointClient(closedPort(t)), "idem", dynamo.Options{})
	for name, call := range storeCalls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			err := call(ctx, s)
			var se *idemkit.StoreError
			if !errors.Is(err, idemkit.ErrStoreUnavailable) || !errors.As(err, &se) {
				t.Fatalf("%v, want a StoreError (ErrStoreUnavailable)", err)
			}
			if ctx.Err() != nil {
				t.Fatal("returned only after the context's deadline")
			}
		})
	}
}

// TestServerErrors: throttling and server errors are retried by the SDK
// MaxAttempts times, then reported as ErrStoreUnavailable; so is an error
// not worth retrying (a missing table), at once.
func TestServerErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		body     string
		attempts int32
	}{
		{"ThrottlingException", 400, `{"__type":"com.amazon.coral.availability#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}`, 3},
		{"ProvisionedThroughputExceededException", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"The level of configured provisioned throughput for the table was exceeded."}`, 3},
		{"RequestLimitExceeded", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#RequestLimitExceeded","message":"Throughput exceeds the current throughput limit for your account."}`, 3},
		{"InternalServerError", 500, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error"}`, 3},
		{"ServiceUnavailable", 503, `{"__type":"com.amazon.coral.availability#ServiceUnavailableException","message":"Service unavailable"}`, 3},
		{"ResourceNotFoundException", 400, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				jsonError(w, tc.status, []byte(tc.body))
			})
			s := storeOn(t, c, "idem", dynamo.Options{MaxAttempts: 3, MaxBackoff: 5 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if err := storeCalls["Create"](ctx, s); !errors.Is(err, idemkit.ErrStoreUnavailable) {
				t.Fatalf("Create: %v, want ErrStoreUnavailable", err)
			}
			if ctx.Err() != nil {
				t.Fatal("returned only after the context's deadline")
			}
			if n := calls.Load(); n != tc.attempts {
				t.Fatalf("%d attempts, want %d", n, tc.attempts)
			}
		})
	}
}

// TestDeadline: against a server that never answers, a call gives up
// DeadlineGap before the context's deadline, leaving time to answer.
func TestDeadline(t *testing.T) {
	c := fakeClient(t, func(w http.ResponseWriter, r *http.Request) {
		// Read the body so that the server notices the client hanging up.
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	})
	s := storeOn(t, c, "idem", dynamo.Options{DeadlineGap: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := storeCalls["Get"](ctx, s)
	if !errors.Is(err, idemkit.ErrStoreUnavailable) {
		t.Fatalf("Get: %v, want ErrStoreUnavailable", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("returned after %v, past the context's deadline", time.Since(start))
	}
}

// TestCanceledEngine: a guarded request with an unreachable store fails
// closed and does not run the handler.
func TestCanceledEngine(t *testing.T) {
	s := storeOn(t, endpointClient(closedPort(t)), "idem", dynamo.Options{})
	g, _ := idemkit.New(idemkit.Config{Store: s})
	_, _, err := g.Do(context.Background(), idemkit.Request{Scope: idemkit.Scope{Tenant: "a", Operation: "POST /x", Key: "k"}}, func(context.Context) (*idemkit.Snapshot, error) {
		t.Error("handler ran without a claim")
		return nil, nil
	})
	if !errors.Is(err, idemkit.ErrStoreUnavailable) {
		t.Fatalf("Do: %v, want ErrStoreUnavailable", err)
	}
}

// TestRetryQuota measures the SDK's client-side retry quota under
// sustained errors: after a burst of failing calls has drained it, claims
// that fail once get no retry with the quota kept, and all succeed with
// the store's default retryer, which has none.
func TestRetryQuota(t *testing.T) {
	const burst, claims = 60, 20
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("KeepRetryQuota=%v", keep), func(t *testing.T) {
			s, ft, _, _ := faultyStore(t, dynamo.Options{KeepRetryQuota: keep, MaxBackoff: time.Millisecond},
				faults.Rule{Op: "GetItem", Times: -1, Kind: faults.ServerError},
				faults.Rule{Op: "PutItem", Times: -1, Every: 2, Kind: faults.ServerError})
			ctx := context.Background()
			now := time.Now()
			for i := 0; i < burst; i++ {
				if _, err := s.Get(ctx, fmt.Sprintf("o1|1:t1:o1:%d", i%10)); !errors.Is(err, idemkit.ErrStoreUnavailable) {
					t.Fatalf("Get under a 5xx fault: %v", err)
				}
			}
			failed, quota := 0, 0
			for i := 0; i < claims; i++ {
				sc := idemkit.Scope{Tenant: "t", Operation: "POST /x", Key: fmt.Sprint("quota-", i)}
				rec := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o", Fingerprint: "v1:sha256:q", Version: "v1",
					LeaseUntil: now.Add(time.Minute), ReplayUntil: now.Add(time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
				met, err := s.Create(ctx, rec)
				switch {
				case err != nil:
					failed++
					if strings.Contains(err.Error(), "retry quota exceeded") {
						quota++
					}
				case met != nil && met.Version != rec.Version:
					t.Fatalf("claim %d met %+v", i, met)
				}
			}
			t.Logf("KeepRetryQuota=%v: after %d failing calls, %d of %d claims failed (%d with \"retry quota exceeded\"), every other claim attempt failing; %d faults injected",
				keep, burst, failed, claims, quota, len(ft.Events()))
			if keep && quota == 0 {
				t.Fatalf("with the SDK's retry quota kept, no claim failed for it (%d failed)", failed)
			}
			if !keep && failed != 0 {
				t.Fatalf("without the retry quota, %d of %d claims failed", failed, claims)
			}
		})
	}
}

// TestTableRefusalsNothingStored: a table that does not exist, or that the
// caller may not write, refuses the claim; the guard then makes that one
// call, answers a store error that names the table and says nothing was
// stored, and never claims that the key may be held (ErrClaimUnknown).
// Every other store call names the table too.
func TestTableRefusalsNothingStored(t *testing.T) {
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(400)
		_, _ = io.WriteString(w, `{"__type":"com.amazon.coral.service#AccessDeniedException","message":"User is not authorized to perform: dynamodb:PutItem"}`)
	}))
	t.Cleanup(denied.Close)
	for _, tc := range []struct {
		name     string
		client   func(t *testing.T) dynamo.Client
		sentinel error
		words    string
	}{
		{"table not found", func(t *testing.T) dynamo.Client { return dynalite.Client(t) }, dynamo.ErrTableNotFound, "not found, nothing stored"},
		{"access denied", func(*testing.T) dynamo.Client { return endpointClient(denied.URL) }, dynamo.ErrAccessDenied, "access denied, nothing stored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := "idemkit-missing-" + strings.ReplaceAll(tc.name, " ", "-")
			c := newCounting(tc.client(t))
			store := storeOn(t, c, table, dynamo.Options{})
			g := guard(t, store)
			req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /x", Key: "k"}, Fingerprint: "v2:sha256:x"}
			ran := false
			_, _, err := g.Do(t.Context(), req, func(context.Context) (*idemkit.Snapshot, error) {
				ran = true
				return &idemkit.Snapshot{Status: 201}, nil
			})
			switch {
			case ran:
				t.Fatal("handler ran")
			case !errors.Is(err, idemkit.ErrStoreUnavailable) || !errors.Is(err, idemkit.ErrNothingStored) || !errors.Is(err, tc.sentinel):
				t.Errorf("Do: %v; want ErrStoreUnavailable, ErrNothingStored and %v", err, tc.sentinel)
			case errors.Is(err, idemkit.ErrClaimUnknown) || strings.Contains(err.Error(), "may"):
				t.Errorf("Do: %v; says the key may be held", err)
			case !strings.Contains(err.Error(), "table "+table+" "+tc.words):
				t.Errorf("Do: %v; want it to say %q", err, "table "+table+" "+tc.words)
			}
			if n := c.Calls("PutItem") + c.Calls("UpdateItem") + c.Calls("GetItem"); n != 1 {
				t.Errorf("%d store calls, want the claim's one", n)
			}
			for name, call := range storeCalls {
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				err := call(ctx, store)
				cancel()
				if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), "table "+table+" ") {
					t.Errorf("%s: %v; want %v naming the table", name, err, tc.sentinel)
				}
			}
		})
	}
}
