package dynamo_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/testpayload"
	"github.com/idemkit/idemkit/internal/usage"
	"github.com/idemkit/idemkit/observe"
)

// TestCodecMixed: a body stored by a store with one codec is replayed
// whole by a store with the other, so a table's writers can change codec
// one at a time; the item says which codec it holds.
func TestCodecMixed(t *testing.T) {
	_, c, table := newStore(t, dynamo.Options{})
	body := testpayload.JSON(8 << 10)
	for _, tc := range []struct{ write, read dynamo.Codec }{
		{dynamo.CodecS2, dynamo.CodecZstd},
		{dynamo.CodecZstd, dynamo.CodecS2},
		{dynamo.CodecS2, dynamo.CodecS2},
	} {
		t.Run(string(tc.write)+" then "+string(tc.read), func(t *testing.T) {
			w := storeOn(t, c, table, dynamo.Options{Codec: tc.write})
			r := storeOn(t, c, table, dynamo.Options{Codec: tc.read})
			ctx := context.Background()
			req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: "codec-" + string(tc.write) + "-" + string(tc.read)}, Fingerprint: "v2:sha256:codec"}
			gw, _ := idemkit.New(idemkit.Config{Store: w})
			gr, _ := idemkit.New(idemkit.Config{Store: r})
			snap, replayed, err := gw.Do(ctx, req, func(context.Context) (*idemkit.Snapshot, error) {
				return &idemkit.Snapshot{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}, nil
			})
			if err != nil || replayed || !bytes.Equal(snap.Body, body) {
				t.Fatalf("fresh: replayed %v, %d bytes, %v", replayed, len(snap.Body), err)
			}
			out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{dynamo.AttrID: &types.AttributeValueMemberS{Value: req.Scope.ID(false)}}})
			if err != nil {
				t.Fatal(err)
			}
			if enc, _ := out.Item[dynamo.AttrBodyEncoding].(*types.AttributeValueMemberS); enc == nil || enc.Value != string(tc.write) {
				t.Errorf("item encoding %v, want %q", out.Item[dynamo.AttrBodyEncoding], tc.write)
			}
			snap, replayed, err = gr.Do(ctx, req, func(context.Context) (*idemkit.Snapshot, error) {
				t.Fatal("replay executed the handler")
				return nil, nil
			})
			if err != nil || !replayed || !bytes.Equal(snap.Body, body) {
				t.Fatalf("replay: replayed %v, %d bytes, %v; want the %d-byte body", replayed, len(snap.Body), err, len(body))
			}
		})
	}
}

// TestCodecInvalid: a codec the package does not know is refused when the
// store is made, not when its first body is stored.
func TestCodecInvalid(t *testing.T) {
	_, c, table := newStore(t, dynamo.Options{})
	if _, err := dynamo.New(c, table, dynamo.Options{Codec: "gzip"}); !errors.Is(err, idemkit.ErrInvalidConfig) {
		t.Errorf("New with codec gzip: %v, want ErrInvalidConfig", err)
	}
	r := dynamo.Regions{Local: "eu-west-1", Clients: map[string]dynamo.Client{"eu-west-1": c}, Home: func(string) string { return "eu-west-1" }}
	if _, err := dynamo.NewRegional(r, table, dynamo.Options{Codec: "lz4"}); !errors.Is(err, idemkit.ErrInvalidConfig) {
		t.Errorf("NewRegional with codec lz4: %v, want ErrInvalidConfig", err)
	}
}

// TestCodecDefault: what the default (zero Options) does with a body
// follows the cost of a request (docs/PERFORMANCE.md): a body whose item
// fits in one write unit as it is is stored as it is, since compressing
// it cannot save a unit; a body that would take the item past one unit
// is compressed with zstd, here saving one, even when it is under 1 KB.
// The units are the server's, read from the completion's answer, and
// checked where it counts them as DynamoDB does.
func TestCodecDefault(t *testing.T) {
	_, c, table := newStore(t, dynamo.Options{})
	faithful := dynalite.Has(t, dynalite.FaithfulCapacity)
	ctx := context.Background()
	// complete stores body under key with opts and returns the item's
	// body encoding ("" for none) and the completion's write units.
	complete := func(t *testing.T, opts dynamo.Options, key string, body []byte) (string, float64) {
		t.Helper()
		s := storeOn(t, c, table, opts)
		g, obs := observed(t, s)
		req := idemkit.Request{Scope: idemkit.Scope{Tenant: "acme", Operation: "POST /orders", Key: key}, Fingerprint: "v2:sha256:default"}
		var claim observe.Usage
		snap, _, err := g.Do(ctx, req, func(ctx context.Context) (*idemkit.Snapshot, error) {
			claim, _ = usage.From(ctx)
			return &idemkit.Snapshot{Status: 201, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}, nil
		})
		if err != nil || !bytes.Equal(snap.Body, body) {
			t.Fatalf("%d-byte body: %v", len(body), err)
		}
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{dynamo.AttrID: &types.AttributeValueMemberS{Value: req.Scope.ID(false)}}})
		if err != nil {
			t.Fatal(err)
		}
		enc, _ := out.Item[dynamo.AttrBodyEncoding].(*types.AttributeValueMemberS)
		if enc == nil {
			return "", obs.Last().Usage.WriteUnits - claim.WriteUnits
		}
		return enc.Value, obs.Last().Usage.WriteUnits - claim.WriteUnits
	}
	for _, tc := range []struct {
		name string
		body []byte
		// rawUnits is the completion's write units with the body as is,
		// the test's premise; enc and units are what the default stores.
		rawUnits float64
		enc      string
		units    float64
	}{
		{"200 B", testpayload.JSON(200), 1, "", 1},
		{"900 B", testpayload.JSON(900), 2, "zstd", 1},
		{"4 KB", testpayload.JSON(4 << 10), 5, "zstd", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, raw := complete(t, dynamo.Options{CompressAbove: -1}, "raw-"+tc.name, tc.body); faithful && raw != tc.rawUnits {
				t.Fatalf("premise: the completion with the body as is takes %v write units, want %v", raw, tc.rawUnits)
			}
			enc, units := complete(t, dynamo.Options{}, "default-"+tc.name, tc.body)
			if enc != tc.enc {
				t.Errorf("default: body encoding %q, want %q", enc, tc.enc)
			}
			if faithful && units != tc.units {
				t.Errorf("default: %v write units, want %v", units, tc.units)
			}
		})
	}
}
