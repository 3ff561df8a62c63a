package dynalite

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Capability is a behaviour of DynamoDB that a compatible test server may
// lack. Tests assert DynamoDB's behaviour where the server has it, adapt
// to what Has measured, or skip with Require naming what is missing; no
// test may pass only because of one server's gap.
type Capability int

const (
	// AllOldOnConditionFailure: a ConditionalCheckFailedException carries
	// the current item when the request asked for
	// ReturnValuesOnConditionCheckFailure=ALL_OLD (DynamoDB, moto; not
	// dynalite 4.0.0). With it, a replay or a conflict is one call.
	AllOldOnConditionFailure Capability = iota + 1
	// FaithfulCapacity: ConsumedCapacity follows DynamoDB's accounting (a
	// write unit per started KB), measured on a 64 KiB item (dynalite; not
	// moto, which reports 1 unit).
	FaithfulCapacity
	// AtomicConditionalWrites: of concurrent conditional writes on one
	// item whose conditions all hold beforehand, exactly one succeeds
	// (DynamoDB, dynalite; not moto 5.2.1). Tests of races prove nothing
	// without it.
	AtomicConditionalWrites
	// RegionScopedTables: a table belongs to the region of the client that
	// created it and is invisible from other regions (DynamoDB, moto; not
	// dynalite, where one table is seen from every region).
	RegionScopedTables
	// UpdateTimeToLive: the UpdateTimeToLive operation exists (DynamoDB,
	// moto; dynalite answers UnknownOperationException).
	UpdateTimeToLive
	// Transactions: TransactWriteItems exists and applies its writes
	// (DynamoDB, DynamoDB Local, moto; dynalite answers
	// UnknownOperationException).
	Transactions
)

// Capabilities lists every Capability.
var Capabilities = []Capability{AllOldOnConditionFailure, FaithfulCapacity, AtomicConditionalWrites, RegionScopedTables, UpdateTimeToLive, Transactions}

var capabilityNames = map[Capability]string{
	AllOldOnConditionFailure: "ALL_OLD on condition failure",
	FaithfulCapacity:         "faithful consumed capacity",
	AtomicConditionalWrites:  "atomic conditional writes",
	RegionScopedTables:       "region-scoped tables",
	UpdateTimeToLive:         "UpdateTimeToLive",
	Transactions:             "TransactWriteItems",
}

func (c Capability) String() string {
	if n, ok := capabilityNames[c]; ok {
		return n
	}
	return "Capability(" + strconv.Itoa(int(c)) + ")"
}

// Support is what a probe measured: whether the server has the
// capability, and what was seen.
type Support struct {
	Capability Capability
	Has        bool
	Detail     string
}

func (s Support) String() string {
	verb := "has"
	if !s.Has {
		verb = "lacks"
	}
	return fmt.Sprintf("%s %s (%s)", verb, s.Capability, s.Detail)
}

// probeTrials and probeRacers size the AtomicConditionalWrites probe: in
// each trial probeRacers conditional updates race for one item.
const probeTrials, probeRacers = 10, 20

// probeUpdate sets n and 40 more attributes: a non-atomic server's window
// between its check and its write is the time it takes to apply the
// update, which this widens. With "SET n = :next" alone moto 5.2.1 let two
// racers win in one trial of 40; with this, in the first trial nearly
// always. (200 attributes make moto answer 500.)
var probeUpdate = func() string {
	var b strings.Builder
	b.WriteString("SET n = :next")
	for i := range 40 {
		fmt.Fprintf(&b, ", a%d = :v", i)
	}
	return b.String()
}()

// Probe measures, now, whether the server at endpoint has c, on a table
// of its own that it deletes. An error means the probe could not tell.
func Probe(ctx context.Context, endpoint string, c Capability) (Support, error) {
	client, err := NewClient(ctx, endpoint)
	if err != nil {
		return Support{}, err
	}
	client = dynamodb.New(client.Options(), func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: probeRacers, MaxIdleConns: probeRacers}}
	})
	name := tableName("probe", strings.ReplaceAll(c.String(), " ", "_"))
	in := &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}
	var inUse *types.ResourceInUseException
	if _, err := client.CreateTable(ctx, in); err != nil && !errors.As(err, &inUse) {
		return Support{}, fmt.Errorf("probe %s: create table: %w", c, err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), Scale(30*time.Second))
		defer cancel()
		_, _ = client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	}()
	if err := WaitActive(ctx, client, name); err != nil {
		return Support{}, fmt.Errorf("probe %s: %w", c, err)
	}
	p := prober{client: client, table: name}
	var s Support
	switch c {
	case AllOldOnConditionFailure:
		s, err = p.allOld(ctx)
	case FaithfulCapacity:
		s, err = p.capacity(ctx)
	case AtomicConditionalWrites:
		s, err = p.atomic(ctx)
	case RegionScopedTables:
		s, err = p.regions(ctx, endpoint)
	case UpdateTimeToLive:
		s, err = p.ttl(ctx)
	case Transactions:
		s, err = p.transactions(ctx)
	default:
		return Support{}, fmt.Errorf("probe: unknown capability %d", int(c))
	}
	if err != nil {
		return Support{}, fmt.Errorf("probe %s: %w", c, err)
	}
	s.Capability = c
	return s, nil
}

