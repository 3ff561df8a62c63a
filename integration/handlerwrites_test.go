package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/clock"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/internal/policydefault"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/warmcache"
)

// The example API's own writes under faults, alone and combined with faults
// on the kit's claim, completion and mark, under both stale-lease
// policies. Executions are counted from the rows the handler wrote (its
// orders and payments), never from the kit's answers.

// hwTables are the tables of one run: the kit's records and the example's
// orders.
type hwTables struct {
	endpoint, records, orders string
	raw                       *dynamodb.Client
}

func newHWTables(t *testing.T) hwTables {
	t.Helper()
	raw := dynalite.Client(t)
	return hwTables{
		endpoint: dynalite.Endpoint(t),
		raw:      raw,
		records:  dynalite.CreateTable(t, raw, dynamo.TableDefinition("hw", dynamo.Options{})),
		orders:   dynalite.CreateTable(t, raw, orders.OrdersTableDefinition("hworders")),
	}
}

// hwInstance is one instance of the example API: its own SDK clients (both
// through ft), store and handler, its own clock.
type hwInstance struct {
	h     v2Handler
	store *dynamo.Store
	cache *warmcache.Store
}

type hwOptions struct {
	policy   idemkit.Policy
	clock    clock.Clock
	callTime time.Duration
	cache    bool // put a warmcache.Store in front of the store
	// repoGap is the repository's DeadlineGap; zero: its default.
	repoGap time.Duration
	// repo, when set, wraps the instance's orders repository.
	repo func(orders.Repo) orders.Repo
}

