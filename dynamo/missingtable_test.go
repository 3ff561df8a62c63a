package dynamo_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/dynalite"
)

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
			store, err := dynamo.New(c, table, dynamo.Options{})
			if err != nil {
				t.Fatal(err)
			}
			g, err := idemkit.New(idemkit.Config{Store: store})
			if err != nil {
				t.Fatal(err)
			}
			req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /x", Key: "k"}, Fingerprint: "v2:sha256:x"}
			ran := false
			_, _, err = g.Do(t.Context(), req, func(context.Context) (*idemkit.Snapshot, error) {
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
