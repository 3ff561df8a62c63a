package httpmw_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/memstore"
)

// TestMiddlewareLifetime: what a client of a long-running process with the
// in-memory store (make run) sees for one key as time passes: the replay
// within the replay window; 410 replay-window-passed naming the first
// outcome until the record retention ends; then a key that is not a
// UUIDv7 is a new request, and a UUIDv7 key older than the retention is
// refused (400 key-expired), never run.
func TestMiddlewareLifetime(t *testing.T) {
	const (
		window    = time.Hour
		retention = 2 * time.Hour
	)
	v7, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		key       string
		lateRuns  int32 // runs after the retention
		lateCode  int
		lateProbl string
	}{
		{name: "opaque key", key: "order-1", lateRuns: 2, lateCode: http.StatusCreated},
		{name: "UUIDv7 key", key: v7.String(), lateRuns: 1, lateCode: http.StatusBadRequest, lateProbl: "key-expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *probe
			p = newProbe(t, memstore.New(), idemkit.Policy{ReplayWindow: window, RecordRetention: retention}, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Location", fmt.Sprintf("/orders/ord_%d", p.runs.Load()))
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, `{"status":"created"}`)
			})
			start := p.clk.Now()
			if a := p.mustPost(t, tc.key); a.status != http.StatusCreated || a.header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("first: %d %v", a.status, a.header)
			}
			p.clk.Advance(window - time.Second)
			if a := p.mustPost(t, tc.key); a.status != http.StatusCreated || a.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("within the replay window: %d %v, want the replay", a.status, a.header)
			}
			p.clk.Advance(time.Second)
			a := p.mustPost(t, tc.key)
			var pd struct {
				Type           string `json:"type"`
				OriginalStatus int    `json:"originalStatus"`
				Location       string `json:"location"`
				CompletedAt    string `json:"completedAt"`
			}
			if err := json.Unmarshal([]byte(a.body), &pd); err != nil {
				t.Fatal(err)
			}
			if a.status != http.StatusGone || pd.Type != "https://idemkit.dev/problems/replay-window-passed" || pd.OriginalStatus != 201 ||
				pd.Location != "/orders/ord_1" || pd.CompletedAt != start.UTC().Format(time.RFC3339) {
				t.Fatalf("after the replay window: %d %s, want 410 replay-window-passed naming 201 /orders/ord_1", a.status, a.body)
			}
			// Past the retention and the key clock skew (5 min).
			p.clk.Advance(retention - window + 6*time.Minute)
			a = p.mustPost(t, tc.key)
			if a.status != tc.lateCode {
				t.Fatalf("after the retention: %d %s, want %d", a.status, a.body, tc.lateCode)
			}
			if tc.lateProbl != "" {
				if err := json.Unmarshal([]byte(a.body), &pd); err != nil || pd.Type != "https://idemkit.dev/problems/"+tc.lateProbl {
					t.Fatalf("after the retention: %s, want %s", a.body, tc.lateProbl)
				}
			}
			if got := p.runs.Load(); got != tc.lateRuns {
				t.Fatalf("handler ran %d times, want %d", got, tc.lateRuns)
			}
		})
	}
}
