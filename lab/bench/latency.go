package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/compress"
	"github.com/idemkit/idemkit/internal/testing/eventlog"
	"github.com/idemkit/idemkit/internal/testing/testpayload"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/warmcache"
)

// Paths are the request paths measured: a fresh execution, a replay
// (without and with the warm cache), an in-flight conflict and a handler
// error.
var Paths = []string{"fresh", "replay", "replay+cache", "conflict", "error"}

// Row is one path at one response size: what the store was asked for and
// how long a wrapped invocation took against its baseline.
type Row struct {
	Path string // fresh, replay, replay+cache, conflict, error
	Size int
	// Codec is the store's dynamo.Options.Codec; empty for the default.
	Codec dynamo.Codec
	// Calls, ReadUnits and WriteUnits are what one request used, as the
	// store reported them to the guard.
	Calls                 int
	ReadUnits, WriteUnits float64
	// P50 and P99 are of the wrapped handler. The baselines, measured
	// interleaved with it, are the bare handler; Same, the very requests
	// the store sent for the path, re-sent straight through the SDK; and
	// Min, the minimal hand-written calls (conditional PutItem +
	// UpdateItem for fresh, failed PutItem + GetItem for replay). Ratio
	// is P50 / (BareP50 + SameP50) and RatioMin P50 / (BareP50 + MinP50);
	// 0 where the path has no baseline.
	P50, P99         time.Duration
	BareP50, BareP99 time.Duration
	SameP50, SameP99 time.Duration
	MinP50, MinP99   time.Duration
	Ratio, RatioMin  float64
	// Added is the median over rounds of what the wrapped handler took
	// beyond the bare handler and the same requests of its own round: a
	// paired estimate of the kit's added latency, which the server's
	// latency, drifting from round to round, moves far less than it moves
	// the difference of two independent medians (Ratio). Paired is
	// 1 + Added / (BareP50 + SameP50). Both 0 where the path has no
	// baseline.
	Added  time.Duration
	Paired float64
	// Compress is, on a fresh path where the store compresses the body,
	// the median over rounds of what compressing it between the SDK's
	// calls adds: the same requests re-sent with the response body
	// compressed by the store's own encoders where the store compresses
	// it (after the claim's answer, before the completion is sent), minus
	// the same requests of that round. 0 where nothing is compressed.
	Compress time.Duration
	// InSitu is, where Compress is measured, the median over rounds of
	// the compression itself in same+z, timed around it with no system
	// call (reading the thread's CPU time would take one, which on some
	// virtual machines costs the compression after it). Compress less
	// InSitu is what compressing costs the requests around it.
	InSitu time.Duration
}

// Latency measures every path at every size against the DynamoDB server
// client talks to, n measured rounds each after warm-up. Each round runs
// the wrapped handler, the bare handler and the raw SDK calls (and, where
// the store compresses the body, the same calls with that compression
// between them) in a rotating order, so that drift and ordering cost them
// alike.
func Latency(ctx context.Context, client *dynamodb.Client, table string, n int, paths []string) ([]Row, error) {
	return LatencyWith(ctx, client, table, n, paths, testpayload.Sizes, "")
}

