package bench

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/httpmw"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/internal/testing/testpayload"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// allocBudget is what one request may allocate on the DynamoDB path (a
// client that answers at once, as in BenchmarkDynamoPath): a count, and
// bytes as a multiple of the response body plus a fixed part. The fresh
// counts have about 4% headroom over what the paths use, the replay ones
// about 20% (docs/PERFORMANCE.md); the byte budgets say how many times the
// body may be copied.
type allocBudget struct {
	allocs     float64
	bodyCopies float64 // bytes per body byte
	fixed      int     // bytes on top
}

var allocBudgets = map[string]allocBudget{
	// fresh: the compressed body (at most a quarter of a JSON body), the
	// items and the SDK inputs; the snapshot shares the response string's
	// bytes, so no copy of the body. (A renewal started with every
	// request, not only after its first interval, would add 8:
	// TestRenewalStartsLazily holds that.) One is the request's concrete
	// resource, which keeps ExecutionID distinct per resource. The
	// completion is decided from the record as last written: its copy,
	// the completion's version string and the writer's version counter
	// are three (105 in all at 4 KiB; the store writes only what changed,
	// from the item it sent for the claim).
	"v2/fresh": {allocs: 109, bodyCopies: 0.25, fixed: 16 << 10},
	// replay: the decompressed body, which the Lambda response's string
	// shares.
	"v2/replay": {allocs: 58, bodyCopies: 1, fixed: 16 << 10},
	// httpmw: the recorder's buffer is the snapshot body, so fresh keeps
	// one copy (with room for the buffer's growth) and the compressed
	// form; replay writes the decoded body straight from the snapshot.
	"http/fresh":  {allocs: 123, bodyCopies: 1.5, fixed: 20 << 10},
	"http/replay": {allocs: 70, bodyCopies: 1, fixed: 20 << 10},
}

// perRequest runs do n times after one warm-up call and returns the
// allocations and bytes allocated per call.
func perRequest(n int, do func()) (allocs float64, bytes float64) {
	do()
	a, b := testkit.Allocated(func() {
		for range n {
			do()
		}
	})
	return float64(a) / float64(n), float64(b) / float64(n)
}

// TestAllocBudget holds the allocations of a fresh and a replayed
// request, through both adapters over the DynamoDB store, at every bench
// size: a count from testing.AllocsPerRun and the bytes allocated.
func TestAllocBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation budget: not in -short")
	}
	for _, size := range testpayload.Sizes {
		body := testpayload.JSON(size)
		for _, adapterName := range []string{"v2", "http"} {
			for _, path := range []string{"fresh", "replay"} {
				name := adapterName + "/" + path
				t.Run(name+"/"+strconv.Itoa(size)+"B", func(t *testing.T) {
					do := newRequester(t, adapterName, path, body)
					b := allocBudgets[name]
					if raceEnabled {
						// Measured under -race: up to 15% more allocations
						// and one more body's worth of bytes.
						b.allocs *= 1.25
						b.bodyCopies++
					}
					allocs := testing.AllocsPerRun(50, do)
					_, bytes := perRequest(50, do)
					maxBytes := b.bodyCopies*float64(size) + float64(b.fixed)
					t.Logf("%.0f allocs (budget %.0f), %.0f bytes (budget %.0f)", allocs, b.allocs, bytes, maxBytes)
					if allocs > b.allocs {
						t.Errorf("%.0f allocations per request, budget %.0f", allocs, b.allocs)
					}
					if bytes > maxBytes {
						t.Errorf("%.0f bytes allocated per request, budget %.0f (%.2f x %d B body + %d)", bytes, maxBytes, b.bodyCopies, size, b.fixed)
					}
				})
			}
		}
	}
}

// newRequester returns a function making one guarded request through the
// named adapter over the DynamoDB store on a nullClient: a new key each
// call for "fresh", the same completed key for "replay".
func newRequester(t *testing.T, adapterName, path string, body []byte) func() {
	t.Helper()
	c := &nullClient{items: map[string]map[string]types.AttributeValue{}, forget: path == "fresh"}
	s, err := dynamo.New(c, "idem", dynamo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := testguard.New(t, idemkit.Config{Store: s})
	n := 0
	key := func() string {
		if path == "replay" {
			return "k"
		}
		n++
		return "k-" + strconv.Itoa(n)
	}
	ctx := context.Background()
	switch adapterName {
	case "v2":
		sbody := string(body)
		h := apigw.WrapV2(g, apigw.Config{Tenant: apigw.SingleTenant("bench")},
			func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
				return events.APIGatewayV2HTTPResponse{StatusCode: 201,
					Headers: map[string]string{"Content-Type": "application/json", "Location": "/orders/ord_1"}, Body: sbody}, nil
			})
		evs := map[string]events.APIGatewayV2HTTPRequest{}
		return func() {
			k := key()
			ev, ok := evs[k]
			if !ok && path == "replay" {
				ev = testpayload.Event(k)
				evs[k] = ev
			} else if !ok {
				ev = testpayload.Event(k)
			}
			r, err := h(ctx, ev)
			if err != nil || r.StatusCode != 201 || len(r.Body) != len(body) {
				t.Fatalf("status %d, %d-byte body, %v", r.StatusCode, len(r.Body), err)
			}
		}
	default:
		mw := httpmw.New(g, httpmw.Config{Tenant: func(context.Context, *http.Request) (string, error) { return "bench", nil }})
		h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Location", "/orders/ord_1")
			w.WriteHeader(201)
			w.Write(body)
		}))
		reqBody := []byte(`{"customer":"cus_42","currency":"eur","lines":[{"sku":"SKU-00042","qty":2}]}`)
		r := httptest.NewRequest("POST", "/orders", nil)
		r.Header.Set("Content-Type", "application/json")
		w := &discard{header: http.Header{}}
		return func() {
			r.Header["Idempotency-Key"] = []string{key()}
			r.Body = readCloser{bytes.NewReader(reqBody)}
			r.ContentLength = int64(len(reqBody))
			w.status, w.n = 0, 0
			clear(w.header)
			h.ServeHTTP(w, r)
			if w.status != 201 || w.n != len(body) {
				t.Fatalf("status %d, %d-byte body", w.status, w.n)
			}
		}
	}
}

// discard is a ResponseWriter that counts the body and keeps nothing, so
// that only the middleware's allocations are counted.
type discard struct {
	header http.Header
	status int
	n      int
}

func (d *discard) Header() http.Header { return d.header }
func (d *discard) WriteHeader(code int) {
	if d.status == 0 {
		d.status = code
	}
}
func (d *discard) Write(p []byte) (int, error) {
	if d.status == 0 {
		d.status = 200
	}
	d.n += len(p)
	return len(p), nil
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }
