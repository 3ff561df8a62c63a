package dynamo_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// storeCalls calls every Store method once.
var storeCalls = map[string]func(ctx context.Context, s idemkit.OperatorStore) error{
	"Claim": func(ctx context.Context, s idemkit.OperatorStore) error {
		sc := idemkit.Scope{Tenant: "acme", Operation: "POST /x", Key: "k"}
		now := time.Now()
		_, err := s.Claim(ctx, &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Owner: "o", LeaseUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}, now, idemkit.ClaimOptions{})
		return err
	},
	"Complete": func(ctx context.Context, s idemkit.OperatorStore) error {
		sc := idemkit.Scope{Tenant: "acme", Operation: "POST /x", Key: "k"}
		now := time.Now()
		return s.Complete(ctx, &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateCompleted, Owner: "o", LeaseUntil: now, ExpiresAt: now.Add(time.Hour), Snapshot: &idemkit.Snapshot{Status: 200}}, now)
	},
	"Release": func(ctx context.Context, s idemkit.OperatorStore) error {
		return s.Release(ctx, "o1|1:a1:b1:c", "o", time.Now())
	},
	"MarkIndeterminate": func(ctx context.Context, s idemkit.OperatorStore) error {
		err := s.MarkIndeterminate(ctx, "o1|1:a1:b1:c", "o", time.Now())
		return err
	},
	"Resolve": func(ctx context.Context, s idemkit.OperatorStore) error {
		_, err := s.Resolve(ctx, "o1|1:a1:b1:c", idemkit.Resolution{As: idemkit.StateFailed}, time.Now())
		return err
	},
	"Get": func(ctx context.Context, s idemkit.OperatorStore) error {
		_, err := s.Get(ctx, "o1|1:a1:b1:c", time.Now())
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
	s, err := dynamo.New(endpointClient(closedPort(t)), "idem", dynamo.Options{})
	if err != nil {
		t.Fatal(err)
	}
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
			s, err := dynamo.New(c, "idem", dynamo.Options{MaxAttempts: 3, MaxBackoff: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if err := storeCalls["Claim"](ctx, s); !errors.Is(err, idemkit.ErrStoreUnavailable) {
				t.Fatalf("Claim: %v, want ErrStoreUnavailable", err)
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
	s, err := dynamo.New(c, "idem", dynamo.Options{DeadlineGap: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = storeCalls["Get"](ctx, s)
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
	s, err := dynamo.New(endpointClient(closedPort(t)), "idem", dynamo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := idemkit.New(idemkit.Config{Store: s})
	_, _, err = g.Do(context.Background(), idemkit.Request{Scope: idemkit.Scope{Tenant: "a", Operation: "POST /x", Key: "k"}}, func(context.Context) (*idemkit.Snapshot, error) {
		t.Error("handler ran without a claim")
		return nil, nil
	})
	if !errors.Is(err, idemkit.ErrStoreUnavailable) {
		t.Fatalf("Do: %v, want ErrStoreUnavailable", err)
	}
}