// LatencyWith is Latency at the given sizes, over a store compressing
// with codec ("": the default).
func LatencyWith(ctx context.Context, client *dynamodb.Client, table string, n int, paths []string, sizes []int, codec dynamo.Codec) ([]Row, error) {
	if len(paths) == 0 {
		paths = Paths
	}
	var rows []Row
	for _, size := range sizes {
		for _, path := range paths {
			r, err := measure(ctx, client, table, path, size, n, codec)
			if err != nil {
				return nil, fmt.Errorf("%s %d B: %w", path, size, err)
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

var errDownstream = errors.New("bench: downstream failed")

// handler is the shape of the wrapped and the bare handler.
type handler = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// rig is one path's wrapped handler and its baselines.
type rig struct {
	path    string
	want    int // the wrapped handler's status; unused for the error path
	bare    handler
	wrapped handler
	capture *capturing    // the store's client
	store   *dynamo.Store // the store under the wrapped handler's guard
	obs     *eventlog.Log // the usage of the last guarded request
	raw     *raw
	sent    []call // the requests of the latest wrapped invocation
	// zAt is the index in sent of the request whose item carries the
	// body compressed with zPool, -1 when none does; zBody is the body.
	zAt   int
	zPool *compress.Pool
	zBody []byte
	zOut  []byte // what the last same+z round compressed
}

// samples are the measured rounds' durations, one slice per contender.
type samples struct {
	wrapped, bare, min, same []time.Duration
	samez                    []time.Duration // where the store compresses
	zWall                    []time.Duration // the compression in samez
}

// timing is one round's duration of each contender; samez is set where
// z is.
type timing struct {
	wrapped, bare, min, same, samez time.Duration
	z                               bool
	zWall                           time.Duration // the compression in samez
}

// measure measures path at size: n rounds after warm-up, each running the
// wrapped handler and its baselines interleaved.
func measure(ctx context.Context, client *dynamodb.Client, table, path string, size, n int, codec dynamo.Codec) (Row, error) {
	row := Row{Path: path, Size: size, Codec: codec}
	body := string(testpayload.JSON(size))
	rg, err := newRig(client, table, path, body, codec)
	if err != nil {
		return row, err
	}
	prefix := fmt.Sprintf("%s-%s-%d-%d-", path, codec, size, time.Now().UnixNano())
	fixed := testpayload.Event(prefix + "fixed")
	if err := rg.seed(ctx, fixed, prefix+"fixed"); err != nil {
		return row, err
	}
	rg.raw = newRaw(client, table, path, size, body, prefix)
	if err := rg.raw.setup(ctx); err != nil {
		return row, err
	}

	const warm = 30
	var s samples
	for i := -warm; i < n; i++ {
		ev := fixed
		rekey, rekeyZ := "", ""
		if path == "fresh" || path == "error" {
			ev = testpayload.Event(prefix + strconv.Itoa(i+warm))
			rekey = "same-" + prefix + strconv.Itoa(i+warm)
			rekeyZ = "samez-" + prefix + strconv.Itoa(i+warm)
		}
		t, err := rg.round(ctx, i+warm, ev, rekey, rekeyZ)
		if err != nil {
			return row, err
		}
		if i >= 0 {
			s.wrapped, s.bare, s.min, s.same = append(s.wrapped, t.wrapped), append(s.bare, t.bare), append(s.min, t.min), append(s.same, t.same)
			if t.z {
				s.samez = append(s.samez, t.samez)
				s.zWall = append(s.zWall, t.zWall)
			}
		}
	}
	rg.summarise(&row, s)
	return row, nil
}

// newRig builds path's wrapped handler: the guard over the DynamoDB store
// (behind the warm cache for replay+cache) on a capturing client, around a
// handler answering a body-sized 201, or failing for the error path.
func newRig(client *dynamodb.Client, table, path, body string, codec dynamo.Codec) (*rig, error) {
	rg := &rig{path: path, want: 201, capture: &capturing{Client: client}, obs: &eventlog.Log{KeepLast: true}, zAt: -1, zBody: []byte(body)}
	rg.bare = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 201,
			Headers: map[string]string{"Content-Type": "application/json", "Location": "/orders/ord_1", "X-Request-Id": "r"}, Body: body}, nil
	}
	next := rg.bare
	if path == "error" {
		next = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			return events.APIGatewayV2HTTPResponse{}, errDownstream
		}
	}
	ds, err := dynamo.New(rg.capture, table, dynamo.Options{Codec: codec})
	if err != nil {
		return nil, err
	}
	rg.store = ds
	var store idemkit.Store = ds
	if path == "replay+cache" {
		store = warmcache.New(ds, warmcache.Config{})
	}
	g, err := idemkit.New(idemkit.Config{Store: store, Observer: rg.obs})
	if err != nil {
		return nil, err
	}
	rg.wrapped = apigw.WrapV2(g, apigw.Config{Tenant: apigw.SingleTenant("bench")}, next)
	if path == "conflict" {
		rg.want = 409
	}
	return rg, nil
}

// seed stores the record the path finds under key, fixed's key: a
// completed one for the replays (by a first wrapped request), one held in
// flight by another owner with fixed's body for the conflict.
func (rg *rig) seed(ctx context.Context, fixed events.APIGatewayV2HTTPRequest, key string) error {
	switch rg.path {
	case "replay", "replay+cache":
		_, err := rg.wrapped(ctx, fixed)
		return err
	case "conflict":
		return holdKey(ctx, rg.store, fixed, key)
	}
	return nil
}

// round runs round j once: the wrapped handler on ev, the bare handler,
// the raw calls and the wrapped handler's latest requests re-sent under
// rekey, and, where those carry a compressed body, the same requests
// re-sent under rekeyZ with the body compressed between them where the
// store compresses it; starting with the (j mod m)th of the m contenders
// so that each takes each place in turn.
func (rg *rig) round(ctx context.Context, j int, ev events.APIGatewayV2HTTPRequest, rekey, rekeyZ string) (timing, error) {
	t := timing{z: rg.zAt >= 0}
	m := 4
	if t.z {
		m = 5
	}
	for k := 0; k < m; k++ {
		switch (j + k) % m {
		case 0:
			rg.capture.calls, rg.capture.zAt = rg.capture.calls[:0], -1
			start := time.Now()
			resp, err := rg.wrapped(ctx, ev)
			t.wrapped = time.Since(start)
			rg.sent = append(rg.sent[:0], rg.capture.calls...)
			if rg.zAt = rg.capture.zAt; rg.zAt >= 0 {
				if rg.zPool = compress.ByName(string(rg.capture.zCodec)); rg.zPool == nil {
					return t, fmt.Errorf("wrapped: body encoding %q, not a codec the bench knows", rg.capture.zCodec)
				}
			}
			if rg.path == "error" {
				if !errors.Is(err, errDownstream) {
					return t, fmt.Errorf("wrapped: %v, want the handler's error", err)
				}
			} else if err != nil || resp.StatusCode != rg.want {
				return t, fmt.Errorf("wrapped: status %d %v, want %d (%s)", resp.StatusCode, err, rg.want, resp.Body)
			}
		case 1:
			start := time.Now()
			_, _ = rg.bare(ctx, ev)
			t.bare = time.Since(start)
		case 2:
			start := time.Now()
			err := rg.raw.run(ctx, j)
			t.min = time.Since(start)
			if err != nil {
				return t, fmt.Errorf("raw: %w", err)
			}
		case 3:
			start := time.Now()
			for _, c := range rg.sent {
				if err := c(ctx, rekey); err != nil {
					return t, fmt.Errorf("same requests: %w", err)
				}
			}
			t.same = time.Since(start)
		case 4:
			// As the store does: the claim's answer, then the body
			// compressed by the same encoders, then the completion.
			var ok bool
			start := time.Now()
			for i, c := range rg.sent {
				if i == rg.zAt {
					z0 := time.Now()
					rg.zOut, ok = rg.zPool.Body(rg.zBody)
					t.zWall = time.Since(z0)
				}
				if err := c(ctx, rekeyZ); err != nil {
					return t, fmt.Errorf("same requests with compression: %w", err)
				}
			}
			t.samez = time.Since(start)
			if !ok {
				return t, fmt.Errorf("same requests with compression: the %d-byte body the store compressed did not compress", len(rg.zBody))
			}
		}
	}
	return t, nil
}

// summarise puts into row the last guarded request's usage and the
// quantiles of s, with the ratios where the path has raw calls.
func (rg *rig) summarise(row *Row, s samples) {
	u := rg.obs.Last().Usage
	row.Calls, row.ReadUnits, row.WriteUnits = u.Calls, u.ReadUnits, u.WriteUnits
	row.P50, row.P99 = quantile(s.wrapped, 0.50), quantile(s.wrapped, 0.99)
	row.BareP50, row.BareP99 = quantile(s.bare, 0.50), quantile(s.bare, 0.99)
	if rg.raw.calls > 0 {
		row.MinP50, row.MinP99 = quantile(s.min, 0.50), quantile(s.min, 0.99)
		row.RatioMin = float64(row.P50) / float64(row.BareP50+row.MinP50)
		row.SameP50, row.SameP99 = quantile(s.same, 0.50), quantile(s.same, 0.99)
		row.Ratio = float64(row.P50) / float64(row.BareP50+row.SameP50)
		row.Added = quantile(added(s), 0.50)
		row.Paired = 1 + float64(row.Added)/float64(row.BareP50+row.SameP50)
		row.Compress = compressed(s)
		row.InSitu = quantile(s.zWall, 0.5)
	}
}

// compressed returns the median over rounds of same+z minus same, 0 when
// not every round measured same+z.
func compressed(s samples) time.Duration {
	if len(s.samez) == 0 || len(s.samez) != len(s.same) {
		return 0
	}
	d := make([]time.Duration, len(s.same))
	for i := range d {
		d[i] = s.samez[i] - s.same[i]
	}
	return quantile(d, 0.50)
}

// added returns, for each round of s, the wrapped handler's time minus
// the bare handler's and the same requests'.
func added(s samples) []time.Duration {
	d := make([]time.Duration, len(s.wrapped))
	for i := range d {
		d[i] = s.wrapped[i] - s.bare[i] - s.same[i]
	}
	return d
}

// fingerprintOf returns the fingerprint the wrapper computes for ev, read
// from the record a throwaway request with ev's body stores.
func fingerprintOf(ev events.APIGatewayV2HTTPRequest) (string, error) {
	mem := &recordingStore{}
	g, err := idemkit.New(idemkit.Config{Store: mem})
	if err != nil {
		return "", err
	}
	h := apigw.WrapV2(g, apigw.Config{Tenant: apigw.SingleTenant("bench")}, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 201}, nil
	})
	if _, err := h(context.Background(), ev); err != nil {
		return "", err
	}
	if mem.fp == "" {
		return "", errors.New("no fingerprint recorded")
	}
	return mem.fp, nil
}

