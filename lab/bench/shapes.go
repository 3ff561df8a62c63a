package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/testpayload"
)

// Shapes are the requests the store sends, in the order they are timed:
// the engine's changes, each a Create (PutItem over no item) or a Replace
// (UpdateItem of what differs, conditioned on the version read), and the
// reads: a claim (Create), a completion, a release (the tombstone), a
// lease extension, the mark of a stale lease as indeterminate, an
// operator's resolution (each a Replace), a consistent read (GetItem) and
// a listing of indeterminate records (Query of the sparse index).
var Shapes = []string{"claim", "complete", "release", "extend", "mark", "resolve", "get", "list"}

// ShapeRow is one request shape timed from outside, as the SDK sees it:
// the store's own request, and the same request without its condition
// expression (NoCond), re-sent under fresh keys in the state the request
// finds on its path.
type ShapeRow struct {
	Shape string
	Call  string // the DynamoDB operation
	// Cond is the request's condition expression ("" for none).
	Cond     string
	P50, P90 time.Duration
	// NoCondP50 is the p50 of the same request without Cond (0 where it
	// has none): what the condition costs the server is P50 - NoCondP50.
	NoCondP50 time.Duration
	// Alts are the same request with another condition, each of
	// ShapeAlts[Shape], in that order.
	Alts []AltRow
}

// AltRow is a shape timed with another condition than the store's.
type AltRow struct {
	Alt
	P50, P90 time.Duration
}

// Alt is another condition for a shape's request, to time beside the
// store's: its expression, and the values it needs that the store's does
// not send. Besides the request's own names and values it may name those
// of the record the request is sent on (recordValues): its owner :o, the
// time of the request as the TTL attribute counts it :n (epoch seconds
// plus dynamo.KeptPast), and the TTL attribute #exp.
type Alt struct {
	Name   string
	Cond   string
	Values map[string]types.AttributeValue
}

// ShapeAlts are the conditions timed beside the store's own, by shape.
var ShapeAlts = map[string][]Alt{}

// shapeState is what a shape's request finds on its path, made under a
// record's key before the request is timed.
type shapeState int

const (
	stNone        shapeState = iota // no item
	stInFlight                      // claimed by the round's owner
	stStale                         // claimed, its lease ended
	stIndet                         // claimed and marked indeterminate
	stCompleted                     // claimed and completed
	stIndetTenant                   // indeterminate records of one tenant, once
)

var shapeStates = map[string]shapeState{
	"claim": stNone, "complete": stInFlight, "release": stInFlight, "extend": stInFlight,
	"mark": stStale, "resolve": stIndet, "get": stCompleted, "list": stIndetTenant,
}

// MeasureShapes times each of Shapes on the server client talks to, n
// rounds after warm-up. Each round makes, under keys of its own, the
// state the request finds (untimed), has the store send the request on
// one of them (captured, untimed), then re-sends it under the others,
// as is, without its condition and with each alternative, in an order
// that rotates from round to round.
func MeasureShapes(ctx context.Context, client *dynamodb.Client, table string, n int) ([]ShapeRow, error) {
	var rows []ShapeRow
	for _, shape := range Shapes {
		r, err := measureShape(ctx, client, table, shape, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", shape, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// sentCall is one request sent: its operation's name and its input (a
// *dynamodb.PutItemInput, UpdateItemInput, GetItemInput or QueryInput).
type sentCall struct {
	op string
	in any
}

// recording returns a client of client's options that keeps in *last
// each request sent through it.
func recording(client *dynamodb.Client, last *sentCall) *dynamodb.Client {
	return dynamodb.New(client.Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("idembenchRecord",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					*last = sentCall{op: awsmiddleware.GetOperationName(ctx), in: in.Parameters}
					return next.HandleInitialize(ctx, in)
				}), middleware.After)
		})
	})
}

// cond returns the call's condition expression, "" for none.
func (c sentCall) cond() string {
	switch in := c.in.(type) {
	case *dynamodb.PutItemInput:
		return aws.ToString(in.ConditionExpression)
	case *dynamodb.UpdateItemInput:
		return aws.ToString(in.ConditionExpression)
	}
	return ""
}

var exprToken = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

