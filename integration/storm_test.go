package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
)

// fleet is C independent clients of one table: each its own SDK client,
// HTTP transport, dynamo store and Guard, like C Lambda instances.
type fleet struct {
	handlers []v2Handler
	stores   []*dynamo.Store
	fx       *effects
	b        *business
	table    string
}

func newFleet(t *testing.T, clients int, rt func(i int) http.RoundTripper, opts dynamo.Options) *fleet {
	t.Helper()
	c := dynalite.Client(t)
	f := &fleet{table: dynalite.CreateTable(t, c, dynamo.TableDefinition("storm", dynamo.Options{}))}
	f.fx = newEffects(t, c)
	f.b = newBusiness(f.fx)
	for i := range clients {
		var tr http.RoundTripper
		if rt != nil {
			tr = rt(i)
		}
		s, err := dynamo.New(newSDKClient(t, dynalite.Endpoint(t), tr), f.table, opts)
		if err != nil {
			t.Fatal(err)
		}
		g := testguard.New(t, idemkit.Config{Store: s})
		f.stores = append(f.stores, s)
		f.handlers = append(f.handlers, wrap(g, f.b, "POST /payments"))
	}
	return f
}

// tally counts the answers of a storm on one key and checks each: one
// fresh run at most, byte-identical replays, 409 in-flight with
// Retry-After, and (when allowed) 503 store-unavailable with Retry-After.
type tally struct {
	mu                                        sync.Mutex
	fresh, replays, conflicts, unavail, other int
	first                                     string
	bad                                       []string
}

func (ty *tally) add(a answer, allow503 bool) {
	ty.mu.Lock()
	defer ty.mu.Unlock()
	switch {
	case a.Status == 201 && !a.Replay:
		ty.fresh++
		if ty.first == "" {
			ty.first = a.Body
		}
	case a.Status == 201 && a.Replay:
		ty.replays++
	case a.Status == 409 && a.Problem == "in-flight" && a.retryAfter():
		ty.conflicts++
	case allow503 && a.Status == 503 && a.Problem == "store-unavailable" && a.retryAfter():
		ty.unavail++
	default:
		ty.other++
		if len(ty.bad) < 5 {
			ty.bad = append(ty.bad, a.String())
		}
	}
}

// 1,000 concurrent requests for one key over 8 independent clients:
// exactly one execution, every other answer a 409 or a replay of it, no
// 5xx. The one execution holds until half the answers are in, so that both
// conflicts and replays can occur.
func TestStormOneKey(t *testing.T) {
	t.Parallel()
	dynalite.Require(t, dynalite.AtomicConditionalWrites)
	n, clients := size(200, 1000), size(4, 8)
	f := newFleet(t, clients, nil, dynamo.Options{CallTimeout: callTimeout})
	ctx, cancel := context.WithTimeout(context.Background(), dynalite.Scale(2*time.Minute))
	defer cancel()
	var answered atomic.Int64
	half := make(chan struct{})
	f.b.block = func(ctx context.Context, _ idemkit.Scope) {
		select {
		case <-half:
		case <-ctx.Done():
		}
	}
	ev := event("acme", "/payments", "storm-one-key", `{"amount":1999}`)
	var ty tally
	var once sync.Once
	replayBodies := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			a := call(ctx, f.handlers[i%clients], ev)
			ty.add(a, false)
			if a.Replay {
				replayBodies <- a.Body
			}
			if answered.Add(1) >= int64(n/2) {
				once.Do(func() { close(half) })
			}
		})
	}
	wg.Wait()
	close(replayBodies)
	for b := range replayBodies {
		if b != ty.first {
			t.Fatalf("replay %q differs from the run's %q", b, ty.first)
		}
	}
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: "storm-one-key"}
	effects := f.fx.counts(t)[sc.ID(false)]
	summary(t, "requests=%d clients=%d executions=%d fresh=%d replays=%d conflicts409=%d 5xx_or_other=%d",
		n, clients, effects, ty.fresh, ty.replays, ty.conflicts, ty.other)
	if effects != 1 || ty.fresh != 1 || ty.other != 0 || ty.fresh+ty.replays+ty.conflicts != n {
		t.Fatalf("executions %d, fresh %d, other %d %v", effects, ty.fresh, ty.other, ty.bad)
	}
}