type prober struct {
	client *dynamodb.Client
	table  string
}

func (p prober) key(pk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}
}

func (p prober) put(ctx context.Context, item map[string]types.AttributeValue) error {
	_, err := p.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(p.table), Item: item})
	return err
}

func (p prober) allOld(ctx context.Context) (Support, error) {
	item := p.key("allold")
	item["v"] = &types.AttributeValueMemberS{Value: "old"}
	if err := p.put(ctx, item); err != nil {
		return Support{}, err
	}
	_, err := p.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(p.table),
		Item:                                p.key("allold"),
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return Support{}, fmt.Errorf("conditional PutItem on an existing item: err = %v, want ConditionalCheckFailedException", err)
	}
	if v, ok := ccf.Item["v"].(*types.AttributeValueMemberS); !ok || v.Value != "old" {
		return Support{Detail: fmt.Sprintf("a failed conditional PutItem with ReturnValuesOnConditionCheckFailure=ALL_OLD returned Item %v", ccf.Item)}, nil
	}
	// UpdateItem and DeleteItem take the same parameter, and the store
	// relies on it there too.
	_, err = p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(p.table),
		Key:                                 p.key("allold"),
		UpdateExpression:                    aws.String("SET v = :new"),
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ExpressionAttributeValues:           map[string]types.AttributeValue{":new": &types.AttributeValueMemberS{Value: "new"}},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if !errors.As(err, &ccf) {
		return Support{}, fmt.Errorf("conditional UpdateItem on an existing item: err = %v, want ConditionalCheckFailedException", err)
	}
	if v, ok := ccf.Item["v"].(*types.AttributeValueMemberS); !ok || v.Value != "old" {
		return Support{Detail: fmt.Sprintf("a failed conditional PutItem returned the item, a failed conditional UpdateItem with ReturnValuesOnConditionCheckFailure=ALL_OLD returned Item %v", ccf.Item)}, nil
	}
	return Support{Has: true, Detail: "a failed conditional PutItem and UpdateItem returned the item"}, nil
}

func (p prober) capacity(ctx context.Context) (Support, error) {
	item := p.key("cap")
	item["v"] = &types.AttributeValueMemberS{Value: strings.Repeat("x", 64<<10)}
	out, err := p.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:              aws.String(p.table),
		Item:                   item,
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		return Support{}, err
	}
	var units float64
	if out.ConsumedCapacity != nil {
		units = aws.ToFloat64(out.ConsumedCapacity.CapacityUnits)
	}
	// DynamoDB: one write unit per started KB, 65 for this item.
	detail := fmt.Sprintf("a 64 KiB PutItem reported %v write units, DynamoDB 65", units)
	return Support{Has: units >= 64, Detail: detail}, nil
}

func (p prober) atomic(ctx context.Context) (Support, error) {
	item := p.key("race")
	item["n"] = &types.AttributeValueMemberN{Value: "0"}
	if err := p.put(ctx, item); err != nil {
		return Support{}, err
	}
	// One connection per racer, opened beforehand, so that the racers'
	// requests arrive together rather than one connection setup apart.
	var warm sync.WaitGroup
	for range probeRacers {
		warm.Go(func() {
			_, _ = p.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(p.table), Key: p.key("race")})
		})
	}
	warm.Wait()
	for trial := range probeTrials {
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners int
			errs    []error
			start   = make(chan struct{})
		)
		for range probeRacers {
			wg.Go(func() {
				<-start
				_, err := p.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
					TableName:           aws.String(p.table),
					Key:                 p.key("race"),
					UpdateExpression:    aws.String(probeUpdate),
					ConditionExpression: aws.String("n = :cur"),
					ExpressionAttributeValues: map[string]types.AttributeValue{
						":cur":  &types.AttributeValueMemberN{Value: strconv.Itoa(trial)},
						":next": &types.AttributeValueMemberN{Value: strconv.Itoa(trial + 1)},
						":v":    &types.AttributeValueMemberS{Value: "v"},
					},
				})
				var ccf *types.ConditionalCheckFailedException
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners++
				case !errors.As(err, &ccf):
					errs = append(errs, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(errs) > 0 {
			return Support{}, errs[0]
		}
		if winners != 1 {
			return Support{Detail: fmt.Sprintf("trial %d of %d: %d of %d concurrent conditional UpdateItems on one item succeeded, want 1",
				trial+1, probeTrials, winners, probeRacers)}, nil
		}
	}
	return Support{Has: true, Detail: fmt.Sprintf("%d trials of %d concurrent conditional UpdateItems each had one winner", probeTrials, probeRacers)}, nil
}

