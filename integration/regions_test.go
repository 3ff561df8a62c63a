package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
)

// replicator stands for global-table replication from one region's server
// to another's: a RoundTripper under every client of the source records the
// keys of its successful writes, and Flush copies those items, as they are
// then, to the destination (last writer wins, no conditions, like a
// replica). Until Flush the destination lags.
type replicator struct {
	base     http.RoundTripper
	src, dst *dynamodb.Client
	mu       sync.Mutex
	pending  map[[2]string]bool // (table, pk) written since the last flush
	copied   atomic.Int64
}

func newReplicator(src, dst *dynamodb.Client) *replicator {
	return &replicator{base: baseTransport(), src: src, dst: dst, pending: map[[2]string]bool{}}
}

func (r *replicator) RoundTrip(req *http.Request) (*http.Response, error) {
	op := faults.Op(req)
	if op != "PutItem" && op != "UpdateItem" && op != "DeleteItem" {
		return r.base.RoundTrip(req)
	}
	b, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.Body = io.NopCloser(bytes.NewReader(b))
	resp, err := r.base.RoundTrip(req)
	if err == nil && resp.StatusCode == 200 {
		var in struct {
			TableName string
			Item, Key map[string]map[string]any
		}
		if json.Unmarshal(b, &in) == nil {
			pk := in.Item["pk"]
			if pk == nil {
				pk = in.Key["pk"]
			}
			if s, ok := pk["S"].(string); ok {
				r.mu.Lock()
				r.pending[[2]string{in.TableName, s}] = true
				r.mu.Unlock()
			}
		}
	}
	return resp, err
}

// Flush copies every item written since the last flush to the destination.
func (r *replicator) Flush(ctx context.Context) error {
	r.mu.Lock()
	todo := r.pending
	r.pending = map[[2]string]bool{}
	r.mu.Unlock()
	for k := range todo {
		key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: k[1]}}
		out, err := r.src.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(k[0]), Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return err
		}
		if out.Item == nil {
			_, err = r.dst.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(k[0]), Key: key})
		} else {
			_, err = r.dst.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(k[0]), Item: out.Item})
		}
		if err != nil {
			return err
		}
		r.copied.Add(1)
	}
	return nil
}

// regions is two servers, "east" and "west", replicating to each other
// through replicators, with the table on both.
type regions struct {
	table      string
	east, west string // endpoints
	toWest     *replicator
	toEast     *replicator
	rawE, rawW *dynamodb.Client
	homeOf     func(tenant string) string
}

func newRegions(t *testing.T) *regions {
	t.Helper()
	r := &regions{table: dynalite.TableName(t), east: dynalite.NewServer(t).Endpoint(), west: dynalite.NewServer(t).Endpoint()}
	r.rawE, r.rawW = newSDKClient(t, r.east, nil), newSDKClient(t, r.west, nil)
	for _, c := range []*dynamodb.Client{r.rawE, r.rawW} {
		if err := dynamo.CreateTable(context.Background(), c, r.table, dynamo.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	r.toWest, r.toEast = newReplicator(r.rawE, r.rawW), newReplicator(r.rawW, r.rawE)
	r.homeOf = func(tenant string) string {
		if len(tenant)%2 == 0 {
			return "east"
		}
		return "west"
	}
	return r
}

// client returns a new SDK client, as a process in some region has, for
// the server of region name; writes are replicated.
func (r *regions) client(t *testing.T, name string, wrap func(http.RoundTripper) http.RoundTripper) *dynamodb.Client {
	var rt http.RoundTripper = r.toWest
	ep := r.east
	if name == "west" {
		rt, ep = r.toEast, r.west
	}
	if wrap != nil {
		rt = wrap(rt)
	}
	return newSDKClient(t, ep, rt)
}

// handlers returns the guarded handler of a process in each region, with
// or without home-region pinning, sharing one business counter.
func (r *regions) handlers(t *testing.T, pinned bool, b *business, wrapWestToEast func(http.RoundTripper) http.RoundTripper) (east, west v2Handler) {
	t.Helper()
	mk := func(local string) v2Handler {
		var s *dynamo.Store
		var err error
		if pinned {
			var wrapE func(http.RoundTripper) http.RoundTripper
			if local == "west" {
				wrapE = wrapWestToEast
			}
			s, err = dynamo.NewRegional(dynamo.Regions{
				Clients: map[string]dynamo.Client{"east": r.client(t, "east", wrapE), "west": r.client(t, "west", nil)},
				Home:    r.homeOf,
				Local:   local,
			}, r.table, dynamo.Options{CallTimeout: callTimeout})
		} else {
			s, err = dynamo.New(r.client(t, local, nil), r.table, dynamo.Options{CallTimeout: callTimeout})
		}
		if err != nil {
			t.Fatal(err)
		}
		g := testguard.New(t, idemkit.Config{Store: s})
		return wrap(g, b, "POST /payments")
	}
	return mk("east"), mk("west")
}

// A duplicate arriving at the other region inside the replication lag:
// without pinning it runs again (the hazard, asserted); with pinning it is
// replayed from the home region. With the home region unreachable the
// other region fails closed (503) and runs nothing.
func TestRegionsReplicationLag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRegions(t)
	for _, pinned := range []bool{false, true} {
		name := map[bool]string{false: "unpinned", true: "pinned"}[pinned]
		t.Run(name, func(t *testing.T) {
			b := newBusiness(nil)
			var down *faults.Transport
			east, west := r.handlers(t, pinned, b, func(rt http.RoundTripper) http.RoundTripper {
				down = faults.New(rt)
				return down
			})
			for _, tenant := range []string{"acme", "bank1"} { // homes east and west
				key := "lag-" + name + "-" + tenant
				sc := idemkit.Scope{Tenant: tenant, Operation: "POST /payments", Key: key}
				ev := event(tenant, "/payments", key, `{"amount":1999}`)
				a1 := call(ctx, east, ev)
				a2 := call(ctx, west, ev) // inside the lag: nothing replicated yet
				if err := r.toWest.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				if err := r.toEast.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				a3 := call(ctx, west, ev) // after replication
				runs := b.count(sc)
				summary(t, "tenant %s (home %s): east %d replay=%v; west inside the lag %d replay=%v; west after replication %d replay=%v; executions %d",
					tenant, r.homeOf(tenant), a1.Status, a1.Replay, a2.Status, a2.Replay, a3.Status, a3.Replay, runs)
				if a1.Status != 201 || a1.Replay {
					t.Fatalf("first request: %v", a1)
				}
				if !pinned {
					if runs != 2 || a2.Status != 201 || a2.Replay {
						t.Fatalf("unpinned: executions %d, west %v; want the double execution the lag allows", runs, a2)
					}
					continue
				}
				if runs != 1 || !a2.Replay || a2.Body != a1.Body || !a3.Replay || a3.Body != a1.Body {
					t.Fatalf("pinned: executions %d, west %v then %v; want replays of %s", runs, a2, a3, a1.Body)
				}
			}
			if !pinned {
				return
			}
			// East unreachable from the west: tenants homed east fail
			// closed in the west, nothing runs and nothing is cached.
			down.Add(faults.Rule{Kind: faults.Reset, Times: never})
			ev := event("acme", "/payments", "lag-east-down", `{"amount":1}`)
			a := call(ctx, west, ev)
			sc := idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: "lag-east-down"}
			if a.Status != 503 || a.Problem != "store-unavailable" || !a.retryAfter() || b.count(sc) != 0 {
				t.Fatalf("home region down: %v, runs %d; want 503 store-unavailable", a, b.count(sc))
			}
			down.Clear()
			if a := call(ctx, west, ev); a.Status != 201 || a.Replay || b.count(sc) != 1 {
				t.Fatalf("home region back: %v, runs %d; want one run", a, b.count(sc))
			}
			summary(t, "home region unreachable: 503 store-unavailable, 0 executions; reachable again: 1 execution")
		})
	}
}