// The same storm from separate OS processes (this test binary run as
// workers), each with its own SDK client and Guard, released together.
// Executions are counted in the effects table, which every process
// writes.
func TestStormOneKeyProcesses(t *testing.T) {
	t.Parallel()
	dynalite.Require(t, dynalite.AtomicConditionalWrites)
	n, procs := size(120, 1000), size(3, 8)
	c := dynalite.Client(t)
	table := dynalite.CreateTable(t, c, dynamo.TableDefinition("procs", dynamo.Options{}))
	fx := newEffects(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), dynalite.Scale(3*time.Minute))
	defer cancel()
	key := "storm-processes"
	var ws []*worker
	for i := range procs {
		per := n / procs
		if i < n%procs {
			per++
		}
		ws = append(ws, startWorker(t, "storm", map[string]string{
			envEndpoint: dynalite.Endpoint(t), envTable: table, envEffects: fx.table, envKey: key, envN: strconv.Itoa(per),
		}))
	}
	for _, w := range ws {
		if _, err := fmt.Fprintln(w.stdin, "go"); err != nil {
			t.Fatal(err)
		}
	}
	var fresh, replays, conflicts, other, runs int
	sums := map[string]int{}
	for _, w := range ws {
		for {
			l := w.expect(ctx, t, "")
			if r, ok := strings.CutPrefix(l, "RUNS "); ok {
				k, _ := strconv.Atoi(r)
				runs += k
				break
			}
			f := strings.Fields(l)
			if len(f) != 5 || f[0] != "ANSWER" {
				continue
			}
			switch {
			case f[1] == "201" && f[3] == "false":
				fresh++
				sums[f[4]]++
			case f[1] == "201":
				replays++
				sums[f[4]]++
			case f[1] == "409" && f[2] == "in-flight":
				conflicts++
			default:
				other++
				t.Errorf("answer %s", l)
			}
		}
	}
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: key}
	effects := fx.counts(t)[sc.ID(false)]
	summary(t, "requests=%d processes=%d executions=%d (reported by the processes: %d) fresh=%d replays=%d conflicts409=%d 5xx_or_other=%d distinct_201_bodies=%d",
		n, procs, effects, runs, fresh, replays, conflicts, other, len(sums))
	if effects != 1 || runs != 1 || fresh != 1 || other != 0 || len(sums) != 1 || fresh+replays+conflicts != n {
		t.Fatalf("executions %d, runs %d, fresh %d, other %d, bodies %d", effects, runs, fresh, other, len(sums))
	}
}

// 20,000 requests over 5,000 keys, 4 of each, interleaved at random over
// 8 clients: every key executed exactly once, every replay byte-identical
// to the key's first response. A 409 (a duplicate arriving while its key
// runs) is retried after the run, as a client would.
func TestStormManyKeys(t *testing.T) {
	t.Parallel()
	dynalite.Require(t, dynalite.AtomicConditionalWrites)
	keys, dups, clients := size(100, 5000), 4, size(4, 8)
	f := newFleet(t, clients, nil, dynamo.Options{CallTimeout: callTimeout})
	ctx, cancel := context.WithTimeout(context.Background(), dynalite.Scale(10*time.Minute))
	defer cancel()
	order := make([]int, 0, keys*dups)
	for k := range keys {
		for range dups {
			order = append(order, k)
		}
	}
	rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })

	var mu sync.Mutex
	first := make([]string, keys)
	var fresh, replays, conflicts, retries, other atomic.Int64
	work := make(chan int)
	var wg sync.WaitGroup
	for w := range 64 {
		wg.Go(func() {
			h := f.handlers[w%clients]
			for k := range work {
				ev := event(fmt.Sprintf("tenant-%d", k%7), "/payments", fmt.Sprintf("key-%06d", k), fmt.Sprintf(`{"amount":%d}`, k))
				for attempt := 0; ; attempt++ {
					a := call(ctx, h, ev)
					if a.Status == 409 && a.Problem == "in-flight" && attempt < 1000 {
						conflicts.Add(1)
						retries.Add(1)
						continue
					}
					mu.Lock()
					switch {
					case a.Status == 201 && !a.Replay:
						fresh.Add(1)
						if first[k] != "" {
							t.Errorf("key %d ran twice", k)
						}
						first[k] = a.Body
					case a.Status == 201 && a.Replay:
						replays.Add(1)
						if first[k] != "" && a.Body != first[k] {
							t.Errorf("key %d: replay %q differs from %q", k, a.Body, first[k])
						}
					default:
						other.Add(1)
						t.Errorf("key %d: %v", k, a)
					}
					mu.Unlock()
					break
				}
			}
		})
	}
	for _, k := range order {
		work <- k
	}
	close(work)
	wg.Wait()
	counts := f.fx.counts(t)
	once := 0
	for k := range keys {
		sc := idemkit.Scope{Tenant: fmt.Sprintf("tenant-%d", k%7), Operation: "POST /payments", Key: fmt.Sprintf("key-%06d", k)}
		if counts[sc.ID(false)] == 1 {
			once++
		} else {
			t.Errorf("key %d executed %d times", k, counts[sc.ID(false)])
		}
	}
	summary(t, "requests=%d keys=%d duplicates_per_key=%d clients=%d keys_executed_once=%d fresh=%d replays=%d (all byte-identical) conflicts409_retried=%d other=%d",
		keys*dups, keys, dups, clients, once, fresh.Load(), replays.Load(), conflicts.Load(), other.Load())
}

