package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
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
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/policydefault"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// EnvReliability picks the sizes of the reliability scenarios: "full" runs
// the sizes integration/RESULTS.md records (make reliability); anything else
// the reduced sizes make test runs.
const EnvReliability = "IDEMKIT_RELIABILITY"

// full reports whether the full sizes were asked for.
func full() bool { return os.Getenv(EnvReliability) == "full" }

// size returns reduced, or fullSize under IDEMKIT_RELIABILITY=full.
func size(reduced, fullSize int) int {
	if full() {
		return fullSize
	}
	return reduced
}

// summary logs the one-line figures of a scenario, the lines
// RESULTS.md records.
func summary(t *testing.T, format string, args ...any) {
	t.Helper()
	mode := "reduced"
	if full() {
		mode = "full"
	}
	t.Logf("RELIABILITY %s [%s] %s", t.Name(), mode, fmt.Sprintf(format, args...))
}

// baseTransport is the HTTP transport under every test client: enough idle
// connections for the storms.
func baseTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        512,
		MaxIdleConnsPerHost: 512,
		MaxConnsPerHost:     64,
		IdleConnTimeout:     30 * time.Second,
	}
}

// newSDKClient returns a DynamoDB client for endpoint whose requests go
// through rt (nil: a fresh baseTransport).
func newSDKClient(t testing.TB, endpoint string, rt http.RoundTripper) *dynamodb.Client {
	t.Helper()
	if rt == nil {
		rt = baseTransport()
	}
	c, err := dynalite.NewClientVia(context.Background(), endpoint, rt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// effects counts the executions of the business handler per scope in a
// table of its own, with one atomic counter update per execution, so that
// executions in other processes are counted too.
type effects struct {
	client *dynamodb.Client
	table  string
}

func effectsTable() *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:            aws.String("effects"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}
}

func newEffects(t testing.TB, c *dynamodb.Client) *effects {
	t.Helper()
	return &effects{client: c, table: dynalite.CreateTable(t, c, effectsTable())}
}

func scopeName(sc idemkit.Scope) string { return sc.ID(false) }

// record adds one execution of scope and returns the count after it.
func (e *effects) record(ctx context.Context, scope string) (int, error) {
	out, err := e.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(e.table),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: scope}},
		UpdateExpression:          aws.String("ADD n :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, err
	}
	n, _ := strconv.Atoi(out.Attributes["n"].(*types.AttributeValueMemberN).Value)
	return n, nil
}

// counts returns every scope's execution count.
func (e *effects) counts(t testing.TB) map[string]int {
	t.Helper()
	m := map[string]int{}
	var start map[string]types.AttributeValue
	for {
		out, err := e.client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(e.table), ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatalf("scan effects: %v", err)
		}
		for _, it := range out.Items {
			n, _ := strconv.Atoi(it["n"].(*types.AttributeValueMemberN).Value)
			m[it["pk"].(*types.AttributeValueMemberS).Value] = n
		}
		if len(out.LastEvaluatedKey) == 0 {
			return m
		}
		start = out.LastEvaluatedKey
	}
}

// orderBody is what the business handler answers: its own scope, so that a
// response that crossed scopes is seen, and a token unique to the
// execution, so that a replay can be told from a second run.
type orderBody struct {
	Tenant    string `json:"tenant"`
	Operation string `json:"operation"`
	Key       string `json:"key"`
	Order     string `json:"order"`
	Run       int    `json:"run"`
	Worker    string `json:"worker,omitempty"`
	Pad       string `json:"pad,omitempty"`
}

func token() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// business is the guarded handler: it records an execution (locally and,
// with fx, in the effects table) and answers 201 with its scope.
type business struct {
	fx     *effects
	worker string
	runs   atomic.Int64
	mu     sync.Mutex
	byKey  map[string]int
	// answer, when set, chooses the response of a run (n is the scope's
	// run count, from 1); nil: 201.
	answer func(n int) int
	// pad is the length of filler added to every response body.
	pad int
	// block, when set, is called inside the handler before it answers.
	block func(ctx context.Context, sc idemkit.Scope)
	// stop, when set, makes a run whose context is done after block
	// return the context's error instead of acting.
	stop bool
}

func newBusiness(fx *effects) *business { return &business{fx: fx, byKey: map[string]int{}} }

