package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/internal/dynalite"
	"github.com/idemkit/idemkit/internal/faults"
)

// The end-to-end storm: the example API (examples/orders) on DynamoDB, its
// records table and its orders table, with faults injected at random into
// every call of every operation on both tables, and clients that retry
// until they get a final answer. Executions are counted by scanning the
// orders table (an order's SKU names its key), not by asking the kit.
const (
	e2eClients    = 3                      // clients per key, each on its own instance
	e2eInvocation = 5 * time.Second        // each invocation's deadline (the Lambda timeout)
	e2eCallTime   = 700 * time.Millisecond // store and repo CallTimeout: a send without an answer ends here
	e2eBudget     = 40 * time.Second       // how long a client retries one key
)

// e2eKinds are the injected faults, in equal shares: lost acks (applied,
// answer lost), 5xx, throttles, resets, and timeouts applied or not.
var e2eKinds = []faults.Kind{
	faults.LostAck, faults.LostAckBody, faults.Throttle, faults.Throttling,
	faults.ServerError, faults.Reset, faults.Timeout, faults.TimeoutApplied,
}

// faultCounts counts the injected faults by table and kind.
type faultCounts struct {
	mu sync.Mutex
	n  map[string]map[faults.Kind]int
}

func (c *faultCounts) add(table string, k faults.Kind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]map[faults.Kind]int{}
	}
	if c.n[table] == nil {
		c.n[table] = map[faults.Kind]int{}
	}
	c.n[table][k]++
}

func (c *faultCounts) total(table string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.n[table] {
		n += v
	}
	return n
}

func (c *faultCounts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	by := map[faults.Kind]int{}
	for _, m := range c.n {
		for k, v := range m {
			by[k] += v
		}
	}
	var parts []string
	for _, k := range e2eKinds {
		parts = append(parts, fmt.Sprintf("%s=%d", k, by[k]))
	}
	return strings.Join(parts, ",")
}

// randomFaults returns a transport that spoils each call, whatever its
// operation, with probability rate, the kind drawn from e2eKinds, and
// counts what it injects by table (tables names the tables by role).
func randomFaults(rate float64, tables map[string]string, counts *faultCounts) *faults.Transport {
	ft := faults.New(baseTransport())
	share := rate / float64(len(e2eKinds))
	for i, k := range e2eKinds {
		// The rules are tried in order: rule i fires with probability
		// share given that none before it did.
		p := share / (1 - float64(i)*share)
		ft.Add(faults.Rule{Kind: k, Times: never, Match: func(body []byte) bool {
			if rand.Float64() >= p {
				return false
			}
			role := "other"
			for name, r := range tables {
				if bytes.Contains(body, []byte(`"TableName":"`+name+`"`)) {
					role = r
				}
			}
			counts.add(role, k)
			return true
		}})
	}
	return ft
}

// e2eFinal is how a client's retries for a key ended.
type e2eFinal struct {
	status   int
	problem  string
	orderID  string
	replay   bool
	gaveUp   bool
	attempts int
}

type e2eKey struct {
	tenant, key string
	finals      [e2eClients]e2eFinal
}

func (k *e2eKey) sku() string { return "storm-" + k.key }

// TestEndToEndStorm runs the storm at 5 %, 15 % and 20 % faults and checks
// the figures: no key executed twice, no stuck key (a client without a
// 201) that an operator cannot list, every answer of a key the same order.
func TestEndToEndStorm(t *testing.T) {
	for _, pct := range []int{5, 15, 20} {
		t.Run(fmt.Sprintf("faults=%d%%", pct), func(t *testing.T) {
			e2eStorm(t, float64(pct)/100, size(10, 400))
		})
	}
}

