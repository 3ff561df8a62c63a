package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// TableClient is the part of *dynamodb.Client CreateTable uses.
type TableClient interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var _ TableClient = (*dynamodb.Client)(nil)

// TableDefinition returns the definition of a store table named name,
// keyed as opts say: partition key Options.KeyAttr (DefaultKeyAttr when
// empty) and, with Options.SortKeyAttr, a sort key (both S); on-demand
// billing; and the two sparse indexes, projecting ALL, the same whatever
// the keys. TTL on TTLAttr is set apart (CreateTable does it; a template
// sets TimeToLiveSpecification). Options that New refuses are not checked
// here.
func TableDefinition(name string, opts Options) *dynamodb.CreateTableInput {
	l := layoutOf(opts)
	s, n := types.ScalarAttributeTypeS, types.ScalarAttributeTypeN
	index := func(name, hash string) types.GlobalSecondaryIndex {
		return types.GlobalSecondaryIndex{
			IndexName: aws.String(name),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(hash), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrLeaseUntil), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}
	}
	def := &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(l.keyAttr), AttributeType: s},
			{AttributeName: aws.String(attrIndeterminate), AttributeType: s},
			{AttributeName: aws.String(attrIndeterminateTenant), AttributeType: s},
			{AttributeName: aws.String(attrLeaseUntil), AttributeType: n},
		},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String(l.keyAttr), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			index(IndexIndeterminate, attrIndeterminate),
			index(IndexIndeterminateTenant, attrIndeterminateTenant),
		},
	}
	if l.sortAttr != "" {
		def.AttributeDefinitions = append(def.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(l.sortAttr), AttributeType: s})
		def.KeySchema = append(def.KeySchema, types.KeySchemaElement{AttributeName: aws.String(l.sortAttr), KeyType: types.KeyTypeRange})
	}
	return def
}

// CreateTable creates the table TableDefinition(name, opts) describes,
// waits until it is ACTIVE (bounded by ctx, or 2 minutes without a
// deadline), and enables TTL on Options.TTLAttr. A server without the TTL
// API (dynalite answers UnknownOperationException) is tolerated: TTL only
// saves storage, since the engine treats a record past its ExpiresAt as
// absent, whatever the store still holds.
func CreateTable(ctx context.Context, client TableClient, name string, opts Options) error {
	if _, err := client.CreateTable(ctx, TableDefinition(name, opts)); err != nil {
		return fmt.Errorf("dynamo: create table %s: %w", name, err)
	}
	wait := 2 * time.Minute
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 20 * time.Millisecond
		o.MaxDelay = 2 * time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, wait); err != nil {
		return fmt.Errorf("dynamo: wait for table %s: %w", name, err)
	}
	_, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(layoutOf(opts).ttl),
			Enabled:       aws.Bool(true),
		},
	})
	var ae smithy.APIError
	if err != nil && !(errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException") {
		return fmt.Errorf("dynamo: enable TTL on %s: %w", name, err)
	}
	return nil
}