// A storm across the two regions: every key gets requests in both, at
// once, while replication runs continuously in the background (a small
// lag) or not at all during the storm (a lag longer than the storm).
// With pinning every key runs exactly once in both cases; without it the
// long lag runs keys twice (the hazard, asserted and counted).
func TestRegionsStorm(t *testing.T) {
	t.Parallel()
	keys, per := size(30, 300), size(4, 8) // per: requests per key, half in each region
	r := newRegions(t)
	for _, tc := range []struct {
		pinned, continuous bool
	}{{false, false}, {false, true}, {true, false}, {true, true}} {
		name := fmt.Sprintf("pinned=%v/replication=%s", tc.pinned, map[bool]string{false: "after-storm", true: "continuous"}[tc.continuous])
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), dynalite.Scale(5*time.Minute))
			defer cancel()
			b := newBusiness(nil)
			east, west := r.handlers(t, tc.pinned, b, nil)
			stop := make(chan struct{})
			var repl sync.WaitGroup
			if tc.continuous {
				repl.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						if err := r.toWest.Flush(ctx); err != nil {
							t.Error(err)
							return
						}
						if err := r.toEast.Flush(ctx); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			var wg sync.WaitGroup
			var other atomic.Int64
			tenants := []string{"acme", "bank1", "shop", "store"}
			for k := range keys {
				for i := range per {
					wg.Go(func() {
						h := east
						if i%2 == 1 {
							h = west
						}
						tenant := tenants[k%len(tenants)]
						a := call(ctx, h, event(tenant, "/payments", fmt.Sprintf("%s-%d", name, k), `{"amount":5}`))
						if a.Status != 201 && !(a.Status == 409 && a.Problem == "in-flight") {
							other.Add(1)
							t.Errorf("answer %v", a)
						}
					})
				}
			}
			wg.Wait()
			close(stop)
			repl.Wait()
			once, twice := 0, 0
			for k := range keys {
				sc := idemkit.Scope{Tenant: tenants[k%len(tenants)], Operation: "POST /payments", Key: fmt.Sprintf("%s-%d", name, k)}
				switch n := b.count(sc); {
				case n == 1:
					once++
				case n > 1:
					twice++
				}
			}
			summary(t, "requests=%d keys=%d executed_once=%d executed_more=%d other_answers=%d",
				keys*per, keys, once, twice, other.Load())
			switch {
			case tc.pinned && once != keys:
				t.Fatalf("pinned: %d of %d keys ran once, %d more", once, keys, twice)
			case !tc.pinned && !tc.continuous && twice != keys:
				t.Fatalf("unpinned, lag longer than the storm: %d of %d keys ran twice; want all (the hazard)", twice, keys)
			}
		})
	}
}