func e2eStorm(t *testing.T, rate float64, keysPerTenant int) {
	raw := dynalite.Client(t)
	endpoint := dynalite.Endpoint(t)
	records := dynalite.CreateTable(t, raw, dynamo.TableDefinition("e2e"))
	ordersTable := dynalite.CreateTable(t, raw, orders.OrdersTableDefinition("e2eorders"))
	counts := &faultCounts{}
	tables := map[string]string{records: "records", ordersTable: "orders"}

	var fts []*faults.Transport
	var handlers []v2Handler
	for range e2eClients {
		ft := randomFaults(rate, tables, counts)
		fts = append(fts, ft)
		store, err := dynamo.New(newSDKClient(t, endpoint, ft), records, dynamo.Options{CallTimeout: e2eCallTime, IndexInFlight: true})
		if err != nil {
			t.Fatal(err)
		}
		repoClient := dynamodb.New(newSDKClient(t, endpoint, ft).Options(), orders.ClientOptions)
		h, err := orders.Handler(orders.Options{
			Store:  store,
			Repo:   &orders.DynamoRepo{Client: repoClient, Table: ordersTable, CallTimeout: e2eCallTime},
			Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		handlers = append(handlers, h)
	}

	run := token()
	var keys []*e2eKey
	for _, tenant := range []string{"tenant-a", "tenant-b"} {
		for i := range keysPerTenant {
			keys = append(keys, &e2eKey{tenant: tenant, key: fmt.Sprintf("%s-%04d", run, i)})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	start := time.Now()
	var invocations, retried5xx, retried409 atomic.Int64
	work := make(chan *e2eKey)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for k := range work {
				var cw sync.WaitGroup
				for c := range e2eClients {
					cw.Go(func() {
						k.finals[c] = e2eClient(ctx, handlers[c], k, &invocations, &retried5xx, &retried409)
					})
				}
				cw.Wait()
			}
		})
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	elapsed := time.Since(start)
	for _, ft := range fts {
		ft.Clear()
	}

	// Count the executions: the orders of each key, read from the table.
	ordersOf := scanOrders(t, raw, ordersTable)
	// What an operator can list, through a store without faults.
	clean, err := dynamo.New(raw, records, dynamo.Options{IndexInFlight: true})
	if err != nil {
		t.Fatal(err)
	}
	indeterminate := listAll(t, func(page string) ([]*idemkit.Record, string, error) {
		return clean.ListIndeterminate(ctx, "", page, 1000, time.Now())
	})
	stale := listAll(t, func(page string) ([]*idemkit.Record, string, error) {
		return clean.ListStale(ctx, "", page, 1000, time.Now())
	})

	var (
		executions, doubles, okKeys, stuck, stuckRan, stuckNotRun int
		listedIndeterminate, listedStale, unexplained, gaveUp     int
		divergent                                                 int
		answerWithoutOrder, unexpected                            int
		problems                                                  []string
	)
	note := func(format string, args ...any) {
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	for _, k := range keys {
		ids := ordersOf[[2]string{k.tenant, k.sku()}]
		executions += len(ids)
		if len(ids) > 1 {
			doubles++
			note("%s/%s executed %d times: orders %v", k.tenant, k.key, len(ids), ids)
		}
		answered := map[string]bool{}
		ok := 0
		for _, f := range k.finals {
			switch {
			case f.status == 201:
				ok++
				answered[f.orderID] = true
			case f.gaveUp:
				gaveUp++
			case f.status == 409 && f.problem == "indeterminate-operator-required":
			default:
				unexpected++
				note("%s/%s: final answer %d %s", k.tenant, k.key, f.status, f.problem)
			}
		}
		if len(answered) > 1 {
			divergent++
			note("%s/%s: clients were answered different orders %v", k.tenant, k.key, answered)
		}
		for id := range answered {
			if len(ids) == 0 || ids[0] != id {
				answerWithoutOrder++
				note("%s/%s: answered order %s, table holds %v", k.tenant, k.key, id, ids)
			}
		}
		if ok == e2eClients {
			okKeys++
			continue
		}
		stuck++
		if len(ids) > 0 {
			stuckRan++
		} else {
			stuckNotRun++
		}
		id := idemkit.Scope{Tenant: k.tenant, Operation: "POST /orders", Key: k.key}.ID(false)
		switch {
		case indeterminate[id]:
			listedIndeterminate++
		case stale[id]:
			listedStale++
		default:
			unexplained++
			note("%s/%s stuck (finals %+v) and not listed by the operator listing", k.tenant, k.key, k.finals)
		}
	}
	summary(t, "fault_rate=%.0f%% keys=%d tenants=2 clients_per_key=%d invocations=%d faults_records=%d faults_orders=%d (%s) retried_5xx=%d retried_409_in_flight=%d "+
		"executions=%d double_executions=%d keys_ok=%d stuck=%d (executed %d, not executed %d) stuck_listed_indeterminate=%d stuck_listed_stale=%d stuck_unexplained=%d clients_gave_up=%d "+
		"divergent_answers=%d answers_without_order=%d unexpected_answers=%d elapsed=%s",
		rate*100, len(keys), e2eClients, invocations.Load(), counts.total("records"), counts.total("orders"), counts, retried5xx.Load(), retried409.Load(),
		executions, doubles, okKeys, stuck, stuckRan, stuckNotRun, listedIndeterminate, listedStale, unexplained, gaveUp,
		divergent, answerWithoutOrder, unexpected, elapsed.Round(time.Second))
	if counts.total("records") == 0 || counts.total("orders") == 0 {
		t.Errorf("faults injected: records table %d, orders table %d; want both", counts.total("records"), counts.total("orders"))
	}
	if doubles != 0 || unexplained != 0 || divergent != 0 || answerWithoutOrder != 0 || unexpected != 0 {
		t.Errorf("double executions %d, stuck keys not listed %d, divergent answers %d, answers without an order %d, unexpected answers %d:\n%s",
			doubles, unexplained, divergent, answerWithoutOrder, unexpected, strings.Join(problems, "\n"))
	}
}

// e2eClient sends one key's order until it gets a final answer: a 201, a
// 409 indeterminate-operator-required, or any answer other than a 409
// in-flight or a 5xx (both retried after a short pause), or until
// e2eBudget has passed.
func e2eClient(ctx context.Context, h v2Handler, k *e2eKey, invocations, retried5xx, retried409 *atomic.Int64) e2eFinal {
	body := fmt.Sprintf(`{"sku":%q,"quantity":1,"amount_cents":1999,"currency":"EUR"}`, k.sku())
	end := time.Now().Add(e2eBudget)
	for attempt := 1; ; attempt++ {
		ictx, cancel := context.WithTimeout(ctx, e2eInvocation)
		a := call(ictx, h, event(k.tenant, "/orders", k.key, body))
		cancel()
		invocations.Add(1)
		f := e2eFinal{status: a.Status, problem: a.Problem, replay: a.Replay, attempts: attempt}
		retry := false
		switch {
		case a.Status == 201:
			var o orders.Order
			if err := json.Unmarshal([]byte(a.Body), &o); err == nil {
				f.orderID = o.ID
			}
			return f
		case a.Status == 409 && a.Problem == "in-flight":
			retried409.Add(1)
			retry = true
		case a.Status >= 500:
			retried5xx.Add(1)
			retry = true
		}
		if !retry {
			return f
		}
		if time.Now().After(end) || ctx.Err() != nil {
			f.gaveUp = true
			return f
		}
		pause := time.NewTimer(time.Duration(50+rand.IntN(200)) * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-pause.C:
		}
		pause.Stop()
	}
}

// scanOrders returns the order IDs of each (tenant, SKU), read from the
// orders table with consistent scans.
func scanOrders(t *testing.T, c *dynamodb.Client, table string) map[[2]string][]string {
	t.Helper()
	m := map[[2]string][]string{}
	var startKey map[string]types.AttributeValue
	for {
		out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: startKey, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatalf("scan orders: %v", err)
		}
		for _, it := range out.Items {
			sk := attrS(it[orders.OrdersAttrSK])
			if strings.Contains(sk, "#payment#") {
				continue
			}
			k := [2]string{attrS(it[orders.OrdersAttrTenant]), attrS(it["sku"])}
			m[k] = append(m[k], attrS(it["id"]))
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		startKey = out.LastEvaluatedKey
	}
	for _, ids := range m {
		sort.Strings(ids)
	}
	return m
}

func attrS(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// listAll returns the IDs of every record a paged listing returns.
func listAll(t *testing.T, list func(page string) ([]*idemkit.Record, string, error)) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	page := ""
	for i := 0; ; i++ {
		recs, next, err := list(page)
		if err != nil {
			t.Fatalf("listing: %v", err)
		}
		for _, r := range recs {
			ids[r.ID] = true
		}
		if next == "" {
			return ids
		}
		if i > 10000 {
			t.Fatalf("listing does not end")
		}
		page = next
	}
}
