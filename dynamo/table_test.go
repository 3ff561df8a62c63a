package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

func TestCreateTable(t *testing.T) {
	c := client(t)
	name := dynalite.TableName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := dynamo.CreateTable(ctx, c, name, dynamo.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}) })
	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	td := out.Table
	if len(td.KeySchema) != 1 || aws.ToString(td.KeySchema[0].AttributeName) != dynamo.AttrID {
		t.Fatalf("key schema %+v", td.KeySchema)
	}
	idx := map[string]string{}
	for _, g := range td.GlobalSecondaryIndexes {
		if g.Projection == nil || g.Projection.ProjectionType != types.ProjectionTypeAll || len(g.KeySchema) != 2 || aws.ToString(g.KeySchema[1].AttributeName) != dynamo.AttrLeaseUntil {
			t.Fatalf("index %s: %+v", aws.ToString(g.IndexName), g)
		}
		idx[aws.ToString(g.IndexName)] = aws.ToString(g.KeySchema[0].AttributeName)
	}
	if idx[dynamo.IndexIndeterminate] != dynamo.AttrIndeterminate || idx[dynamo.IndexIndeterminateTenant] != dynamo.AttrIndeterminateTenant || len(idx) != 2 {
		t.Fatalf("indexes %v", idx)
	}
	if dynalite.Has(t, dynalite.UpdateTimeToLive) {
		ttl, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		d := ttl.TimeToLiveDescription
		if d == nil || aws.ToString(d.AttributeName) != dynamo.AttrExpiresAt ||
			(d.TimeToLiveStatus != types.TimeToLiveStatusEnabled && d.TimeToLiveStatus != types.TimeToLiveStatusEnabling) {
			t.Fatalf("TTL %+v, want enabled on %s", d, dynamo.AttrExpiresAt)
		}
	}
	if err := dynamo.CreateTable(ctx, c, name, dynamo.Options{}); err == nil {
		t.Fatal("creating an existing table succeeded")
	}
}
