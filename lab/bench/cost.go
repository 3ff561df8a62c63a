package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/testpayload"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// Prices are what the cost table prices requests at: DynamoDB's
// on-demand request units and Lambda's duration, in one region, with the
// date they were read and where.
type Prices struct {
	// WriteUnit and ReadUnit are dollars per million write and read
	// request units (on-demand, Standard table class).
	WriteUnit, ReadUnit float64
	// GBSecond is dollars per GB-second of Lambda duration (x86).
	GBSecond float64
	// Region, Date and Source say where and when the prices were read.
	Region, Date, Source string
}

// DefaultPrices are us-east-1's, as AWS's pricing pages listed them on
// the date given.
var DefaultPrices = Prices{
	WriteUnit: 0.625, ReadUnit: 0.125, GBSecond: 0.0000166667,
	Region: "us-east-1", Date: "2026-12-02",
	Source: "aws.amazon.com/dynamodb/pricing/on-demand/ and aws.amazon.com/lambda/pricing/ (x86, first tier)",
}

// VCPUMemory is the memory setting, in MB, at which a Lambda function
// has one full vCPU. Below it a function gets a share of a vCPU in
// proportion to its memory.
const VCPUMemory = 1769

// LambdaMemories are the function sizes the kit's CPU is priced at.
var LambdaMemories = []int{512, VCPUMemory}

// Wall returns how long cpu of single-threaded work takes on a function
// of memMB: stretched by 1769/memMB below one vCPU, as it is at one vCPU
// above it.
func Wall(cpu time.Duration, memMB int) time.Duration {
	return time.Duration(float64(cpu) * math.Max(1, float64(VCPUMemory)/float64(memMB)))
}

// Lambda returns the dollars per million requests of cpu of the kit's
// work per request on a function of memMB: memMB/1024 GB billed for
// Wall(cpu, memMB). Below 1,769 MB that is the same at every size (a
// smaller function runs the work slower in proportion); above it, more.
func (p Prices) Lambda(cpu time.Duration, memMB int) float64 {
	stretch := math.Max(1, float64(VCPUMemory)/float64(memMB))
	return 1e6 * p.GBSecond * float64(memMB) / 1024 * cpu.Seconds() * stretch
}

// DynamoDB returns the dollars per million requests of read and write
// request units per request.
func (p Prices) DynamoDB(read, write float64) float64 {
	return read*p.ReadUnit + write*p.WriteUnit
}

// Cost is what one request of a path, with a response body of Size
// bytes, costs with a store compressing with Codec: the request units
// the server counted (Units) and the kit's CPU.
type Cost struct {
	Path  string // fresh, replay, conflict, error
	Size  int
	Codec string // a CostCodecs name
	Units Units
	// CPU is this process's CPU time per wrapped request, less the bare
	// handler's: the kit's own work, the SDK's for the calls it makes,
	// and the garbage collection of what both allocate.
	CPU time.Duration
	// CPUErr is the standard error of CPU, the mean of requests that
	// vary: two choices whose prices differ by less than what twice that
	// costs are not told apart (Cheapest).
	CPUErr time.Duration
}

// Dollars returns c's price per million requests at p on a function of
// memMB: DynamoDB's and Lambda's.
func (p Prices) Dollars(c Cost, memMB int) (ddb, lambda float64) {
	return p.DynamoDB(c.Units.Read, c.Units.Write), p.Lambda(c.CPU, memMB)
}

// CostCodec is a store's compression choice in the cost table.
type CostCodec struct {
	Name string
	Opts dynamo.Options
}

// CostCodecs are the choices priced: zstd and S2 compressing every body
// they make smaller, whatever its size, and no compression.
var CostCodecs = []CostCodec{
	{"zstd", dynamo.Options{Codec: dynamo.CodecZstd, CompressAbove: 1}},
	{"s2", dynamo.Options{Codec: dynamo.CodecS2, CompressAbove: 1}},
	{"none", dynamo.Options{CompressAbove: -1}},
}

// CostSizes are the response sizes of the cost table.
var CostSizes = []int{200, 4 << 10, 64 << 10, 256 << 10}

// CostPaths are the paths of the cost table.
var CostPaths = []string{"fresh", "replay", "conflict", "error"}