func (p prober) regions(ctx context.Context, endpoint string) (Support, error) {
	const other = "eu-west-1"
	c, err := NewClientIn(ctx, endpoint, other)
	if err != nil {
		return Support{}, err
	}
	_, err = c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(p.table)})
	var nf *types.ResourceNotFoundException
	switch {
	case errors.As(err, &nf):
		return Support{Has: true, Detail: "a table created in " + Region + " is not found from " + other}, nil
	case err == nil:
		return Support{Detail: "a table created in " + Region + " is found from " + other}, nil
	}
	return Support{}, err
}

func (p prober) ttl(ctx context.Context) (Support, error) {
	_, err := p.client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(p.table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(true)},
	})
	var ae smithy.APIError
	switch {
	case err == nil:
		return Support{Has: true, Detail: "UpdateTimeToLive enabled TTL"}, nil
	case errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException":
		return Support{Detail: "UpdateTimeToLive answers UnknownOperationException"}, nil
	}
	return Support{}, err
}

func (p prober) transactions(ctx context.Context) (Support, error) {
	_, err := p.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String(p.table), Item: p.key("tx1")}},
			{Put: &types.Put{TableName: aws.String(p.table), Item: p.key("tx2")}},
		},
	})
	var ae smithy.APIError
	switch {
	case errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException":
		return Support{Detail: "TransactWriteItems answers UnknownOperationException"}, nil
	case err != nil:
		return Support{}, err
	}
	for _, pk := range []string{"tx1", "tx2"} {
		out, err := p.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(p.table), Key: p.key(pk), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return Support{}, err
		}
		if out.Item == nil {
			return Support{Detail: "TransactWriteItems succeeded but item " + pk + " is missing"}, nil
		}
	}
	return Support{Has: true, Detail: "TransactWriteItems wrote both items"}, nil
}

// probes caches the probes of each endpoint: each capability is probed
// once per server and test binary, on first use.
var probes struct {
	mu sync.Mutex
	m  map[string]map[Capability]*probeResult
}

type probeResult struct {
	once sync.Once
	s    Support
	err  error
}

// Supports returns what the server at Endpoint(t) does about c, probing
// it on the first call for that server; a probe that fails fails t.
func Supports(t testing.TB, c Capability) Support {
	t.Helper()
	ep := Endpoint(t)
	probes.mu.Lock()
	if probes.m == nil {
		probes.m = map[string]map[Capability]*probeResult{}
	}
	if probes.m[ep] == nil {
		probes.m[ep] = map[Capability]*probeResult{}
	}
	r := probes.m[ep][c]
	if r == nil {
		r = &probeResult{}
		probes.m[ep][c] = r
	}
	probes.mu.Unlock()
	r.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Scale(2*time.Minute))
		defer cancel()
		r.s, r.err = Probe(ctx, ep, c)
	})
	if r.err != nil {
		t.Fatalf("%s: %v", ep, r.err)
	}
	return r.s
}

// Has reports whether the server at Endpoint(t) has c, and logs what was
// measured.
func Has(t testing.TB, c Capability) bool {
	t.Helper()
	s := Supports(t, c)
	t.Logf("test server %s", s)
	return s.Has
}

// Require skips t, naming the capability and what was measured, unless
// the server at Endpoint(t) has every one of cs.
func Require(t testing.TB, cs ...Capability) {
	t.Helper()
	for _, c := range cs {
		if s := Supports(t, c); !s.Has {
			t.Skip(skipMessage(ServerName(), c, s.Detail))
		}
	}
}

// skipMessage is Require's reason for skipping: .ci/server-summary.sh
// counts the skips of each capability by it.
func skipMessage(server string, c Capability, detail string) string {
	return fmt.Sprintf("skipping: the test server (%s) lacks capability %q: %s", server, c, detail)
}

// ServerName names the server Endpoint uses: "dynalite", "moto",
// "localstack", or the value of IDEMKIT_DYNAMODB_ENDPOINT.
func ServerName() string {
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		return ep
	}
	return backendName()
}