func (b *business) count(sc idemkit.Scope) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byKey[scopeName(sc)]
}

func (b *business) handler(op string) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		sc := idemkit.Scope{Tenant: ev.RequestContext.Authorizer.JWT.Claims["sub"], Operation: op, Key: ev.Headers["idempotency-key"]}
		b.mu.Lock()
		b.byKey[scopeName(sc)]++
		n := b.byKey[scopeName(sc)]
		b.mu.Unlock()
		status := 201
		if b.answer != nil {
			status = b.answer(n)
		}
		if b.block != nil {
			b.block(ctx, sc)
		}
		if b.stop && ctx.Err() != nil {
			return events.APIGatewayV2HTTPResponse{}, context.Cause(ctx)
		}
		if status == 201 {
			b.runs.Add(1)
			if b.fx != nil {
				if _, err := b.fx.record(context.WithoutCancel(ctx), scopeName(sc)); err != nil {
					return events.APIGatewayV2HTTPResponse{}, err
				}
			}
		}
		body, _ := json.Marshal(orderBody{Tenant: sc.Tenant, Operation: sc.Operation, Key: sc.Key, Order: "ord_" + token(), Run: n, Worker: b.worker, Pad: strings.Repeat("x", b.pad)})
		return events.APIGatewayV2HTTPResponse{
			StatusCode: status,
			Headers:    map[string]string{"Content-Type": "application/json", "Location": "/orders/" + sc.Key, "Date": time.Now().UTC().Format(http.TimeFormat)},
			Body:       string(body),
		}, nil
	}
}

type v2Handler = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// wrap returns the business handler guarded by g through the v2 adapter,
// tenants from the JWT "sub" claim.
func wrap(g *idemkit.Guard, b *business, op string) v2Handler {
	return apigw.WrapV2(g, apigw.Config{Tenant: apigw.JWTClaim("sub")}, b.handler(op))
}

// event returns a realistic HTTP API (payload 2.0) event for POST path
// with the tenant in the JWT claims.
func event(tenant, path, key, body string) events.APIGatewayV2HTTPRequest {
	h := map[string]string{"content-type": "application/json", "user-agent": "client/1.0", "x-amzn-trace-id": "Root=1-" + token()}
	if key != "" {
		h["idempotency-key"] = key
	}
	return events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       "POST " + path,
		RawPath:        path,
		RawQueryString: "",
		Headers:        h,
		Body:           body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: "123456789012", APIID: "api1", Stage: "$default", RequestID: token(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "POST", Path: path, Protocol: "HTTP/1.1", SourceIP: "192.0.2.1", UserAgent: "client/1.0"},
			Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
				JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": tenant}},
			},
		},
	}
}

// answer is what a client got: API Gateway turns a Lambda error into a
// 500 {"message":"Internal Server Error"}.
type answer struct {
	Status  int
	Body    string
	Header  map[string]string
	Err     error
	Replay  bool
	Problem string // the problem type's last path segment, for problems
}

func (a answer) String() string {
	return fmt.Sprintf("%d replay=%v problem=%s body=%.120s err=%v", a.Status, a.Replay, a.Problem, a.Body, a.Err)
}

func call(ctx context.Context, h v2Handler, ev events.APIGatewayV2HTTPRequest) answer {
	resp, err := h(ctx, ev)
	if err != nil {
		return answer{Status: 500, Body: `{"message":"Internal Server Error"}`, Err: err}
	}
	a := answer{Status: resp.StatusCode, Body: resp.Body, Header: resp.Headers, Replay: resp.Headers["Idempotent-Replayed"] == "true"}
	if resp.Headers["Content-Type"] == "application/problem+json" {
		var p struct{ Type string }
		_ = json.Unmarshal([]byte(resp.Body), &p)
		a.Problem = p.Type[strings.LastIndex(p.Type, "/")+1:]
	}
	return a
}

// kind names what a is for the scenarios' tables: a run, a replay, or
// the problem a retry meets; anything else is a's own description.
func (a answer) kind() string {
	switch {
	case a.Status == 201 && a.Replay:
		return "replay"
	case a.Status == 201:
		return "run"
	case a.Problem == "outcome-unknown":
		return "unknown"
	case a.Problem == "temporarily-unavailable":
		return "failed"
	case a.Problem == "in-flight":
		return "in-flight"
	case a.Problem == "indeterminate-operator-required":
		return "indeterminate"
	case a.Problem == "outcome-pending":
		return "pending"
	}
	return a.String()
}