// Tie is the price difference, in dollars per million requests, under
// which two choices are reported as costing the same even where their
// CPU was measured exactly: a few µs of CPU at 1,769 MB, well under one
// request unit.
const Tie = 0.001

// Cheapest returns the names of the choices among costs (one per codec)
// that cost least at p on a function of memMB: the cheapest and every
// other whose price is within Tie of it, or within what twice the
// standard error of the difference of their CPU costs (measurement
// noise: their request units are exact).
func (p Prices) Cheapest(costs []Cost, memMB int) []string {
	total := func(c Cost) float64 { d, l := p.Dollars(c, memMB); return d + l }
	best := 0
	for i, c := range costs {
		if total(c) < total(costs[best]) {
			best = i
		}
	}
	var names []string
	for _, c := range costs {
		se := math.Hypot(float64(c.CPUErr), float64(costs[best].CPUErr))
		if total(c)-total(costs[best]) <= Tie+p.Lambda(time.Duration(2*se), memMB) {
			names = append(names, c.Codec)
		}
	}
	return names
}

// MeasureCost measures each of paths at each of sizes with each of
// CostCodecs on the server client talks to: n requests of each after
// warm-up, the codecs taking turns, through the v2 adapter over a store
// on a Meter. It returns one Cost per path, size and codec, in that
// order.
func MeasureCost(ctx context.Context, client *dynamodb.Client, table string, n int, paths []string, sizes []int) ([]Cost, error) {
	var out []Cost
	for _, size := range sizes {
		for _, path := range paths {
			cs, err := measureCost(ctx, client, table, path, size, n)
			if err != nil {
				return nil, fmt.Errorf("cost of %s at %d B: %w", path, size, err)
			}
			out = append(out, cs...)
		}
	}
	return out, nil
}

// costRig is one codec's wrapped handler for the cost of a path.
type costRig struct {
	codec   CostCodec
	meter   *Meter
	wrapped handler
	fixed   events.APIGatewayV2HTTPRequest // the key replay and conflict find
	cpu     []time.Duration                // per request
	units   Units
}

func measureCost(ctx context.Context, client *dynamodb.Client, table, path string, size, n int) ([]Cost, error) {
	body := string(testpayload.JSON(size))
	bare := func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 201,
			Headers: map[string]string{"Content-Type": "application/json", "Location": "/orders/ord_1"}, Body: body}, nil
	}
	next := bare
	if path == "error" {
		next = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			return events.APIGatewayV2HTTPResponse{}, errDownstream
		}
	}
	prefix := fmt.Sprintf("cost-%s-%d-%d-", path, size, time.Now().UnixNano())
	rigs := make([]*costRig, len(CostCodecs))
	for i, cc := range CostCodecs {
		m := NewMeter(client, table)
		s, err := dynamo.New(m, table, cc.Opts)
		if err != nil {
			return nil, err
		}
		g, err := idemkit.New(idemkit.Config{Store: s})
		if err != nil {
			return nil, err
		}
		rg := &costRig{codec: cc, meter: m, wrapped: apigw.WrapV2(g, apigw.Config{Tenant: apigw.SingleTenant("bench")}, next),
			fixed: testpayload.Event(prefix + cc.Name + "-fixed")}
		if err := seedCost(ctx, rg, s, path); err != nil {
			return nil, err
		}
		if _, err := m.Take(ctx); err != nil {
			return nil, err
		}
		rigs[i] = rg
	}
	want := 201
	switch path {
	case "conflict":
		want = 409
	case "error":
		want = 0
	}
	const warm = 5
	var bareCPU time.Duration
	for i := -warm; i < n; i++ {
		for k := range rigs {
			rg := rigs[(i+warm+k)%len(rigs)]
			ev := rg.fixed
			if path == "fresh" || path == "error" {
				ev = testpayload.Event(prefix + rg.codec.Name + "-" + strconv.Itoa(i+warm))
			}
			cpu0 := ProcessCPU()
			resp, err := rg.wrapped(ctx, ev)
			cpu := ProcessCPU() - cpu0
			switch {
			case want == 0 && !errors.Is(err, errDownstream):
				return nil, fmt.Errorf("%s: %v, want the handler's error", rg.codec.Name, err)
			case want != 0 && (err != nil || resp.StatusCode != want):
				return nil, fmt.Errorf("%s: status %d %v, want %d", rg.codec.Name, resp.StatusCode, err, want)
			}
			u, err := rg.meter.Take(ctx)
			if err != nil {
				return nil, err
			}
			if i >= 0 {
				rg.cpu = append(rg.cpu, cpu)
				rg.units = u // deterministic per request: the last is kept
			}
		}
		cpu0 := ProcessCPU()
		_, _ = bare(ctx, rigs[0].fixed)
		if i >= 0 {
			bareCPU += ProcessCPU() - cpu0
		}
	}
	out := make([]Cost, len(rigs))
	for i, rg := range rigs {
		mean, se := meanErr(rg.cpu)
		out[i] = Cost{Path: path, Size: size, Codec: rg.codec.Name, Units: rg.units, CPU: max(0, mean-bareCPU/time.Duration(n)), CPUErr: se}
	}
	return out, nil
}