func newHWInstance(t *testing.T, tb hwTables, ft http.RoundTripper, o hwOptions) *hwInstance {
	t.Helper()
	store, err := dynamo.New(newSDKClient(t, tb.endpoint, ft), tb.records,
		dynamo.Options{CallTimeout: o.callTime, MaxBackoff: 10 * time.Millisecond, IndexInFlight: true})
	if err != nil {
		t.Fatal(err)
	}
	in := &hwInstance{store: store}
	var s idemkit.Store = store
	if o.cache {
		in.cache = warmcache.New(store, warmcache.Config{})
		s = in.cache
	}
	repoClient := dynamodb.New(newSDKClient(t, tb.endpoint, ft).Options(), orders.ClientOptions)
	var repo orders.Repo = &orders.DynamoRepo{Client: repoClient, Table: tb.orders, CallTimeout: o.callTime, DeadlineGap: o.repoGap}
	if o.repo != nil {
		repo = o.repo(repo)
	}
	h, err := orders.Handler(orders.Options{
		Store:  s,
		Repo:   repo,
		Policy: o.policy,
		Clock:  o.clock,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	in.h = h
	return in
}

// rows returns the IDs of the tenant's orders (payments false) or payments
// (payments true) in the orders table, read consistently.
func (tb hwTables) rows(t *testing.T, tenant string, payments bool) []string {
	t.Helper()
	out, err := tb.raw.Query(context.Background(), &dynamodb.QueryInput{
		TableName:                 aws.String(tb.orders),
		KeyConditionExpression:    aws.String("#t = :t"),
		ExpressionAttributeNames:  map[string]string{"#t": orders.OrdersAttrTenant},
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: tenant}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("query orders of %s: %v", tenant, err)
	}
	var ids []string
	for _, it := range out.Items {
		if strings.Contains(attrS(it[orders.OrdersAttrSK]), "#payment#") == payments {
			ids = append(ids, attrS(it["id"]))
		}
	}
	return ids
}

// invocationCtx returns the context of an invocation whose deadline is d
// from the real now (clk stands still or runs ahead of the wall clock;
// its drift is bounded by testclock).
func invocationCtx(t *testing.T, clk *testclock.Clock, d time.Duration) context.Context {
	t.Helper()
	return clk.Deadline(t, context.Background(), time.Since(clk.Now())+d)
}

// Fault rules on one tenant's calls (each case has a tenant of its own).
func hwOn(table, tenant string, extra ...string) func([]byte) bool {
	return func(b []byte) bool {
		if !bytes.Contains(b, []byte(`"TableName":"`+table+`"`)) || !bytes.Contains(b, []byte(tenant)) {
			return false
		}
		for _, e := range extra {
			if !bytes.Contains(b, []byte(e)) {
				return false
			}
		}
		return true
	}
}

// hwRule builds the rules of a case from the case's tables and tenant.
type hwRule func(tb hwTables, tenant string) faults.Rule

func ordersPut(k faults.Kind, times int) hwRule {
	return func(tb hwTables, tenant string) faults.Rule {
		return faults.Rule{Op: "PutItem", Match: hwOn(tb.orders, tenant), Times: times, Kind: k}
	}
}

func ordersQuery(k faults.Kind, times int) hwRule {
	return func(tb hwTables, tenant string) faults.Rule {
		return faults.Rule{Op: "Query", Match: hwOn(tb.orders, tenant), Times: times, Kind: k}
	}
}

// kitCall spoils the store's writes of a tenant's records that make one
// of the changes ops (see kitWrite).
func kitCall(ops ...string) func(k faults.Kind, times int) hwRule {
	return func(k faults.Kind, times int) hwRule {
		return func(tb hwTables, tenant string) faults.Rule {
			return faults.Rule{Match: writes(ops, hwOn(tb.records, tenant)), Times: times, Kind: k}
		}
	}
}

var (
	kitClaim    = kitCall(faultstore.OpClaim)
	kitComplete = kitCall(faultstore.OpComplete)
	kitMark     = kitCall(faultstore.OpMarkUnknown, faultstore.OpMarkIndeterminate)
	kitRelease  = kitCall(faultstore.OpRelease)
)

type hwCase struct {
	name    string
	payment bool // POST /payments on an order made beforehand, else POST /orders
	rules   []hwRule
	// first is what the first request gets: "run" (a fresh 201), "unknown"
	// (503 outcome-unknown) or "failed" (the example's 503
	// temporarily-unavailable: the key was freed).
	first string
	// final is what retries converge to once the faults clear, under
	// FailClosed and under Takeover: "replay" or "indeterminate".
	final [2]string
	// notKept: the first answer is outcome-unknown although the key could
	// not be kept; it must not promise that it was.
	notKept bool
	// rows is the number of the handler's rows (orders or payments) the
	// key leaves (under Takeover, 1 when a run follows the lease).
	rows int
}

func hwCases() []hwCase {
	r := func(rs ...hwRule) []hwRule { return rs }
	replay := [2]string{"replay", "replay"}
	indet := [2]string{"indeterminate", "indeterminate"}
	return []hwCase{
		// The order's PutItem alone.
		{name: "order-put/lost-ack/x1", rules: r(ordersPut(lost, 1)), first: "run", final: replay, rows: 1},
		{name: "order-put/lost-ack-body/x1", rules: r(ordersPut(lostBody, 1)), first: "run", final: replay, rows: 1},
		{name: "order-put/timeout-applied/x1", rules: r(ordersPut(tmoA, 1)), first: "run", final: replay, rows: 1},
		{name: "order-put/timeout/x1", rules: r(ordersPut(tmo, 1)), first: "run", final: replay, rows: 1},
		{name: "order-put/5xx/x4", rules: r(ordersPut(e500, 4)), first: "run", final: replay, rows: 1},
		{name: "order-put/reset/x4", rules: r(ordersPut(reset, 4)), first: "run", final: replay, rows: 1},
		{name: "order-put/lost-ack/never", rules: r(ordersPut(lost, never)), first: "unknown", final: indet, rows: 1},
		{name: "order-put/throttle/never", rules: r(ordersPut(thr, never)), first: "unknown", final: indet, rows: 0},
		// The read-back of a write refused because it had landed.
		{name: "order-put/lost-ack/x1+order-query/5xx/x3", rules: r(ordersPut(lost, 1), ordersQuery(e500, 3)), first: "run", final: replay, rows: 1},
		{name: "order-put/lost-ack/x1+order-query/5xx/never", rules: r(ordersPut(lost, 1), ordersQuery(e500, never)), first: "unknown", final: indet, rows: 1},
		// Combined with the kit's own faults.
		{name: "claim/lost-ack/x1+order-put/lost-ack/x1", rules: r(kitClaim(lost, 1), ordersPut(lost, 1)), first: "run", final: replay, rows: 1},
		{name: "claim/timeout-applied/x1+order-put/lost-ack-body/x1", rules: r(kitClaim(tmoA, 1), ordersPut(lostBody, 1)), first: "run", final: replay, rows: 1},
		{name: "order-put/lost-ack/x1+complete/lost-ack/never", rules: r(ordersPut(lost, 1), kitComplete(lost, never)), first: "run", final: replay, rows: 1},
		// The completion never lands: under Takeover the retry after the
		// lease runs the handler again, which finds its own order.
		{name: "order-put/lost-ack/x1+complete/5xx/never", rules: r(ordersPut(lost, 1), kitComplete(e500, never)), first: "run", final: [2]string{"indeterminate", "replay"}, rows: 1},
		{name: "order-put/timeout-applied/x1+complete/timeout/never", rules: r(ordersPut(tmoA, 1), kitComplete(tmo, never)), first: "run", final: [2]string{"indeterminate", "replay"}, rows: 1},
		// The outcome is unknown and keeping the claim fails or loses its
		// answer.
		{name: "order-put/lost-ack/never+mark/lost-ack/x1", rules: r(ordersPut(lost, never), kitMark(lost, 1)), first: "unknown", final: indet, rows: 1},
		{name: "order-put/lost-ack/never+mark/5xx/never", rules: r(ordersPut(lost, never), kitMark(e500, never)), first: "unknown", notKept: true, final: [2]string{"indeterminate", "replay"}, rows: 1},
		// Payments: the order is read first (a failed read frees the key),
		// then the payment is written.
		{name: "payment/order-query/5xx/never", payment: true, rules: r(ordersQuery(e500, never)), first: "failed", final: replay, rows: 1},
		// The handler fails (nothing written) and freeing the key fails
		// too: the key is left to its lease policy.
		{name: "payment/order-query/5xx/never+release/5xx/never", payment: true, rules: r(ordersQuery(e500, never), kitRelease(e500, never)), first: "failed", final: [2]string{"indeterminate", "replay"}, rows: 0},
		{name: "payment/order-query/5xx/never+release/lost-ack/x1", payment: true, rules: r(ordersQuery(e500, never), kitRelease(lost, 1)), first: "failed", final: replay, rows: 1},
		{name: "payment/payment-put/lost-ack/x1", payment: true, rules: r(ordersPut(lost, 1)), first: "run", final: replay, rows: 1},
		{name: "payment/payment-put/lost-ack/never", payment: true, rules: r(ordersPut(lost, never)), first: "unknown", final: indet, rows: 1},
		{name: "payment/payment-put/lost-ack/x1+complete/5xx/never", payment: true, rules: r(ordersPut(lost, 1), kitComplete(e500, never)), first: "run", final: [2]string{"indeterminate", "replay"}, rows: 1},
	}
}

// hwID returns the "id" of a 201 body (an order or a payment).
func hwID(t *testing.T, a answer) string {
	t.Helper()
	var v struct{ ID string }
	if err := json.Unmarshal([]byte(a.Body), &v); err != nil || v.ID == "" {
		t.Fatalf("201 body without an id: %v", a)
	}
	return v.ID
}

// TestHandlerWritesUnderFaults drives the example API (POST /orders, POST
// /payments) through one instance whose SDK clients inject faults into
// the handler's own calls on the orders table, alone and together with
// faults on the kit's calls, under FailClosed and Takeover. Per case: the
// first request and its immediate retry under the faults; then the faults
// clear and the client retries until the answer is stable, moving the
// clock past the lease on a 409 in-flight. Asserted from the orders table:
// never more than one row for the key; every 201, fresh or replayed, names
// that row; and what the key converges to (a replay, or an indeterminate
// record an operator lists). Under Takeover only the cases in which a lease
// ends without an outcome run (in the others the policies agree).
func TestHandlerWritesUnderFaults(t *testing.T) {
	tb := newHWTables(t)
	run := token()
	var cases, requests, injected, doubles int
	for pi, pol := range []idemkit.StalePolicy{idemkit.FailClosed, idemkit.Takeover} {
		for ci, tc := range hwCases() {
			if pol == idemkit.Takeover && tc.final[0] == tc.final[1] {
				// No lease ends without an outcome: the policies agree.
				continue
			}
			tenant := fmt.Sprintf("hw%sp%dc%02dz", run, pi, ci)
			name := fmt.Sprintf("%s/%s", map[idemkit.StalePolicy]string{idemkit.FailClosed: "fail-closed", idemkit.Takeover: "takeover"}[pol], tc.name)
			t.Run(name, func(t *testing.T) {
				cases++
				clk := testclock.New()
				ft := faults.New(baseTransport())
				in := newHWInstance(t, tb, ft, hwOptions{
					policy: idemkit.Policy{OnStaleLease: pol}, clock: clk, callTime: dynalite.Scale(300 * time.Millisecond),
				})
				const invocation = 3 * time.Second
				lease := invocation + policydefault.LeaseMargin
				path, body := "/orders", `{"sku":"hw","quantity":1,"amount_cents":1999,"currency":"EUR"}`
				if tc.payment {
					// The order to pay, made without faults under its own key.
					a := call(invocationCtx(t, clk, invocation), in.h, event(tenant, "/orders", "order-"+tenant, body))
					if a.Status != 201 {
						t.Fatalf("creating the order to pay: %v", a)
					}
					path = "/payments"
					body = fmt.Sprintf(`{"order_id":%q,"amount_cents":1999,"card":"4242424242424242"}`, hwID(t, a))
				}
				for _, rule := range tc.rules {
					ft.Add(rule(tb, tenant))
				}
				key := "k-" + tenant
				ev := func() events.APIGatewayV2HTTPRequest { return event(tenant, path, key, body) }
				var seen []answer
				var id string // the row every 201 must name
				send := func() answer {
					t.Helper()
					a := call(invocationCtx(t, clk, invocation), in.h, ev())
					seen = append(seen, a)
					rows := tb.rows(t, tenant, tc.payment)
					if len(rows) > 1 {
						doubles++
						t.Fatalf("%d rows for one key: %v; answers %v", len(rows), rows, seen)
					}
					switch {
					case a.Status == 201:
						got := hwID(t, a)
						if len(rows) != 1 || rows[0] != got {
							t.Fatalf("answered %s, the table holds %v", got, rows)
						}
						if id != "" && got != id {
							t.Fatalf("answered %s, earlier %s", got, id)
						}
						id = got
					case a.Status == 409 && (a.Problem == "in-flight" || a.Problem == "outcome-pending" || a.Problem == "indeterminate-operator-required"):
					case a.Status == 503 && a.Problem == "outcome-unknown":
						// The key is kept: a retry gets 409, whenever it comes.
					case a.Status == 503 && (a.Problem == "store-unavailable" || a.Problem == "temporarily-unavailable"):
						if !a.retryAfter() {
							t.Fatalf("503 without Retry-After: %v", a)
						}
					default:
						t.Fatalf("answer %v: not a response, a replay or a retryable problem", a)
					}
					return a
				}

				first := send()
				if got := first.kind(); got != tc.first {
					t.Fatalf("first answer %s, want %s", got, tc.first)
				}
				if kept := strings.Contains(first.Body, "its key is kept"); tc.first == "unknown" && kept == tc.notKept {
					t.Fatalf("first answer %v: says the key is kept %v, want %v", first, kept, !tc.notKept)
				}
				send()
				if len(ft.Events()) == 0 {
					t.Fatal("no fault was injected")
				}
				injected += len(ft.Events())
				ft.Clear()
				var final answer
				for i := 0; ; i++ {
					if i == 6 {
						t.Fatalf("no convergence after 6 retries: %v", seen)
					}
					final = send()
					if final.Problem == "in-flight" || final.Problem == "outcome-pending" {
						clk.Advance(pastPending(lease))
						continue
					}
					if k := final.kind(); k == "run" || k == "failed" {
						continue // a run: its retry must replay it
					}
					break
				}
				want := tc.final[pi]
				if got := final.kind(); got != want {
					t.Fatalf("converged to %v, want %s; answers %v", final, want, seen)
				}
				if again := send(); again.kind() != want {
					t.Fatalf("after convergence %v, then %v", final, again)
				}
				wantRows := tc.rows
				if pol == idemkit.Takeover && tc.final[0] != tc.final[1] {
					wantRows = 1 // the run after the lease wrote it, or found it
				}
				if n := len(tb.rows(t, tenant, tc.payment)); n != wantRows {
					t.Fatalf("%d rows, want %d; answers %v", n, wantRows, seen)
				}
				if want == "indeterminate" {
					recs, _, err := tb.clean(t).ListIndeterminate(context.Background(), tenant, "", 0, clk.Now())
					if err != nil || len(recs) != 1 || recs[0].Scope.Key != key {
						t.Fatalf("ListIndeterminate(%s): %v, %v; want the key's record", tenant, recs, err)
					}
				}
				requests += len(seen)
				var kinds []string
				for _, a := range seen {
					kinds = append(kinds, a.kind())
				}
				t.Logf("answers %s; %d faults injected; %d rows", strings.Join(kinds, ", "), len(ft.Events()), wantRows)
			})
		}
	}
	summary(t, "cases=%d requests=%d faults_injected=%d double_rows=%d", cases, requests, injected, doubles)
}

// killSwitch fails every call once its invocation is abandoned: the Lambda
// deadline passed and the runtime froze or ended the process, so nothing
// it sends after that reaches the server.
type killSwitch struct {
	base     http.RoundTripper
	deadline time.Time
}

func (k *killSwitch) dead() bool { return !time.Now().Before(k.deadline) }

func (k *killSwitch) RoundTrip(req *http.Request) (*http.Response, error) {
	if k.dead() {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("invocation abandoned")}
	}
	return k.base.RoundTrip(req)
}

// TestAbandonedInvocation: the Lambda deadline passes mid-handler and the
// invocation is abandoned: from its deadline on, nothing it sends reaches
// DynamoDB (the handler's error, the release, the completion or the mark
// never land). Three points of abandonment: the order's PutItem landed
// and its answer never came; the PutItem never landed; the order landed
// and the completion never did. Another instance retries: inside the
// lease 409 in-flight, and the record is listed as stale once the lease
// has ended; after it, under FailClosed 409
// indeterminate-operator-required (and listed), under Takeover a run that
// finds the abandoned run's order, if any. Counted from the orders table:
// never more than one order, and every 201 names it.
func TestAbandonedInvocation(t *testing.T) {
	tb := newHWTables(t)
	run := token()
	type variant struct {
		name  string
		rules []hwRule
		rows  int // orders the abandoned run leaves
	}
	variants := []variant{
		{"order-landed-answer-lost", []hwRule{ordersPut(faults.TimeoutApplied, 1)}, 1},
		{"order-not-landed", []hwRule{ordersPut(faults.Timeout, 1)}, 0},
		{"order-landed-completion-not", []hwRule{kitComplete(faults.Timeout, never)}, 1},
	}
	for pi, pol := range []idemkit.StalePolicy{idemkit.FailClosed, idemkit.Takeover} {
		for vi, v := range variants {
			name := map[idemkit.StalePolicy]string{idemkit.FailClosed: "fail-closed", idemkit.Takeover: "takeover"}[pol] + "/" + v.name
			t.Run(name, func(t *testing.T) {
				t.Parallel() // each waits for its own deadline
				body := `{"sku":"ab","quantity":1,"amount_cents":1999,"currency":"EUR"}`
				// The repository's calls may run to the deadline (a gap
				// of 1 ns): the invocation is then abandoned mid-write,
				// as one whose repository keeps no gap would be. The
				// example's default gap avoids that (its own tests).
				opts := hwOptions{policy: idemkit.Policy{OnStaleLease: pol}, callTime: dynalite.Scale(time.Second), repoGap: time.Nanosecond}
				ab := abandon(t, tb, opts, v.rules, fmt.Sprintf("ab%sp%dv%d", run, pi, vi), body)
				tenant, key, invocation, clkA, ftA, first := ab.tenant, ab.key, ab.invocation, ab.clock, ab.faults, ab.first
				opts.clock = clkA
				lease := invocation + policydefault.LeaseMargin
				// Its answer never reaches the client (API Gateway times out).
				if rec, err := getLive(context.Background(), tb.clean(t), idemkit.Scope{Tenant: tenant, Operation: "POST /orders", Key: key}.ID(false), clkA.Now()); err != nil || rec.State != idemkit.StateInFlight {
					t.Fatalf("after the abandoned run: %+v, %v; first answer %v", rec, err, first)
				}
				if n := len(tb.rows(t, tenant, false)); n != v.rows {
					t.Fatalf("the abandoned run left %d orders, want %d", n, v.rows)
				}

				// Another instance retries. Its clock is the abandoned
				// one's, which stands at its start, so the first retry is
				// inside the lease however long the abandoned run took.
				clkB := clkA
				b := newHWInstance(t, tb, faults.New(baseTransport()), opts)
				send := func() answer {
					t.Helper()
					ans := call(invocationCtx(t, clkB, 3*time.Second), b.h, event(tenant, "/orders", key, body))
					rows := tb.rows(t, tenant, false)
					if len(rows) > 1 {
						t.Fatalf("%d orders for one key: %v", len(rows), rows)
					}
					if ans.Status == 201 && (len(rows) != 1 || rows[0] != hwID(t, ans)) {
						t.Fatalf("answered %v, the table holds %v", ans, rows)
					}
					return ans
				}
				if ans := send(); ans.Status != 409 || ans.Problem != "in-flight" || !ans.retryAfter() {
					t.Fatalf("retry inside the lease: %v, want 409 in-flight with Retry-After", ans)
				}
				clkB.Advance(pastPending(lease))
				clean := tb.clean(t)
				stale, _, err := clean.ListStale(context.Background(), tenant, "", 0, clkB.Now())
				if err != nil || len(stale) != 1 || stale[0].Scope.Key != key {
					t.Fatalf("ListStale after the lease: %v, %v; want the abandoned record", stale, err)
				}
				after := send()
				switch pol {
				case idemkit.FailClosed:
					if after.Status != 409 || after.Problem != "indeterminate-operator-required" {
						t.Fatalf("retry after the lease: %v, want 409 indeterminate-operator-required", after)
					}
					recs, _, err := clean.ListIndeterminate(context.Background(), tenant, "", 0, clkB.Now())
					if err != nil || len(recs) != 1 || recs[0].Scope.Key != key {
						t.Fatalf("ListIndeterminate: %v, %v; want the record", recs, err)
					}
				case idemkit.Takeover:
					if after.Status != 201 || after.Replay {
						t.Fatalf("retry after the lease: %v, want a fresh 201", after)
					}
					if again := send(); again.Status != 201 || !again.Replay || again.Body != after.Body {
						t.Fatalf("retry after the takeover: %v, want the replay of %v", again, after)
					}
				}
				rows := tb.rows(t, tenant, false)
				want := v.rows
				if pol == idemkit.Takeover {
					want = 1
				}
				if len(rows) != want {
					t.Fatalf("%d orders at the end, want %d", len(rows), want)
				}
				summary(t, "abandoned at its %s deadline (%d faults, then every call dropped): orders left %d; retry inside the lease 409 in-flight; listed stale after it; then %d %s replay=%v; orders %d",
					invocation, len(ftA.Events()), v.rows, after.Status, after.Problem, after.Replay, len(rows))
			})
		}
	}
}

// abandoned is an invocation abandoned at its deadline: its tenant and
// key, its length, its clock, its faults and the answer it never sent.
type abandoned struct {
	tenant, key string
	invocation  time.Duration
	clock       *testclock.Clock
	faults      *faults.Transport
	first       answer
}

// abandon runs an invocation of 800 ms whose calls are dropped from its
// deadline on, with rules injected before it. An invocation that reached
// its deadline before its first injected fault (a machine too busy to get
// through the claim in time) is run again, with a key of its own and
// twice as long, up to 6.4 s: the test is of what happens after a fault,
// not of how fast the claim is.
func abandon(t *testing.T, tb hwTables, opts hwOptions, rules []hwRule, name, body string) abandoned {
	t.Helper()
	for invocation, try := 800*time.Millisecond, 0; ; invocation, try = 2*invocation, try+1 {
		ab := abandoned{tenant: fmt.Sprintf("%st%dz", name, try), invocation: invocation, clock: testclock.New()}
		ab.key = "k-" + ab.tenant
		ctx := invocationCtx(t, ab.clock, invocation)
		dl, _ := ctx.Deadline()
		ab.faults = faults.New(baseTransport())
		for _, r := range rules {
			ab.faults.Add(r(tb, ab.tenant))
		}
		kill := &killSwitch{base: ab.faults, deadline: dl}
		opts.clock = ab.clock
		a := newHWInstance(t, tb, kill, opts)
		ab.first = call(ctx, a.h, event(ab.tenant, "/orders", ab.key, body))
		switch {
		case !kill.dead():
			t.Fatalf("the invocation ended before its deadline: %v", ab.first)
		case len(ab.faults.Events()) > 0:
			return ab
		case invocation >= 6400*time.Millisecond:
			t.Fatalf("no fault was injected before the deadline of a %s invocation", invocation)
		}
		t.Logf("the %s invocation reached its deadline before its first fault; again, twice as long", invocation)
	}
}

// clean returns a store on the records table without faults, the one an
// operator's listing uses.
func (tb hwTables) clean(t *testing.T) *dynamo.Store {
	t.Helper()
	s, err := dynamo.New(tb.raw, tb.records, dynamo.Options{IndexInFlight: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// freezer holds every call of an invocation from its deadline on, as a
// frozen Lambda process does, until thaw is closed (the process runs
// again) or the call's own context ends. frozen is closed when the first
// call is held.
type freezer struct {
	base     http.RoundTripper
	deadline time.Time
	thaw     chan struct{}
	frozen   chan struct{}
	once     sync.Once
	late     atomic.Int32 // calls made past the deadline and sent after the thaw
}

// RoundTrip sends a call made before the deadline at once; one made after
// it waits for the thaw (or its own end), and is then sent late. A call
// held that gave up before the thaw (its call timeout, on a busy machine)
// is made again after it, and is as late.
func (f *freezer) RoundTrip(req *http.Request) (*http.Response, error) {
	if time.Now().Before(f.deadline) {
		return f.base.RoundTrip(req)
	}
	select {
	case <-f.thaw:
		f.late.Add(1)
	default:
		f.once.Do(func() { close(f.frozen) })
		select {
		case <-f.thaw:
			f.late.Add(1)
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	return f.base.RoundTrip(req)
}

// TestThawedInvocation: an invocation's deadline passes between its order
// write and its completion; the process freezes with the completion
// unsent; another instance retries past the lease; then the process thaws
// and its completion is sent late. Under FailClosed the retry marked the
// record indeterminate and the late completion replaces it (a known
// outcome beats an unknown one): retries replay the frozen run's answer.
// Under Takeover the retry ran again, found the frozen run's order and
// completed; the late completion is refused (its version is gone):
// retries replay the taking-over run's answer. One order either way.
func TestThawedInvocation(t *testing.T) {
	tb := newHWTables(t)
	run := token()
	const invocation = 800 * time.Millisecond
	lease := invocation + policydefault.LeaseMargin
	for pi, pol := range []idemkit.StalePolicy{idemkit.FailClosed, idemkit.Takeover} {
		name := map[idemkit.StalePolicy]string{idemkit.FailClosed: "fail-closed", idemkit.Takeover: "takeover"}[pol]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tenant := fmt.Sprintf("th%sp%dz", run, pi)
			key := "k-" + tenant
			body := `{"sku":"th","quantity":1,"amount_cents":1999,"currency":"EUR"}`
			opts := hwOptions{policy: idemkit.Policy{OnStaleLease: pol}, callTime: dynalite.Scale(time.Second)}

			clkA := testclock.New()
			ctx := invocationCtx(t, clkA, invocation)
			dl, _ := ctx.Deadline()
			// The first completion waits out its call timeout, past the
			// deadline; the next one is frozen.
			ftA := faults.New(baseTransport(), kitComplete(faults.Timeout, 1)(tb, tenant))
			frz := &freezer{base: ftA, deadline: dl, thaw: make(chan struct{}), frozen: make(chan struct{})}
			opts.clock = clkA
			a := newHWInstance(t, tb, frz, opts)
			firstDone := make(chan answer, 1)
			go func() { firstDone <- call(ctx, a.h, event(tenant, "/orders", key, body)) }()
			select {
			case <-frz.frozen:
			case ans := <-firstDone:
				t.Fatalf("the invocation ended without freezing: %v", ans)
			}

			clkB := testclock.New()
			opts.clock = clkB
			b := newHWInstance(t, tb, faults.New(baseTransport()), opts)
			send := func() answer {
				t.Helper()
				ans := call(invocationCtx(t, clkB, 3*time.Second), b.h, event(tenant, "/orders", key, body))
				rows := tb.rows(t, tenant, false)
				if len(rows) != 1 {
					t.Fatalf("%d orders, want the frozen run's one: %v", len(rows), rows)
				}
				if ans.Status == 201 && rows[0] != hwID(t, ans) {
					t.Fatalf("answered %v, the table holds %v", ans, rows)
				}
				return ans
			}
			clkB.Advance(pastPending(lease))
			after := send()
			close(frz.thaw)
			first := <-firstDone
			if first.Status != 201 || first.Replay {
				t.Fatalf("the frozen run's own answer: %v, want its 201", first)
			}
			if frz.late.Load() == 0 {
				t.Fatal("no held call was sent after the thaw")
			}
			final := send()
			// Whose completion the record holds: each instance's clock
			// stands still, the retrying one's a lease ahead.
			rec, err := getLive(context.Background(), tb.clean(t), idemkit.Scope{Tenant: tenant, Operation: "POST /orders", Key: key}.ID(false), clkB.Now())
			if err != nil || rec.State != idemkit.StateCompleted {
				t.Fatalf("record after the thaw: %+v, %v; want completed", rec, err)
			}
			completedBy := map[bool]string{true: "frozen", false: "taking-over"}[rec.CompletedAt.Equal(clkA.Now())]
			want := map[idemkit.StalePolicy]string{idemkit.FailClosed: "frozen", idemkit.Takeover: "taking-over"}[pol]
			if completedBy != want {
				t.Fatalf("the record holds the %s run's completion (completed at %s; clocks %s and %s), want the %s run's",
					completedBy, rec.CompletedAt, clkA.Now(), clkB.Now(), want)
			}
			switch pol {
			case idemkit.FailClosed:
				if after.Status != 409 || after.Problem != "indeterminate-operator-required" {
					t.Fatalf("retry after the lease: %v, want 409 indeterminate-operator-required", after)
				}
				if final.Status != 201 || !final.Replay || final.Body != first.Body {
					t.Fatalf("after the thaw: %v, want the replay of the frozen run's answer %v", final, first)
				}
			case idemkit.Takeover:
				if after.Status != 201 || after.Replay {
					t.Fatalf("retry after the lease: %v, want a fresh 201", after)
				}
				if final.Status != 201 || !final.Replay || final.Body != after.Body {
					t.Fatalf("after the thaw: %v, want the replay of the taking-over run's answer %v", final, after)
				}
			}
			summary(t, "deadline %s passed before the completion; frozen, retried by another instance after the lease: %d %s replay=%v; thawed, the late completion sent; then %d replay=%v, the record holding the %s run's completion; orders 1",
				invocation, after.Status, after.Problem, after.Replay, final.Status, final.Replay, completedBy)
		})
	}
}

// TestKeyReusedAfterRetention: a key reused after its record expired (a
// key that embeds no time, so the kit takes the request as new). The
// example derives its order ID from the execution identity, which is the
// key's, so the same order finds the stored one (201, one order), and a
// different order under the old key cannot be stored. That must end in
// an answer that stays, not in a 503 that tells the client to retry the
// same key forever: once retried, it is replayed or the same refusal.
// Counted from the orders table: one order, the first.
func TestKeyReusedAfterRetention(t *testing.T) {
	tb := newHWTables(t)
	tenant := "rr" + token() + "z"
	clk := testclock.New()
	const retention = 10 * time.Second
	in := newHWInstance(t, tb, faults.New(baseTransport()), hwOptions{
		// A short lease with one renewal and no deadline: the record's
		// life is then the clock's alone, which moves past it below (a
		// real deadline cannot follow a clock moved that far).
		policy: idemkit.Policy{ReplayWindow: retention / 2, RecordRetention: retention, Lease: 2 * time.Second, MaxRenewals: 1},
		clock:  clk, callTime: callTimeout,
	})
	send := func(key, sku string) answer {
		t.Helper()
		body := fmt.Sprintf(`{"sku":%q,"quantity":1,"amount_cents":1999,"currency":"EUR"}`, sku)
		return call(context.Background(), in.h, event(tenant, "/orders", key, body))
	}
	first := send("reused-1", "first")
	if first.Status != 201 {
		t.Fatalf("first order: %v", first)
	}
	// The record has expired: its retention, and the minute a record
	// outlives its lease (the clock skew its life tolerates), have passed.
	const expired = retention + time.Minute + 10*time.Second
	clk.Advance(expired)

	same := send("reused-1", "first")
	if same.Status != 201 || hwID(t, same) != hwID(t, first) {
		t.Fatalf("the same order under the expired key: %v, want 201 naming %s", same, hwID(t, first))
	}
	clk.Advance(expired)
	other := send("reused-1", "second")
	again := send("reused-1", "second")
	if other.Status >= 500 || again.Status >= 500 {
		t.Fatalf("another order under the expired key: %v, then %v; want a final answer, not a 5xx to retry forever", other, again)
	}
	if again.Status != other.Status || again.Body != other.Body {
		t.Fatalf("another order under the expired key: %v, then %v; want the same answer", other, again)
	}
	if rows := tb.rows(t, tenant, false); len(rows) != 1 || rows[0] != hwID(t, first) {
		t.Fatalf("orders %v, want only the first %s", rows, hwID(t, first))
	}
	summary(t, "same order under the expired key: %d naming the stored order; another order: %d %s, then %d replay=%v; orders 1",
		same.Status, other.Status, other.Problem, again.Status, again.Replay)
}

// failAfterWrite stores orders through Repo, then fails the first fail
// of them with a plain error although they were stored: a handler that
// returns an error after its own write landed.
type failAfterWrite struct {
	orders.Repo
	fail atomic.Int32
}

func (r *failAfterWrite) CreateOrder(ctx context.Context, tenant string, o orders.Order) (orders.Order, error) {
	stored, err := r.Repo.CreateOrder(ctx, tenant, o)
	if err == nil && r.fail.Add(-1) >= 0 {
		return orders.Order{}, errors.New("connection reset after the order was stored")
	}
	return stored, err
}

// TestHandlerErrorAfterItsWriteLanded: the handler's order lands and the
// handler then returns a plain error, so the guard frees the key; with the
// kit's release or the retry's claim losing its answer too. The retry
// runs again and finds the order by its execution-derived ID: one order,
// and the retry's 201 and every replay name it.
func TestHandlerErrorAfterItsWriteLanded(t *testing.T) {
	tb := newHWTables(t)
	run := token()
	for ci, tc := range []struct {
		name  string
		rules []hwRule
	}{
		{"alone", nil},
		{"release/lost-ack/x1", []hwRule{kitRelease(faults.LostAck, 1)}},
		{"release/timeout-applied/x1", []hwRule{kitRelease(faults.TimeoutApplied, 1)}},
		{"retry-claim/lost-ack/x1", []hwRule{func(tb hwTables, tenant string) faults.Rule {
			r := kitClaim(faults.LostAck, 1)(tb, tenant)
			r.Skip = 1 // the retry's claim
			return r
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tenant := fmt.Sprintf("ea%sc%dz", run, ci)
			ft := faults.New(baseTransport())
			for _, r := range tc.rules {
				ft.Add(r(tb, tenant))
			}
			clk := testclock.New()
			in := newHWInstance(t, tb, ft, hwOptions{clock: clk, callTime: dynalite.Scale(300 * time.Millisecond),
				repo: func(r orders.Repo) orders.Repo {
					f := &failAfterWrite{Repo: r}
					f.fail.Store(1)
					return f
				}})
			body := `{"sku":"ea","quantity":1,"amount_cents":1999,"currency":"EUR"}`
			var kinds []string
			var id string
			for i := range 3 {
				a := call(invocationCtx(t, clk, 3*time.Second), in.h, event(tenant, "/orders", "k-"+tenant, body))
				rows := tb.rows(t, tenant, false)
				if len(rows) != 1 {
					t.Fatalf("answer %d: %v; %d orders, want the one stored", i+1, a, len(rows))
				}
				switch {
				case i == 0 && a.Status == 503 && a.Problem == "temporarily-unavailable":
					kinds = append(kinds, "failed")
				case i == 1 && a.Status == 201 && !a.Replay, i == 2 && a.Status == 201 && a.Replay:
					if hwID(t, a) != rows[0] || (id != "" && hwID(t, a) != id) {
						t.Fatalf("answer %d names %s, the table holds %v", i+1, hwID(t, a), rows)
					}
					id = hwID(t, a)
					kinds = append(kinds, map[bool]string{false: "run", true: "replay"}[a.Replay])
				default:
					t.Fatalf("answer %d: %v; want the handler's 503, then a run, then a replay", i+1, a)
				}
			}
			if len(tc.rules) > 0 && len(ft.Events()) == 0 {
				t.Fatal("no fault was injected")
			}
			summary(t, "answers %s; %d faults injected; orders 1", strings.Join(kinds, ", "), len(ft.Events()))
		})
	}
}