// recordingStore stores every write (it keeps nothing) and remembers the
// fingerprint of the claim.
type recordingStore struct {
	idemkit.Store
	fp string
}

func (s *recordingStore) Create(_ context.Context, rec *idemkit.Record) (*idemkit.Record, error) {
	s.fp = rec.Fingerprint
	return nil, nil
}

func (s *recordingStore) Replace(context.Context, *idemkit.Record, *idemkit.Record) (*idemkit.Record, error) {
	return nil, nil
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

// raw is what a hand-written store would send for a path: the same
// record content, the body stored as is, one SDK call per step.
type raw struct {
	client *dynamodb.Client
	table  string
	path   string
	body   []byte
	prefix string
	calls  int
}

func newRaw(c *dynamodb.Client, table, path string, size int, body, prefix string) *raw {
	r := &raw{client: c, table: table, path: path, body: []byte(body), prefix: "raw-" + prefix}
	switch path {
	case "fresh", "replay", "conflict", "error":
		r.calls = 2
	}
	return r
}

func (r *raw) claimItem(key string) map[string]types.AttributeValue {
	now := time.Now()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int64) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
	}
	return map[string]types.AttributeValue{
		"pk": s("o1|5:bench12:POST /orders" + strconv.Itoa(len(key)) + ":" + key), "st": s("in_flight"), "tn": s("bench"),
		"op": s("POST /orders"), "ik": s(key), "fp": s("v1:sha256:8a4b0c8f9e2d7a61c3f05e4b92d1a7c6e0f38b5d2a9c4e17f6b3d8a05c2e9f14"),
		"ow": s("5b7f7a1e-6a55-4c36-9a53-0d1f3d2e9c41"), "lu": n(now.Add(time.Minute).UnixMilli()), "ru": n(now.Add(24 * time.Hour).UnixMilli()),
		"exp": n(now.Add(24 * time.Hour).Unix()), "ca": n(now.UnixMilli()),
	}
}

