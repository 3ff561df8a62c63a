package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testpayload"
)

// Clients are the numbers of concurrent clients Throughput measures.
var Clients = []int{1, 8, 32}

// Load is one variant at one concurrency: requests per second over the
// phase, per-request latency quantiles, and this process's CPU time per
// request (the DynamoDB server's own CPU is not in it).
type Load struct {
	Clients  int
	Requests int
	PerSec   float64
	P50, P99 time.Duration
	CPU      time.Duration
}

// ThroughputRow compares, at one concurrency, fresh requests through the
// httpmw middleware over the DynamoDB store (Kit) with the bare handler
// plus the very DynamoDB requests the store sends for a fresh request,
// re-sent straight through the SDK under a new key (Raw): the same
// baseline as Row.SameP50.
type ThroughputRow struct {
	Size     int
	Codec    dynamo.Codec // the store's Options.Codec; "" is the default
	Kit, Raw Load
}

// Throughput runs fresh requests of a size-byte response through httpmw
// on client's server with each of Clients concurrent clients, perPhase
// requests per phase split among them, alternating kit and raw phases
// rounds times; each Load pools its variant's phases (all their requests
// over all their time), so that drift and a slow phase count for both
// variants alike instead of deciding a best-of. The kit's store, and the
// one whose requests raw re-sends, have opts.
func Throughput(ctx context.Context, client *dynamodb.Client, table string, size, perPhase, rounds int, opts dynamo.Options) ([]ThroughputRow, error) {
	prefix := fmt.Sprintf("tp-%d-%s-%d-", size, opts.Codec, time.Now().UnixNano())
	kitReq, rawReq, err := throughputRequests(ctx, client, table, size, prefix+"capture", opts)
	if err != nil {
		return nil, err
	}

	var rows []ThroughputRow
	for _, c := range Clients {
		row, err := throughputAt(c, size, perPhase, rounds, prefix, kitReq, rawReq)
		if err != nil {
			return nil, err
		}
		row.Codec = opts.Codec
		rows = append(rows, row)
	}
	return rows, nil
}

// throughputRequests returns the kit's and the raw request of Throughput
// for a size-byte response over a store with opts; the raw one re-sends
// the DynamoDB requests of a fresh request made under captureKey.
func throughputRequests(ctx context.Context, client *dynamodb.Client, table string, size int, captureKey string, opts dynamo.Options) (kitReq, rawReq func(key string) error, err error) {
	handler := orderHandler(size)
	reqBody := []byte(testpayload.Event("").Body)
	if kitReq, err = kitRequestOpts(ctx, client, table, handler, reqBody, size, opts); err != nil {
		return nil, nil, err
	}
	if rawReq, err = rawRequest(ctx, client, table, handler, reqBody, captureKey, opts); err != nil {
		return nil, nil, err
	}
	return kitReq, rawReq, nil
}

// orderHandler answers 201 with a size-byte order JSON, as the handler
// of every throughput request.
func orderHandler(size int) http.Handler {
	body := testpayload.JSON(size)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/orders/ord_1")
		w.WriteHeader(http.StatusCreated)
		w.Write(body)
	})
}

// guardOn returns a guard with the default policy over a DynamoDB store
// of table, sending through client.
func guardOn(client dynamo.Client, table string, opts dynamo.Options) (*idemkit.Guard, error) {
	s, err := dynamo.New(client, table, opts)
	if err != nil {
		return nil, err
	}
	return idemkit.New(idemkit.Config{Store: s})
}

// benchTenant is the tenant of every request Throughput makes.
func benchTenant(context.Context, *http.Request) (string, error) { return "bench", nil }

// kitRequestOpts returns a request through httpmw over a DynamoDB store
// with opts around handler, under a given key, that fails unless it
// answers 201 with a size-byte body.
func kitRequestOpts(ctx context.Context, client *dynamodb.Client, table string, handler http.Handler, reqBody []byte, size int, opts dynamo.Options) (func(key string) error, error) {
	g, err := guardOn(client, table, opts)
	if err != nil {
		return nil, err
	}
	kit := httpmw.New(g, httpmw.Config{Tenant: benchTenant})(handler)
	return func(key string) error {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/orders", bytes.NewReader(reqBody))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", key)
		w := httptest.NewRecorder()
		kit.ServeHTTP(w, r)
		if w.Code != http.StatusCreated || w.Body.Len() != size {
			return fmt.Errorf("kit: status %d, %d-byte body: %s", w.Code, w.Body.Len(), w.Body.Bytes()[:min(w.Body.Len(), 200)])
		}
		return nil
	}, nil
}

