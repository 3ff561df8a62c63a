package httpmw_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/memstore"
)

// TestHandlerStoppedWithoutWriting: a handler that returns having written
// nothing, without Fail, after its context was done has not said what it
// did. The key is kept as an unknown outcome when the client hung up (no
// implicit 200 is stored for it, and it does not run again); it is freed
// when the context ended because the lease was lost under Takeover
// (idemkit.ErrLeaseLost), which allows a second run. A handler that
// writes, calls Fail, or writes nothing on a live context is unchanged.
func TestHandlerStoppedWithoutWriting(t *testing.T) {
	type outcome struct {
		first, retry int // statuses: the first request's response, a retry's
		runs         int32
		kept         bool // the record is indeterminate after the first request
	}
	tests := []struct {
		name    string
		hangUp  bool // the client hangs up while the handler waits
		lose    bool // Takeover, renewals failing: the lease is lost
		handler func(w http.ResponseWriter, r *http.Request)
		want    outcome
	}{
		{"hung up, wrote nothing", true, false, func(w http.ResponseWriter, r *http.Request) {}, outcome{503, http.StatusConflict, 1, true}},
		{"hung up, wrote its answer", true, false, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) }, outcome{201, 201, 1, false}},
		{"hung up, set a header only", true, false, func(w http.ResponseWriter, r *http.Request) { w.Header().Set("X-Order", "1") }, outcome{503, http.StatusConflict, 1, true}},
		{"hung up, Fail", true, false, func(w http.ResponseWriter, r *http.Request) { httpmw.Fail(r.Context(), errors.New("stopped")) }, outcome{500, 201, 2, false}},
		{"live, wrote nothing: an implicit 200", false, false, func(w http.ResponseWriter, r *http.Request) {}, outcome{200, 200, 1, false}},
		{"lease lost, wrote nothing", false, true, func(w http.ResponseWriter, r *http.Request) {}, outcome{500, 201, 2, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memstore.New()
			var store idemkit.Store = mem
			pol := idemkit.Policy{}
			if tt.lose {
				// Every lease renewal fails.
				fs := faultstore.New(mem)
				fs.OnOp(faultstore.OpExtend, faultstore.Fail(&idemkit.StoreError{Op: "extend", Err: errors.New("503 service unavailable")}))
				store = fs
				pol = idemkit.Policy{Lease: 600 * time.Millisecond, Heartbeat: 100 * time.Millisecond, LeaseMargin: 200 * time.Millisecond, OnStaleLease: idemkit.Takeover}
			}
			g := testguard.New(t, idemkit.Config{Store: store, Policy: pol})
			var runs atomic.Int32
			started := make(chan struct{}, 1)
			h := auth(httpmw.New(g, httpmw.Config{Tenant: tenantOf})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := runs.Add(1)
				if n > 1 {
					w.WriteHeader(201) // a retry that runs answers
					return
				}
				started <- struct{}{}
				if tt.hangUp || tt.lose {
					<-r.Context().Done()
				}
				tt.handler(w, r)
			})))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan int, 1)
			go func() { done <- serve(h, request(t, nil).WithContext(ctx)).Code }()
			<-started
			if tt.hangUp {
				cancel()
			}
			first := <-done
			id := idemkit.Scope{Tenant: "tenant-a", Operation: "POST /orders", Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"}.ID(false)
			rec, err := mem.Get(context.Background(), id)
			kept := err == nil && rec.State == idemkit.StateIndeterminate
			retry := serve(h, request(t, nil)).Code
			got := outcome{first, retry, runs.Load(), kept}
			if got != tt.want {
				t.Errorf("first %d, retry %d, %d runs, kept %v; want first %d, retry %d, %d runs, kept %v",
					got.first, got.retry, got.runs, got.kept, tt.want.first, tt.want.retry, tt.want.runs, tt.want.kept)
			}
		})
	}
}
