package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/idemclient"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/memstore"
)

// localAPI serves the example API, in memory, through the local server.
func localAPI(t *testing.T) *httptest.Server {
	t.Helper()
	h, err := orders.Handler(orders.Options{Store: memstore.New(), Repo: &orders.MemRepo{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&orders.Local{Handler: h, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(srv.Close)
	return srv
}

var output = regexp.MustCompile(`^order ([0-9a-f-]{36}): 201, replayed: (true|false)
the same order under the same key: 201, replayed: true, same order: true
payment [0-9a-f-]{36}: 201, captured
another order under the first order's key: 422 fingerprint-mismatch, key reused: true
$`)

// TestRunAgainstLocalServer: the command's calls, against the example API
// as make run serves it, answer as its comment says; with the answer to
// the order or to the payment lost on the way back, the same, and the
// order is paid once.
func TestRunAgainstLocalServer(t *testing.T) {
	isPayment := func(b []byte) bool { return bytes.Contains(b, []byte(`"card"`)) }
	isOrder := func(b []byte) bool { return bytes.Contains(b, []byte(`"sku"`)) }
	for _, tc := range []struct {
		name     string
		rule     *faults.Rule
		replayed string // the first order's answer
	}{
		{"no fault", nil, "false"},
		{"order's answer lost", &faults.Rule{Match: isOrder, Times: 1, Kind: faults.LostAck}, "true"},
		{"payment's answer lost", &faults.Rule{Match: isPayment, Times: 1, Kind: faults.LostAck}, "false"},
		{"payment's answer cut short", &faults.Rule{Match: isPayment, Times: 1, Kind: faults.LostAckBody}, "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := localAPI(t)
			base := faults.New(nil)
			if tc.rule != nil {
				base.Add(*tc.rule)
			}
			var out strings.Builder
			cfg := idemclient.Config{Base: base, Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}
			if err := run(context.Background(), &out, srv.URL, "alice", cfg); err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			m := output.FindStringSubmatch(out.String())
			if m == nil || m[2] != tc.replayed {
				t.Fatalf("output (first order replayed: want %s):\n%s", tc.replayed, out.String())
			}
			if tc.rule != nil && len(base.Events()) != 1 {
				t.Fatalf("%d faults injected, want 1", len(base.Events()))
			}
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/orders/"+m[1], nil)
			req.Header.Set("Authorization", "Bearer alice")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var o struct {
				PaidCents int64 `json:"paid_cents"`
				Payments  []any `json:"payments"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&o); err != nil || o.PaidCents != 1999 || len(o.Payments) != 1 {
				t.Errorf("order %s: paid %d in %d payments (%v), want 1999 in one", m[1], o.PaidCents, len(o.Payments), err)
			}
		})
	}
}
