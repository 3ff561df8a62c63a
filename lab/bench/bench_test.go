package bench

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/internal/testing/testpayload"
	"github.com/idemkit/idemkit/lambda/apigw"
)

// nullClient answers every call at once, as DynamoDB would: a claim of a
// key it holds fails with the stored item (ALL_OLD), so a replay is one
// call. No request is serialized: what is left is the kit's own work on
// the DynamoDB path (item encoding, compression, decoding). With forget
// set it keeps no item, as fresh requests need none: DynamoDB holds its
// items on the server, and thousands kept in this process's heap would
// charge the kit for marking them at every garbage collection.
type nullClient struct {
	dynamo.Client
	mu     sync.Mutex
	items  map[string]map[string]types.AttributeValue
	forget bool
}

func (c *nullClient) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	pk := in.Item["pk"].(*types.AttributeValueMemberS).Value
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.items[pk]; ok && in.ReturnValuesOnConditionCheckFailure != "" {
		if st := old["st"].(*types.AttributeValueMemberS).Value; st == "completed" {
			return nil, &types.ConditionalCheckFailedException{Message: new(string), Item: old}
		}
	}
	if !c.forget {
		c.items[pk] = in.Item
	}
	return &dynamodb.PutItemOutput{}, nil
}

// UpdateItem applies a completion's SET and REMOVE clauses (attribute
// names as they are, values by placeholder) to the stored item, as the
// server would, its condition taken as met.
func (c *nullClient) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	pk := in.Key["pk"].(*types.AttributeValueMemberS).Value
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forget {
		return &dynamodb.UpdateItemOutput{}, nil
	}
	item := maps.Clone(c.items[pk])
	if item == nil {
		item = map[string]types.AttributeValue{}
	}
	set, remove, _ := strings.Cut(strings.TrimPrefix(aws.ToString(in.UpdateExpression), "SET "), " REMOVE ")
	for _, a := range strings.Split(set, ", ") {
		if name, p, ok := strings.Cut(a, " = "); ok {
			item[name] = in.ExpressionAttributeValues[p]
		}
	}
	for _, name := range strings.Split(remove, ", ") {
		delete(item, name)
	}
	c.items[pk] = item
	return &dynamodb.UpdateItemOutput{}, nil
}

// BenchmarkDynamoPath measures the v2 wrapper over the DynamoDB store on
// a client that answers at once: the kit's CPU and allocations on the
// path a Lambda takes, without the SDK and the network. The "s2/" rows
// are the store with dynamo.CodecS2, at the sizes it compresses.
func BenchmarkDynamoPath(b *testing.B) {
	for _, codec := range []dynamo.Codec{dynamo.CodecZstd, dynamo.CodecS2} {
		sizes, prefix := testpayload.Sizes, ""
		if codec != dynamo.CodecZstd {
			sizes, prefix = testpayload.Sizes[1:], string(codec)+"/"
		}
		for _, size := range sizes {
			benchDynamoPath(b, prefix, size, dynamo.Options{Codec: codec})
		}
	}
}

// nullPath is the API Gateway wrapper over the DynamoDB store, on a client
// that answers without a network (and forgets what it stored, when
// forget), in front of a handler that answers an order of size bytes.
func nullPath(b *testing.B, size int, forget bool, opts dynamo.Options) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	b.Helper()
	body := string(testpayload.JSON(size))
	next := func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 201,
			Headers: map[string]string{"Content-Type": "application/json", "Location": "/orders/ord_1"}, Body: body}, nil
	}
	s, err := dynamo.New(&nullClient{items: map[string]map[string]types.AttributeValue{}, forget: forget}, "idem", opts)
	if err != nil {
		b.Fatal(err)
	}
	return apigw.WrapV2(testguard.New(b, idemkit.Config{Store: s}), apigw.Config{Tenant: apigw.SingleTenant("bench")}, next)
}

func benchDynamoPath(b *testing.B, prefix string, size int, opts dynamo.Options) {
	{
		for _, path := range []string{"fresh", "replay"} {
			b.Run(prefix+path+"/"+strconv.Itoa(size)+"B", func(b *testing.B) {
				h := nullPath(b, size, path == "fresh", opts)
				evs := make([]events.APIGatewayV2HTTPRequest, b.N)
				for i := range evs {
					key := "k"
					if path == "fresh" {
						key = "k-" + strconv.Itoa(i)
					}
					evs[i] = testpayload.Event(key)
				}
				ctx := context.Background()
				if path == "replay" {
					h(ctx, testpayload.Event("k"))
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := ProcessCPU()
				for i := 0; i < b.N; i++ {
					r, err := h(ctx, evs[i])
					if err != nil || r.StatusCode != 201 || len(r.Body) != size {
						b.Fatal(r.StatusCode, err, len(r.Body))
					}
				}
				// CPU time of the process (GC included) per request: on a
				// shared machine, less inflated by waiting than ns/op.
				b.ReportMetric(float64(ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// BenchmarkDynamoPathParallel is BenchmarkDynamoPath's fresh path with
// requests running at once on every processor (b.RunParallel), as
// concurrent requests through httpmw do: it shows whether completions
// compress in parallel or queue for a shared encoder.
func BenchmarkDynamoPathParallel(b *testing.B) {
	for _, size := range testpayload.Sizes[1:] {
		b.Run("fresh/"+strconv.Itoa(size)+"B", func(b *testing.B) {
			h := nullPath(b, size, true, dynamo.Options{})
			var n atomic.Int64
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := ProcessCPU()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r, err := h(ctx, testpayload.Event("k-"+strconv.FormatInt(n.Add(1), 10)))
					if err != nil || r.StatusCode != 201 || len(r.Body) != size {
						b.Error(r.StatusCode, err, len(r.Body))
						return
					}
				}
			})
			b.ReportMetric(float64(ProcessCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
