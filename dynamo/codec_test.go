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
	"github.com/idemkit/idemkit/internal/bench"
)

// TestCodecMixed: a body stored by a store with one codec is replayed
// whole by a store with the other, so a table's writers can change codec
// one at a time; the item says which codec it holds.
func TestCodecMixed(t *testing.T) {
	_, c, table := newStore(t, dynamo.Options{})
	body := bench.JSON(8 << 10)
	for _, tc := range []struct{ write, read dynamo.Codec }{
		{dynamo.CodecS2, dynamo.CodecZstd},
		{dynamo.CodecZstd, dynamo.CodecS2},
		{dynamo.CodecS2, dynamo.CodecS2},
	} {
		t.Run(string(tc.write)+" then "+string(tc.read), func(t *testing.T) {
			w, err := dynamo.New(c, table, dynamo.Options{Codec: tc.write})
			if err != nil {
				t.Fatal(err)
			}
			r, err := dynamo.New(c, table, dynamo.Options{Codec: tc.read})
			if err != nil {
				t.Fatal(err)
			}
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
