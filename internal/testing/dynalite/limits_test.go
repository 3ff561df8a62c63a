package dynalite_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

// TestDynaliteLimits records how dynalite differs from DynamoDB where the
// dynamo store cares (the package doc lists the same facts). It runs on a
// dynalite of its own, whatever Endpoint would use. When an upgrade of
// dynalite changes one of these, the failing subtest says which, and the
// package doc needs the same change.
func TestDynaliteLimits(t *testing.T) {
	t.Parallel()
	s := dynalite.NewServer(t)
	c, err := dynalite.NewClient(t.Context(), s.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	table := dynalite.CreateTable(t, c, dynalite.KeyTable(""))
	key := func(pk string) map[string]types.AttributeValue { return map[string]types.AttributeValue{"pk": str(pk)} }

	t.Run("ReturnValuesOnConditionCheckFailure ALL_OLD is ignored", func(t *testing.T) {
		put(t, c, table, "ccf", "old")
		_, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{
			TableName:                           aws.String(table),
			Item:                                map[string]types.AttributeValue{"pk": str("ccf"), "v": str("new")},
			ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			t.Fatalf("PutItem: err = %v, want ConditionalCheckFailedException", err)
		}
		if ccf.Item != nil {
			t.Fatalf("the failure carries Item %v: dynalite now honours ReturnValuesOnConditionCheckFailure; update the package doc", ccf.Item)
		}
	})

	t.Run("ReturnValues ALL_OLD on PutItem returns the old item", func(t *testing.T) {
		put(t, c, table, "rv", "old")
		out, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{
			TableName:    aws.String(table),
			Item:         map[string]types.AttributeValue{"pk": str("rv"), "v": str("new")},
			ReturnValues: types.ReturnValueAllOld,
		})
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := out.Attributes["v"].(*types.AttributeValueMemberS); !ok || v.Value != "old" {
			t.Fatalf("Attributes = %v, want the old item", out.Attributes)
		}
		out, err = c.PutItem(t.Context(), &dynamodb.PutItemInput{
			TableName:    aws.String(table),
			Item:         map[string]types.AttributeValue{"pk": str("rv-new"), "v": str("new")},
			ReturnValues: types.ReturnValueAllOld,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Attributes) != 0 {
			t.Fatalf("Attributes = %v for a new item, want none", out.Attributes)
		}
	})

	t.Run("ReturnConsumedCapacity TOTAL is reported", func(t *testing.T) {
		total := types.ReturnConsumedCapacityTotal
		check := func(op string, err error, cc func() *types.ConsumedCapacity) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", op, err)
			}
			if got := cc(); got == nil || aws.ToFloat64(got.CapacityUnits) <= 0 || aws.ToString(got.TableName) != table {
				t.Errorf("%s: ConsumedCapacity = %+v, want the table's units", op, got)
			}
		}
		p, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": str("cap"), "v": str("1")}, ReturnConsumedCapacity: total})
		check("PutItem", err, func() *types.ConsumedCapacity { return p.ConsumedCapacity })
		u, err := c.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{TableName: aws.String(table), Key: key("cap"), UpdateExpression: aws.String("SET v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": str("2")}, ReturnConsumedCapacity: total})
		check("UpdateItem", err, func() *types.ConsumedCapacity { return u.ConsumedCapacity })
		g, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("cap"), ReturnConsumedCapacity: total})
		check("GetItem", err, func() *types.ConsumedCapacity { return g.ConsumedCapacity })
		d, err := c.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("cap"), ReturnConsumedCapacity: total})
		check("DeleteItem", err, func() *types.ConsumedCapacity { return d.ConsumedCapacity })
	})

	t.Run("sparse GSI with projection ALL supports Query with pagination", func(t *testing.T) {
		in := dynalite.KeyTable("")
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			types.AttributeDefinition{AttributeName: aws.String("gpk"), AttributeType: types.ScalarAttributeTypeS},
			types.AttributeDefinition{AttributeName: aws.String("gsk"), AttributeType: types.ScalarAttributeTypeN},
		)
		in.GlobalSecondaryIndexes = []types.GlobalSecondaryIndex{{
			IndexName: aws.String("by-g"),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("gpk"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("gsk"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}}
		gt := dynalite.CreateTable(t, c, in)
		// Even items are in the index; odd ones lack its keys (sparse).
		for i := range 10 {
			item := map[string]types.AttributeValue{"pk": str(fmt.Sprint("item", i)), "v": str(fmt.Sprint(i))}
			if i%2 == 0 {
				item["gpk"] = str("g")
				item["gsk"] = &types.AttributeValueMemberN{Value: fmt.Sprint(i)}
			}
			if _, err := c.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: aws.String(gt), Item: item}); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		var start map[string]types.AttributeValue
		pages := 0
		for {
			out, err := c.Query(t.Context(), &dynamodb.QueryInput{
				TableName:                 aws.String(gt),
				IndexName:                 aws.String("by-g"),
				KeyConditionExpression:    aws.String("gpk = :g"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":g": str("g")},
				Limit:                     aws.Int32(2),
				ExclusiveStartKey:         start,
			})
			if err != nil {
				t.Fatalf("Query: %v", err)
			}
			pages++
			for _, it := range out.Items {
				got = append(got, it["v"].(*types.AttributeValueMemberS).Value) // projection ALL: non-key attributes present
			}
			if out.LastEvaluatedKey == nil {
				break
			}
			start = out.LastEvaluatedKey
			if pages > 10 {
				t.Fatal("Query pagination does not end")
			}
		}
		if want := "[0 2 4 6 8]"; fmt.Sprint(got) != want {
			t.Fatalf("items in index order = %v, want %s", got, want)
		}
		if pages < 3 {
			t.Fatalf("%d pages for 5 items with Limit 2, want at least 3", pages)
		}
	})

	t.Run("DescribeTimeToLive exists but UpdateTimeToLive does not", func(t *testing.T) {
		_, err := c.UpdateTimeToLive(t.Context(), &dynamodb.UpdateTimeToLiveInput{
			TableName:               aws.String(table),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expires"), Enabled: aws.Bool(true)},
		})
		wantUnknownOperation(t, "UpdateTimeToLive", err)
		if _, err := c.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)}); err != nil {
			t.Fatalf("DescribeTimeToLive: %v", err)
		}
	})

	t.Run("TransactWriteItems and TransactGetItems do not exist", func(t *testing.T) {
		_, err := c.TransactWriteItems(t.Context(), &dynamodb.TransactWriteItemsInput{
			TransactItems: []types.TransactWriteItem{{Put: &types.Put{
				TableName: aws.String(table),
				Item:      map[string]types.AttributeValue{"pk": str("tx"), "v": str("1")},
			}}},
		})
		wantUnknownOperation(t, "TransactWriteItems", err)
		_, err = c.TransactGetItems(t.Context(), &dynamodb.TransactGetItemsInput{
			TransactItems: []types.TransactGetItem{{Get: &types.Get{TableName: aws.String(table), Key: key("tx")}}},
		})
		wantUnknownOperation(t, "TransactGetItems", err)
	})
}

func wantUnknownOperation(t *testing.T, op string, err error) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "UnknownOperationException" {
		t.Fatalf("%s: err = %v, want UnknownOperationException (if dynalite now supports it, update the package doc)", op, err)
	}
}
