package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
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
)

// e2eBudget is how long a client retries one key: beyond the lease
// (e2eInvocation plus the lease margin), so that a key held by a lost
// claim is seen through.
func e2eBudget() time.Duration { return time.Duration(size(12, 40)) * time.Second }

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
func randomFaults(rate float64, tables map[string]string, counts *faultCounts, doomed []faults.Rule) *faults.Transport {
	ft := faults.New(baseTransport(), doomed...)
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
	// doom, when set, is how the key is made to stick (doomUnknown,
	// doomAbandoned) and so the listing that must explain it.
	doom   string
	finals [e2eClients]e2eFinal
}

// The keys made to stick, one of each per tenant, so that the explanation
// of stuck keys is checked whatever the random faults did:
//   - doomUnknown: every PutItem of its order loses its answer (applied):
//     the handler ends with the outcome unknown, the record is
//     indeterminate at once.
//   - doomAbandoned: its first claim lands but loses its answer, and every
//     later call on its record fails unapplied: the claim can be neither
//     confirmed nor freed nor marked, the clients give up, and the record
//     stays in flight past its lease (stale).
const (
	doomUnknown   = "indeterminate"
	doomAbandoned = "stale"
)

// doomRules returns the rules that make k stick.
func doomRules(k *e2eKey, records, ordersTable string) []faults.Rule {
	on := func(table, s string) func([]byte) bool {
		return func(b []byte) bool {
			return bytes.Contains(b, []byte(`"TableName":"`+table+`"`)) && bytes.Contains(b, []byte(s))
		}
	}
	switch k.doom {
	case doomUnknown:
		return []faults.Rule{{Op: "PutItem", Match: on(ordersTable, k.sku()), Times: never, Kind: faults.LostAck}}
	case doomAbandoned:
		return []faults.Rule{
			{Match: writes([]string{faultstore.OpClaim}, on(records, k.key)), Times: 1, Kind: faults.LostAck},
			{Match: on(records, k.key), Times: never, Kind: faults.Reset},
		}
	}
	return nil
}

func (k *e2eKey) sku() string { return "storm-" + k.key }

// TestEndToEndStorm runs the storm at 5 %, 15 % and 20 % faults and checks
// the figures: no key executed twice; every stuck key (one whose clients
// did not all get a 201) explained: listed as indeterminate or stale, or
// holding nothing (no record, no order: a retry runs it); every answer of
// a key the same order, the one in the table. Besides the random faults,
// two keys per tenant are made to stick (doomRules), one of each kind, so
// that the explanation is checked in every run.
func TestEndToEndStorm(t *testing.T) {
	// Concurrent clients on one key prove nothing on a server whose
	// conditional writes are not atomic.
	dynalite.Require(t, dynalite.AtomicConditionalWrites)
	for _, pct := range []int{5, 15, 20} {
		t.Run(fmt.Sprintf("faults=%d%%", pct), func(t *testing.T) {
			if !full() {
				// The reduced runs are mostly waits (the forced keys'
				// clients retry for e2eBudget): run them side by side.
				t.Parallel()
			}
			e2eStorm(t, float64(pct)/100, size(10, 1000))
		})
	}
}