// used returns the names and values the expressions refer to.
func used(exprs ...*string) map[string]bool {
	u := map[string]bool{}
	for _, e := range exprs {
		for _, t := range exprToken.FindAllString(aws.ToString(e), -1) {
			u[t] = true
		}
	}
	return u
}

// pruned returns the names and values among names and values that u
// holds, nil for none: DynamoDB refuses one an expression does not use.
func pruned(u map[string]bool, names map[string]string, values map[string]types.AttributeValue) (map[string]string, map[string]types.AttributeValue) {
	var n map[string]string
	for k, v := range names {
		if u[k] {
			if n == nil {
				n = map[string]string{}
			}
			n[k] = v
		}
	}
	var vs map[string]types.AttributeValue
	for k, v := range values {
		if u[k] {
			if vs == nil {
				vs = map[string]types.AttributeValue{}
			}
			vs[k] = v
		}
	}
	return n, vs
}

// recordNames and recordValues are the names and values an Alt may use
// beside the request's: those of rec, the record the request is sent on,
// at now.
var recordNames = map[string]string{"#exp": dynamo.TTLAttr}

func recordValues(rec *idemkit.Record, now time.Time) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		":o": &types.AttributeValueMemberS{Value: rec.Owner},
		":n": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Unix()+int64(dynamo.KeptPast/time.Second), 10)},
	}
}

// withCond returns the values of the call with cond as its condition
// ("" for none): the names and values the request's expressions then use,
// among its own and extraNames and extra.
func withCond(names map[string]string, values, extra map[string]types.AttributeValue, extraNames map[string]string, cond *string, others ...*string) (*string, map[string]string, map[string]types.AttributeValue) {
	vs := maps.Clone(values)
	if vs == nil && len(extra) > 0 {
		vs = map[string]types.AttributeValue{}
	}
	maps.Copy(vs, extra)
	ns := maps.Clone(names)
	if ns == nil && len(extraNames) > 0 {
		ns = map[string]string{}
	}
	for k, v := range extraNames {
		if _, ok := ns[k]; !ok {
			ns[k] = v
		}
	}
	names = ns
	if aws.ToString(cond) == "" {
		cond = nil
	}
	n, v := pruned(used(append(others, cond)...), names, vs)
	return cond, n, v
}

// resend sends c again under key pk, with cond as its condition when
// set (an empty one: none) and extra names and values, and returns how
// long the call took. A refusal is an error: the state was made for it to
// pass.
func (c sentCall) resend(ctx context.Context, client *dynamodb.Client, pk string, cond *string, extra map[string]types.AttributeValue, extraNames map[string]string) (time.Duration, error) {
	key := func(m map[string]types.AttributeValue) map[string]types.AttributeValue {
		m = maps.Clone(m)
		m["pk"] = &types.AttributeValueMemberS{Value: pk}
		return m
	}
	var send func() error
	switch sent := c.in.(type) {
	case *dynamodb.PutItemInput:
		in := *sent
		if in.Item = key(in.Item); cond != nil {
			in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = withCond(in.ExpressionAttributeNames, in.ExpressionAttributeValues, extra, extraNames, cond)
		}
		send = func() error { _, err := client.PutItem(ctx, &in); return err }
	case *dynamodb.UpdateItemInput:
		in := *sent
		if in.Key = key(in.Key); cond != nil {
			in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues = withCond(in.ExpressionAttributeNames, in.ExpressionAttributeValues, extra, extraNames, cond, in.UpdateExpression)
		}
		send = func() error { _, err := client.UpdateItem(ctx, &in); return err }
	case *dynamodb.GetItemInput:
		in := *sent
		in.Key = key(in.Key)
		send = func() error { _, err := client.GetItem(ctx, &in); return err }
	case *dynamodb.QueryInput:
		send = func() error { _, err := client.Query(ctx, sent); return err }
	default:
		return 0, fmt.Errorf("%s: not a request the bench sends again", c.op)
	}
	start := time.Now()
	err := send()
	took := time.Since(start)
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		return took, fmt.Errorf("%s refused under %s: the state made for it does not pass its condition", c.op, pk)
	}
	return took, err
}