// pendingWindow is how long past a lease's end the guard, by its defaults,
// answers a request that meets the lease's run marked indeterminate with
// outcome-pending (the run may still complete: LeaseMargin, then
// WriteAttempts completion writes of WriteTimeout each and the pauses
// between them, 50 ms then 100 ms) before it answers
// indeterminate-operator-required.
const pendingWindow = policydefault.LeaseMargin + 3*5*time.Second + 150*time.Millisecond

// pastPending is how far a test's clock moves past a lease of length lease
// for a retry to find its run's outcome an operator's case.
func pastPending(lease time.Duration) time.Duration { return lease + pendingWindow + time.Second }

// retryAfter reports whether a carries a positive Retry-After.
func (a answer) retryAfter() bool {
	n, err := strconv.Atoi(a.Header["Retry-After"])
	return err == nil && n > 0
}

// callTimeout is the store call timeout of tests that do not test
// timeouts: long enough for a loaded machine (dynalite.Scale stretches it
// further).
var callTimeout = dynalite.Scale(30 * time.Second)

// newStore returns a dynamo store on a fresh table of the shared server
// whose SDK client sends its calls through rt (nil: straight). A zero
// opts.CallTimeout is callTimeout.
func newStore(t testing.TB, rt http.RoundTripper, opts dynamo.Options) (*dynamo.Store, *dynamodb.Client, string) {
	t.Helper()
	if opts.CallTimeout == 0 {
		opts.CallTimeout = callTimeout
	}
	raw := dynalite.Client(t)
	table := dynalite.CreateTable(t, raw, dynamo.TableDefinition("rel", dynamo.Options{}))
	s, err := dynamo.New(newSDKClient(t, dynalite.Endpoint(t), rt), table, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, raw, table
}

// getLive reads the record id as a request at now counts it: an error
// that is idemkit.ErrNotFound when none is stored, or it is a released
// key's tombstone, or expired at now.
func getLive(ctx context.Context, s idemkit.Store, id string, now time.Time) (*idemkit.Record, error) {
	rec, err := s.Get(ctx, id)
	switch {
	case err != nil:
		return nil, err
	case rec.State == idemkit.StateReleased || !rec.Live(now):
		return nil, fmt.Errorf("record %q is %s, expires %s: %w", id, rec.State, rec.ExpiresAt, idemkit.ErrNotFound)
	}
	return rec, nil
}

// extend renews the lease of rec, the in_flight record as last written,
// to until, as a run's renewal does (a Replace of rec with a version of
// its own), and returns the record it stored.
func extend(ctx context.Context, s idemkit.Store, rec *idemkit.Record, until time.Time) (*idemkit.Record, error) {
	next := rec.Clone()
	next.LeaseUntil, next.Version = until, rand.Text()
	met, err := s.Replace(ctx, next, rec)
	switch {
	case err != nil:
		return rec, err
	case met != nil && met.Version != next.Version:
		return rec, fmt.Errorf("renewal of %s refused: the record is the %s one of %s", rec.ID, met.State, met.Owner)
	}
	return next, nil
}

// resolveWhenAccepted records an operator's decision on id through
// idemkit.Resolve at now or, when Resolve refuses it because the
// execution may still be running, at the time it names.
func resolveWhenAccepted(ctx context.Context, s idemkit.OperatorStore, id string, res idemkit.Resolution, now time.Time) (*idemkit.Record, error) {
	rec, _, err := idemkit.Resolve(ctx, s, id, res, now)
	var re *idemkit.ResolveError
	if errors.As(err, &re) && errors.Is(err, idemkit.ErrMayBeRunning) {
		rec, _, err = idemkit.Resolve(ctx, s, id, res, re.ResolvableAt)
	}
	return rec, err
}

// stormKeys sends every key from clients clients at once, workers keys at
// a time: send(k, c) is client c's whole exchange for key k.
func stormKeys[K any](workers int, keys []K, clients int, send func(k K, c int)) {
	work := make(chan K)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for k := range work {
				var cw sync.WaitGroup
				for c := range clients {
					cw.Go(func() { send(k, c) })
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
}