func (r *raw) completion(item map[string]types.AttributeValue) *dynamodb.UpdateItemInput {
	return &dynamodb.UpdateItemInput{
		TableName:           aws.String(r.table),
		Key:                 map[string]types.AttributeValue{"pk": item["pk"]},
		UpdateExpression:    aws.String("SET st = :c, da = :da, sc = :sc, sh = :sh, sb = :sb"),
		ConditionExpression: aws.String("ow = :ow"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":c":  &types.AttributeValueMemberS{Value: "completed"},
			":da": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().UnixMilli(), 10)},
			":sc": &types.AttributeValueMemberN{Value: "201"},
			":sh": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				"Content-Type": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "application/json"}}},
				"Location":     &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "/orders/ord_1"}}},
			}},
			":sb": &types.AttributeValueMemberB{Value: r.body},
			":ow": item["ow"],
		},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	}
}

// setup stores the record a replay or conflict finds.
func (r *raw) setup(ctx context.Context) error {
	switch r.path {
	case "replay", "conflict":
		item := r.claimItem(r.prefix + "fixed")
		if _, err := r.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(r.table), Item: item}); err != nil {
			return err
		}
		if r.path == "replay" {
			_, err := r.client.UpdateItem(ctx, r.completion(item))
			return err
		}
	}
	return nil
}

// run makes the raw calls of round i.
func (r *raw) run(ctx context.Context, i int) error {
	switch r.path {
	case "fresh", "error":
		item := r.claimItem(r.prefix + strconv.Itoa(i))
		if _, err := r.client.PutItem(ctx, r.claim(item)); err != nil {
			return err
		}
		if r.path == "error" {
			// The release: the key's tombstone in place of the claim.
			tomb := map[string]types.AttributeValue{"pk": item["pk"], "st": &types.AttributeValueMemberS{Value: "released"},
				"ow": item["ow"], "lu": item["ca"], "exp": item["exp"]}
			_, err := r.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(r.table), Item: tomb,
				ConditionExpression: aws.String("ow = :ow"), ExpressionAttributeValues: map[string]types.AttributeValue{":ow": item["ow"]},
				ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
			return err
		}
		_, err := r.client.UpdateItem(ctx, r.completion(item))
		return err
	case "replay", "conflict":
		item := r.claimItem(r.prefix + "fixed")
		_, err := r.client.PutItem(ctx, r.claim(item))
		var cf *types.ConditionalCheckFailedException
		if !errors.As(err, &cf) {
			return fmt.Errorf("claim of a held key: %v, want a condition failure", err)
		}
		_, err = r.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(r.table), Key: map[string]types.AttributeValue{"pk": item["pk"]},
			ConsistentRead: aws.Bool(true), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		return err
	}
	return nil
}

