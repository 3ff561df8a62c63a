package httpmw_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/memstore"
)

// downStore is a store whose writes all fail, as when its table is missing.
func downStore() *faultstore.Store {
	errDown := errors.New("ResourceNotFoundException: table not found")
	fs := faultstore.New(memstore.New())
	fs.OnOp(faultstore.OpClaim, faultstore.Fail(&idemkit.StoreError{Op: "claim", Err: errDown}))
	fs.OnOp(faultstore.OpRelease, faultstore.Fail(&idemkit.StoreError{Op: "release", Err: errDown}))
	return fs
}

// TestMiddlewareHangUpIsNoStoreFailure: without an Observer, store failures
// are logged through slog.Default so that a broken store is seen. A client
// that hangs up before its key is claimed is no store failure: nothing is
// logged for it, while a store that fails the claim of a live request,
// or fails to free the claim of a cancelled one, is still logged.
func TestMiddlewareHangUpIsNoStoreFailure(t *testing.T) {
	var (
		mu   sync.Mutex
		logs bytes.Buffer
	)
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	for _, tc := range []struct {
		name    string
		store   idemkit.Store
		hangUp  bool
		wantLog bool
	}{
		{name: "client hung up", store: memstore.New(), hangUp: true},
		{name: "store down", store: downStore(), wantLog: true},
		{name: "client hung up, store down", store: downStore(), hangUp: true, wantLog: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			logs.Reset()
			mu.Unlock()
			g := testguard.New(t, idemkit.Config{Store: tc.store, ClaimBackoff: time.Millisecond, WriteTimeout: time.Second})
			o := &orders{}
			h := auth(httpmw.New(g, httpmw.Config{Tenant: tenantOf})(o))
			ctx, cancel := context.WithCancel(context.Background())
			if tc.hangUp {
				cancel()
			}
			defer cancel()
			w := serve(h, request(t, nil).WithContext(ctx))
			if w.Code != http.StatusServiceUnavailable || o.runs.Load() != 0 {
				t.Fatalf("%d %s after %d runs, want 503 and no run", w.Code, w.Body, o.runs.Load())
			}
			mu.Lock()
			out := logs.String()
			mu.Unlock()
			if logged := strings.Contains(out, "idemkit: store failure"); logged != tc.wantLog {
				t.Fatalf("store failure logged %v, want %v:\n%s", logged, tc.wantLog, out)
			}
		})
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
