package dynamo_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit/dynamo"
)

// counting wraps a client, counting calls per operation and recording
// the largest item a PutItem sent.
type counting struct {
	dynamo.Client
	mu      sync.Mutex
	calls   map[string]int
	maxItem int
}

func newCounting(c dynamo.Client) *counting { return &counting{Client: c, calls: map[string]int{}} }

func (c *counting) count(op string) {
	c.mu.Lock()
	c.calls[op]++
	c.mu.Unlock()
}

func (c *counting) Calls(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[op]
}

func (c *counting) MaxItem() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxItem
}

func (c *counting) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.count("PutItem")
	n := sizeOf(in.Item)
	c.mu.Lock()
	c.maxItem = max(c.maxItem, n)
	c.mu.Unlock()
	return c.Client.PutItem(ctx, in, optFns...)
}

func (c *counting) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.count("GetItem")
	return c.Client.GetItem(ctx, in, optFns...)
}

func (c *counting) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.count("UpdateItem")
	return c.Client.UpdateItem(ctx, in, optFns...)
}

// sizeOf is an independent estimate of an item's size by the documented
// rules (names + values; numbers counted as their text length, an upper
// bound).
func sizeOf(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + valSize(v)
	}
	return n
}

func valSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return len(v.Value) + 1
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, e := range v.Value {
			n += len(e)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valSize(e)
		}
		return n
	}
	panic("unexpected attribute type")
}

// fakeClient returns a client of an httptest server answering every call
// with h.
func fakeClient(t *testing.T, h http.HandlerFunc) *dynamodb.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return endpointClient(srv.URL)
}

// endpointClient returns a client for a DynamoDB endpoint URL.
func endpointClient(url string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(url),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

// closedPort returns a local URL nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	return url
}

// target returns the operation named by a DynamoDB JSON request.
func target(r *http.Request) string {
	t := r.Header.Get("X-Amz-Target")
	for i := len(t) - 1; i >= 0; i-- {
		if t[i] == '.' {
			return t[i+1:]
		}
	}
	return t
}

// jsonError answers a DynamoDB JSON-protocol error.
func jsonError(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	w.Write(body)
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// base is a whole-second time near the real clock.
func base() time.Time { return time.Now().Truncate(time.Second).Add(time.Second) }