func (r *raw) claim(item map[string]types.AttributeValue) *dynamodb.PutItemInput {
	return &dynamodb.PutItemInput{
		TableName: aws.String(r.table), Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		ReturnConsumedCapacity:              types.ReturnConsumedCapacityTotal,
	}
}

// call re-sends one captured request, under another partition key when
// pk is not empty. A condition failure is an answer, not an error.
type call func(ctx context.Context, pk string) error

// capturing is the store's client; it keeps the requests of the current
// invocation so that they can be re-sent as the Same baseline, and which
// of them carries a compressed body in which codec (zAt -1: none). It is
// used by one goroutine at a time.
type capturing struct {
	*dynamodb.Client
	calls  []call
	zAt    int
	zCodec dynamo.Codec
}

func rekeyed(m map[string]types.AttributeValue, pk string) map[string]types.AttributeValue {
	if pk == "" {
		return m
	}
	c := maps.Clone(m)
	c["pk"] = &types.AttributeValueMemberS{Value: pk}
	return c
}

func answered(err error) error {
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		return nil
	}
	return err
}

// attrBody and attrBodyEncoding are the item attributes holding a stored
// body and naming its codec (the item layout of package dynamo).
const (
	attrBody         = "sb"
	attrBodyEncoding = "se"
)

func (c *capturing) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if enc, ok := in.Item[attrBodyEncoding].(*types.AttributeValueMemberS); ok {
		c.zAt, c.zCodec = len(c.calls), dynamo.Codec(enc.Value)
	}
	capture(c, in, func(cp *dynamodb.PutItemInput, pk string) { cp.Item = rekeyed(in.Item, pk) }, c.Client.PutItem, optFns, answered)
	return c.Client.PutItem(ctx, in, optFns...)
}

func (c *capturing) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	capture(c, in, func(cp *dynamodb.GetItemInput, pk string) { cp.Key = rekeyed(in.Key, pk) }, c.Client.GetItem, optFns, nil)
	return c.Client.GetItem(ctx, in, optFns...)
}

func (c *capturing) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	capture(c, in, func(cp *dynamodb.DeleteItemInput, pk string) { cp.Key = rekeyed(in.Key, pk) }, c.Client.DeleteItem, optFns, answered)
	return c.Client.DeleteItem(ctx, in, optFns...)
}

func (c *capturing) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if enc, ok := updated(in, attrBodyEncoding).(*types.AttributeValueMemberS); ok {
		c.zAt, c.zCodec = len(c.calls), dynamo.Codec(enc.Value)
	}
	capture(c, in, func(cp *dynamodb.UpdateItemInput, pk string) { cp.Key = rekeyed(in.Key, pk) }, c.Client.UpdateItem, optFns, answered)
	return c.Client.UpdateItem(ctx, in, optFns...)
}

// capture keeps a call that sends a copy of in again, its key set by
// rekey, through send; its error is read by check (nil: as it is).
func capture[In, Out any](c *capturing, in *In, rekey func(*In, string),
	send func(context.Context, *In, ...func(*dynamodb.Options)) (Out, error), optFns []func(*dynamodb.Options), check func(error) error) {
	c.calls = append(c.calls, func(ctx context.Context, pk string) error {
		cp := *in
		rekey(&cp, pk)
		_, err := send(ctx, &cp, optFns...)
		if check != nil {
			err = check(err)
		}
		return err
	})
}

// updated returns the value an UpdateItem sets name to ("name = :p" in its
// SET clause), nil when it sets none.
func updated(in *dynamodb.UpdateItemInput, name string) types.AttributeValue {
	set, _, _ := strings.Cut(strings.TrimPrefix(aws.ToString(in.UpdateExpression), "SET "), " REMOVE ")
	for _, a := range strings.Split(set, ", ") {
		if n, p, ok := strings.Cut(a, " = "); ok && n == name {
			return in.ExpressionAttributeValues[p]
		}
	}
	return nil
}