// rawRequest captures the DynamoDB requests of one fresh request under
// key through httpmw over a store with opts, and returns the bare handler
// followed by those requests re-sent under a given key.
func rawRequest(ctx context.Context, client *dynamodb.Client, table string, handler http.Handler, reqBody []byte, key string, opts dynamo.Options) (func(key string) error, error) {
	capture := &capturing{Client: client}
	cg, err := guardOn(capture, table, opts)
	if err != nil {
		return nil, err
	}
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/orders", bytes.NewReader(reqBody))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", key)
	w := httptest.NewRecorder()
	httpmw.New(cg, httpmw.Config{Tenant: benchTenant})(handler).ServeHTTP(w, r)
	if w.Code != http.StatusCreated || len(capture.calls) != 2 {
		return nil, fmt.Errorf("capture: status %d, %d calls, want 201 and 2", w.Code, len(capture.calls))
	}
	sent := capture.calls
	return func(key string) error {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/orders", bytes.NewReader(reqBody))
		w := httptest.NewRecorder()
		if _, err := io.ReadAll(r.Body); err != nil {
			return err
		}
		handler.ServeHTTP(w, r)
		for _, c := range sent {
			if err := c(ctx, key); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// throughputAt runs rounds alternated kit and raw phases with clients
// concurrent clients, starting with kit and raw in turn, and pools each
// variant's phases.
func throughputAt(clients, size, perPhase, rounds int, prefix string, kitReq, rawReq func(string) error) (ThroughputRow, error) {
	type variant struct {
		name   string
		do     func(string) error
		phases []phaseRun
	}
	kit, raw := &variant{name: "kit", do: kitReq}, &variant{name: "raw", do: rawReq}
	for round := 0; round < rounds; round++ {
		order := []*variant{kit, raw}
		if round%2 == 1 {
			order = []*variant{raw, kit}
		}
		for _, v := range order {
			p, err := phase(clients, max(1, perPhase/clients), fmt.Sprintf("%s%s-%d-%d-", prefix, v.name, clients, round), v.do)
			if err != nil {
				return ThroughputRow{}, fmt.Errorf("%d clients, %s: %w", clients, v.name, err)
			}
			v.phases = append(v.phases, p)
		}
	}
	return ThroughputRow{Size: size, Kit: pool(clients, kit.phases), Raw: pool(clients, raw.phases)}, nil
}

// phaseRun is what one phase measured: every request's latency, the
// phase's wall time and this process's CPU time over it.
type phaseRun struct {
	lat       []time.Duration
	wall, cpu time.Duration
}

// pool is the Load of phases taken together: their requests over their
// summed wall time, latency quantiles over all their requests, CPU per
// request over all of them.
func pool(clients int, phases []phaseRun) Load {
	var all []time.Duration
	var wall, cpu time.Duration
	for _, p := range phases {
		all = append(all, p.lat...)
		wall += p.wall
		cpu += p.cpu
	}
	n := len(all)
	if n == 0 {
		return Load{Clients: clients}
	}
	return Load{Clients: clients, Requests: n, PerSec: float64(n) / wall.Seconds(),
		P50: quantile(all, 0.5), P99: quantile(all, 0.99), CPU: cpu / time.Duration(n)}
}

// phase runs clients goroutines making perClient requests each.
func phase(clients, perClient int, prefix string, do func(key string) error) (phaseRun, error) {
	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	cpu0, start := ProcessCPU(), time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat[c] = make([]time.Duration, 0, perClient)
			for i := 0; i < perClient; i++ {
				t0 := time.Now()
				if err := do(prefix + strconv.Itoa(c) + "-" + strconv.Itoa(i)); err != nil {
					errs[c] = err
					return
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	run := phaseRun{wall: time.Since(start), cpu: ProcessCPU() - cpu0}
	for c := range lat {
		if errs[c] != nil {
			return phaseRun{}, errs[c]
		}
		run.lat = append(run.lat, lat[c]...)
	}
	return run, nil
}