func e2eStorm(t *testing.T, rate float64, keysPerTenant int) {
	raw := dynalite.Client(t)
	endpoint := dynalite.Endpoint(t)
	records := dynalite.CreateTable(t, raw, dynamo.TableDefinition("e2e", dynamo.Options{}))
	ordersTable := dynalite.CreateTable(t, raw, orders.OrdersTableDefinition("e2eorders"))
	counts := &faultCounts{}
	tables := map[string]string{records: "records", ordersTable: "orders"}

	run := token()
	var keys []*e2eKey
	for _, tenant := range []string{"tenant-a", "tenant-b"} {
		for i := range keysPerTenant {
			keys = append(keys, &e2eKey{tenant: tenant, key: fmt.Sprintf("%s-%04d", run, i)})
		}
		for _, d := range []string{doomUnknown, doomAbandoned} {
			keys = append(keys, &e2eKey{tenant: tenant, key: fmt.Sprintf("%s-doomed-%s-%s", run, d, tenant), doom: d})
		}
	}
	var doomed []faults.Rule
	for _, k := range keys {
		doomed = append(doomed, doomRules(k, records, ordersTable)...)
	}

	var fts []*faults.Transport
	var handlers []v2Handler
	for range e2eClients {
		ft := randomFaults(rate, tables, counts, doomed)
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

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	start := time.Now()
	var invocations, retried5xx, retried409 atomic.Int64
	stormKeys(16, keys, e2eClients, func(k *e2eKey, c int) {
		k.finals[c] = e2eClient(ctx, handlers[c], k, &invocations, &retried5xx, &retried409)
	})
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
		free, stuckAnswered                                       int
		divergent, forced, forcedStuck, forcedGaveUp              int
		forcedListed                                              = map[string]int{}
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
		if k.doom == "" {
			executions += len(ids)
		}
		if len(ids) > 1 {
			doubles++
			note("%s/%s executed %d times: orders %v", k.tenant, k.key, len(ids), ids)
		}
		answered := map[string]bool{}
		ok := 0
		gave := 0
		for _, f := range k.finals {
			switch {
			case f.status == 201:
				ok++
				answered[f.orderID] = true
			case f.gaveUp:
				gave++
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
		id := idemkit.Scope{Tenant: k.tenant, Operation: "POST /orders", Key: k.key}.ID(false)
		if k.doom != "" {
			forced++
			forcedGaveUp += gave
			switch {
			case ok == e2eClients:
				note("%s/%s was to stick (%s) but every client got a 201", k.tenant, k.key, k.doom)
			case indeterminate[id]:
				forcedStuck++
				forcedListed[doomUnknown]++
			case stale[id]:
				forcedStuck++
				forcedListed[doomAbandoned]++
			default:
				forcedStuck++
				unexplained++
				note("%s/%s forced to stick (%s, finals %+v) and not listed by the operator listing", k.tenant, k.key, k.doom, k.finals)
			}
			continue
		}
		gaveUp += gave
		if ok == e2eClients {
			okKeys++
			continue
		}
		stuck++
		if ok > 0 {
			// One client got the run's 201 and the others not: the
			// completion was not stored (the lease ended first, or every
			// attempt of it failed).
			stuckAnswered++
		}
		if len(ids) > 0 {
			stuckRan++
		} else {
			stuckNotRun++
		}
		switch {
		case indeterminate[id]:
			listedIndeterminate++
		case stale[id]:
			listedStale++
		case len(ids) == 0 && !recordExists(t, clean, id):
			// Nothing ran and nothing holds the key: the clients gave up
			// while the store was unreachable; a retry runs it.
			free++
		default:
			unexplained++
			note("%s/%s stuck (finals %+v) and not listed by the operator listing", k.tenant, k.key, k.finals)
		}
	}
	summary(t, "fault_rate=%.0f%% keys=%d tenants=2 clients_per_key=%d invocations=%d faults_records=%d faults_orders=%d (%s) retried_5xx=%d retried_409_in_flight=%d "+
		"executions=%d double_executions=%d keys_ok=%d stuck=%d (executed %d, not executed %d, a client answered 201 %d) stuck_listed_indeterminate=%d stuck_listed_stale=%d stuck_free=%d stuck_unexplained=%d clients_gave_up=%d "+
		"divergent_answers=%d answers_without_order=%d unexpected_answers=%d; forced_to_stick=%d stuck=%d listed_indeterminate=%d listed_stale=%d clients_gave_up=%d; elapsed=%s",
		rate*100, len(keys)-forced, e2eClients, invocations.Load(), counts.total("records"), counts.total("orders"), counts, retried5xx.Load(), retried409.Load(),
		executions, doubles, okKeys, stuck, stuckRan, stuckNotRun, stuckAnswered, listedIndeterminate, listedStale, free, unexplained, gaveUp,
		divergent, answerWithoutOrder, unexpected, forced, forcedStuck, forcedListed[doomUnknown], forcedListed[doomAbandoned], forcedGaveUp, elapsed.Round(time.Second))
	// The forced keys show that faults reach both tables in every run; at
	// full size the random ones must too (a reduced run makes too few
	// orders-table calls for that to be certain).
	if full() && (counts.total("records") == 0 || counts.total("orders") == 0) {
		t.Errorf("faults injected: records table %d, orders table %d; want both", counts.total("records"), counts.total("orders"))
	}
	if forcedStuck != forced {
		t.Errorf("%d of %d keys forced to stick did:\n%s", forcedStuck, forced, strings.Join(problems, "\n"))
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
	end := time.Now().Add(e2eBudget())
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
		case a.Status == 409 && (a.Problem == "in-flight" || a.Problem == "outcome-pending"):
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

// recordExists reports whether a live record has id (read through a store
// without faults).
func recordExists(t *testing.T, s *dynamo.Store, id string) bool {
	t.Helper()
	_, err := getLive(context.Background(), s, id, time.Now())
	if err != nil && !errors.Is(err, idemkit.ErrNotFound) {
		t.Fatalf("get %s: %v", id, err)
	}
	return err == nil
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