// shapeRecord is the record of key, owned by owner, in flight until
// lease.
func shapeRecord(tenant, key, owner string, now, lease time.Time) *idemkit.Record {
	sc := idemkit.Scope{Tenant: tenant, Operation: "POST /orders", Key: key}
	return &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight,
		Fingerprint: "v1:sha256:8a4b0c8f9e2d7a61c3f05e4b92d1a7c6e0f38b5d2a9c4e17f6b3d8a05c2e9f14", Owner: owner,
		LeaseUntil: lease, ReplayUntil: now.Add(2 * time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
}

// completed returns rec completed at now with a 4 KB JSON response.
func completed(rec *idemkit.Record, now time.Time) *idemkit.Record {
	c := rec.Clone()
	c.State, c.CompletedAt = idemkit.StateCompleted, now
	c.Snapshot = &idemkit.Snapshot{Status: 201, Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/orders/ord_1"}}, Body: testpayload.JSON(4 << 10)}
	return c
}

// change returns the record the engine writes in place of rec for shape
// at now, with the version version: what the transition rules make of an
// in_flight record (complete, release, extend, mark), of an indeterminate
// one (resolve).
func change(shape string, rec *idemkit.Record, now time.Time, version string) *idemkit.Record {
	out := rec.Clone()
	switch shape {
	case "complete":
		out = completed(rec, now)
	case "release":
		out = &idemkit.Record{ID: rec.ID, Scope: rec.Scope, State: idemkit.StateReleased, Fingerprint: rec.Fingerprint,
			Owner: rec.Owner, LeaseUntil: now, ExpiresAt: now, CreatedAt: now}
	case "extend":
		out.LeaseUntil = now.Add(2 * time.Minute)
	case "mark":
		out.State, out.Cause = idemkit.StateIndeterminate, idemkit.CauseLeaseExpired
	case "unknown":
		out.State, out.Cause, out.LeaseUntil = idemkit.StateIndeterminate, idemkit.CauseOutcomeUnknown, now
	case "resolve":
		out.State = idemkit.StateFailed
		out.Resolution = &idemkit.Resolution{As: idemkit.StateFailed, Operator: "bench", Reason: "timing the resolution", ResolvedAt: now}
	}
	out.Version = version
	return out
}

// write stores rec in place of prev (nil: a Create) through s. A record
// met is an error, the state was made for the write to land, unless it is
// rec itself (its version and owner): rec landed with its answer lost and
// was met when the SDK sent it again, which the engine takes as its own.
func write(ctx context.Context, s *dynamo.Store, rec, prev *idemkit.Record) error {
	var met *idemkit.Record
	var err error
	if prev == nil {
		met, err = s.Create(ctx, rec)
	} else {
		met, err = s.Replace(ctx, rec, prev)
	}
	if err == nil && met != nil && (met.Version != rec.Version || met.Owner != rec.Owner) {
		err = fmt.Errorf("%s: met a %s record of %s", rec.ID, met.State, met.Owner)
	}
	return err
}

// makeState gives rec's key the state st, through s, and leaves rec the
// record stored. Every key of a round is given the same versions, so
// that a Replace sent on one is sent again as is on the others.
func makeState(ctx context.Context, s *dynamo.Store, rec *idemkit.Record, st shapeState, now time.Time) error {
	if st == stNone {
		return nil
	}
	rec.Version = "claim"
	if err := write(ctx, s, rec, nil); err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	var next *idemkit.Record
	switch st {
	case stIndet, stIndetTenant:
		next = change("unknown", rec, now, "unknown")
	case stCompleted:
		next = change("complete", rec, now, "completed")
	default:
		return nil
	}
	if err := write(ctx, s, next, rec); err != nil {
		return err
	}
	*rec = *next
	return nil
}

// send has s send shape's request on rec, made in state st at now.
func send(ctx context.Context, s *dynamo.Store, shape string, rec *idemkit.Record, now time.Time) error {
	var err error
	switch shape {
	case "claim":
		rec.Version = "claim"
		err = write(ctx, s, rec, nil)
	case "complete", "release", "extend", "mark", "resolve":
		err = write(ctx, s, change(shape, rec, now, shape), rec)
	case "get":
		var got *idemkit.Record
		if got, err = s.Get(ctx, rec.ID); err == nil && got == nil {
			err = errors.New("the completed record is not there")
		}
	case "list":
		var recs []*idemkit.Record
		if recs, _, err = s.ListIndeterminate(ctx, rec.Scope.Tenant, "", 0, now); err == nil && len(recs) == 0 {
			err = errors.New("no indeterminate record listed")
		}
	}
	return err
}

func measureShape(ctx context.Context, client *dynamodb.Client, table, shape string, n int) (ShapeRow, error) {
	row := ShapeRow{Shape: shape}
	plain, err := dynamo.New(client, table, dynamo.Options{})
	if err != nil {
		return row, err
	}
	var last sentCall
	store, err := dynamo.New(recording(client, &last), table, dynamo.Options{})
	if err != nil {
		return row, err
	}
	st := shapeStates[shape]
	alts := ShapeAlts[shape]
	prefix := fmt.Sprintf("shape-%s-%d-", shape, time.Now().UnixNano())
	tenant := "bench"
	// lease is when a claim of the round's state ends its lease: a stale
	// one ends before the request's now.
	lease := func(now time.Time) time.Time {
		if st == stStale {
			return now.Add(time.Millisecond)
		}
		return now.Add(time.Minute)
	}
	at := func(now time.Time) time.Time {
		if st == stStale {
			return now.Add(time.Second)
		}
		return now
	}
	if st == stIndetTenant {
		tenant = prefix + "tenant"
		now := time.Now()
		for i := 0; i < 10; i++ {
			if err := makeState(ctx, plain, shapeRecord(tenant, prefix+strconv.Itoa(i), "owner", now, lease(now)), st, now); err != nil {
				return row, err
			}
		}
	}
	// contenders: 0 the store's request as is, 1 without its condition
	// (where it has one), 2... the alternatives.
	type sample struct{ d []time.Duration }
	m := 2 + len(alts)
	samples := make([]sample, m)
	const warm = 10
	for i := -warm; i < n; i++ {
		now := time.Now()
		owner := prefix + "owner-" + strconv.Itoa(i+warm)
		recs := make([]*idemkit.Record, m+1)
		for k := range recs {
			recs[k] = shapeRecord(tenant, prefix+strconv.Itoa(i+warm)+"-"+strconv.Itoa(k), owner, now, lease(now))
			if st != stIndetTenant {
				if err := makeState(ctx, plain, recs[k], st, now); err != nil {
					return row, err
				}
			}
		}
		if err := send(ctx, store, shape, recs[m], at(now)); err != nil {
			return row, fmt.Errorf("the store's request: %w", err)
		}
		c := last
		row.Call, row.Cond = c.op, c.cond()
		for j := 0; j < m; j++ {
			k := (i + warm + j) % m
			if k == 1 && row.Cond == "" {
				continue
			}
			var cond *string
			var extra map[string]types.AttributeValue
			var extraNames map[string]string
			switch {
			case k == 1:
				cond = aws.String("")
			case k >= 2:
				cond, extraNames = aws.String(alts[k-2].Cond), recordNames
				extra = recordValues(recs[k], at(now))
				maps.Copy(extra, alts[k-2].Values)
			}
			d, err := c.resend(ctx, client, recs[k].ID, cond, extra, extraNames)
			if err != nil {
				return row, err
			}
			if i >= 0 {
				samples[k].d = append(samples[k].d, d)
			}
		}
	}
	row.P50, row.P90 = quantile(samples[0].d, 0.5), quantile(samples[0].d, 0.9)
	row.NoCondP50 = quantile(samples[1].d, 0.5)
	for k, a := range alts {
		row.Alts = append(row.Alts, AltRow{Alt: a, P50: quantile(samples[k+2].d, 0.5), P90: quantile(samples[k+2].d, 0.9)})
	}
	return row, nil
}

// stateNames are the states a condition names, by the value it names
// them with.
var stateNames = map[string]string{
	":inflight": string(idemkit.StateInFlight), ":indeterminate": string(idemkit.StateIndeterminate),
	":completed": string(idemkit.StateCompleted), ":failed": string(idemkit.StateFailed), ":released": "released",
}

// StateValues returns the expression values of the states named (of
// ":inflight", ":indeterminate", ":completed", ":failed" and
// ":released"), as the store's conditions use them.
func StateValues(names ...string) map[string]types.AttributeValue {
	vs := map[string]types.AttributeValue{}
	for _, n := range names {
		vs[n] = &types.AttributeValueMemberS{Value: stateNames[n]}
	}
	return vs
}