// meanErr returns the mean of d and its standard error.
func meanErr(d []time.Duration) (mean, se time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	var sum float64
	for _, v := range d {
		sum += float64(v)
	}
	m := sum / float64(len(d))
	if len(d) < 2 {
		return time.Duration(m), 0
	}
	var ss float64
	for _, v := range d {
		ss += (float64(v) - m) * (float64(v) - m)
	}
	return time.Duration(m), time.Duration(math.Sqrt(ss / float64(len(d)-1) / float64(len(d))))
}

// seedCost stores what path finds under rg's fixed key: the completed
// record for a replay, one held in flight by another owner for a
// conflict.
func seedCost(ctx context.Context, rg *costRig, s *dynamo.Store, path string) error {
	switch path {
	case "replay":
		_, err := rg.wrapped(ctx, rg.fixed)
		return err
	case "conflict":
		return holdKey(ctx, s, rg.fixed, rg.fixed.Headers["idempotency-key"])
	}
	return nil
}

// holdKey claims key, with ev's fingerprint, for another owner, as a
// request in flight would.
func holdKey(ctx context.Context, s *dynamo.Store, ev events.APIGatewayV2HTTPRequest, key string) error {
	now := time.Now()
	sc := idemkit.Scope{Tenant: "bench", Operation: "POST /orders", Key: key}
	fp, err := fingerprintOf(ev)
	if err != nil {
		return err
	}
	rec := &idemkit.Record{ID: sc.ID(false), Scope: sc, State: idemkit.StateInFlight, Fingerprint: fp, Owner: "other", Version: "other",
		LeaseUntil: now.Add(time.Hour), ReplayUntil: now.Add(2 * time.Hour), ExpiresAt: now.Add(2 * time.Hour), CreatedAt: now}
	if err := write(ctx, s, rec, nil); err != nil {
		return fmt.Errorf("hold the key: %w", err)
	}
	return nil
}

// DefaultCodec returns, for each of sizes, what a store with the default
// options (dynamo.Options{}) stores a fresh response body of that size
// as: the codec named by its item ("zstd", "s2"), or "none" for a body
// stored as it is.
func DefaultCodec(ctx context.Context, client *dynamodb.Client, table string, sizes []int) (map[int]string, error) {
	g, err := guardOn(client, table, dynamo.Options{})
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, size := range sizes {
		body := string(testpayload.JSON(size))
		h := apigw.WrapV2(g, apigw.Config{Tenant: apigw.SingleTenant("bench")}, func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json", "Location": "/orders/ord_1"}, Body: body}, nil
		})
		key := fmt.Sprintf("default-%d-%d", size, time.Now().UnixNano())
		if resp, err := h(ctx, testpayload.Event(key)); err != nil || resp.StatusCode != 201 {
			return nil, fmt.Errorf("default store, %d B: status %d %v", size, resp.StatusCode, err)
		}
		sc := idemkit.Scope{Tenant: "bench", Operation: "POST /orders", Key: key}
		item, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{dynamo.DefaultKeyAttr: &types.AttributeValueMemberS{Value: sc.ID(false)}}})
		if err != nil {
			return nil, err
		}
		if _, ok := item.Item[attrBody]; !ok {
			return nil, fmt.Errorf("default store, %d B: no body stored", size)
		}
		out[size] = "none"
		if enc, ok := item.Item[attrBodyEncoding].(*types.AttributeValueMemberS); ok {
			out[size] = enc.Value
		}
	}
	return out, nil
}