// A same-key storm while the server throttles every other call of every
// operation: at most one execution; answers are a run, replays, 409s or
// 503 store-unavailable with Retry-After; once the throttling stops a
// retry gets the one stored result.
func TestStormThrottled(t *testing.T) {
	t.Parallel()
	dynalite.Require(t, dynalite.AtomicConditionalWrites)
	n, clients := size(100, 1000), size(4, 8)
	var fts []*faults.Transport
	f := newFleet(t, clients, func(int) http.RoundTripper {
		ft := faults.New(baseTransport(), faults.Rule{Kind: faults.Throttle, Every: 2, Times: never})
		fts = append(fts, ft)
		return ft
	}, dynamo.Options{CallTimeout: callTimeout})
	ctx, cancel := context.WithTimeout(context.Background(), dynalite.Scale(3*time.Minute))
	defer cancel()
	ev := event("acme", "/payments", "storm-throttled", `{"amount":1999}`)
	var ty tally
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ty.add(call(ctx, f.handlers[i%clients], ev), true) })
	}
	wg.Wait()
	throttled := 0
	for _, ft := range fts {
		throttled += len(ft.Events())
		ft.Clear()
	}
	// The throttling stops. A retry gets what the storm stored, read from
	// the table: the one run's outcome, replayed; or, where every attempt
	// of its completion was throttled, its claim, kept in flight until the
	// lease ends (409), never run again.
	sc := idemkit.Scope{Tenant: "acme", Operation: "POST /payments", Key: "storm-throttled"}
	stored, err := f.stores[0].Get(ctx, sc.ID(false))
	if err != nil {
		t.Fatal(err)
	}
	final := call(ctx, f.handlers[0], ev)
	effects := f.fx.counts(t)[sc.ID(false)]
	summary(t, "requests=%d clients=%d throttled_calls=%d executions=%d fresh=%d replays=%d conflicts409=%d unavailable503=%d other=%d; stored %s; after: %d replay=%v",
		n, clients, throttled, effects, ty.fresh, ty.replays, ty.conflicts, ty.unavail, ty.other, stored.State, final.Status, final.Replay)
	if effects != 1 || ty.fresh > 1 || ty.other != 0 {
		t.Fatalf("executions %d, fresh %d, other %d %v", effects, ty.fresh, ty.other, ty.bad)
	}
	switch stored.State {
	case idemkit.StateCompleted:
		if final.Status != 201 || (ty.fresh == 1 && (!final.Replay || final.Body != ty.first)) {
			t.Fatalf("after the throttling: %v; want the one stored result", final)
		}
	case idemkit.StateInFlight:
		if ty.fresh != 1 || final.Status != 409 || final.Problem != "in-flight" {
			t.Fatalf("after the throttling, its completion not stored: %v (fresh %d); want 409 in-flight until the lease ends", final, ty.fresh)
		}
	default:
		t.Fatalf("stored %s after the storm; want the run's outcome or its claim", stored.State)
	}
}
