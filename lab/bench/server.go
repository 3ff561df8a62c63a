package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ReturnsItemOnConditionFailure reports whether the server behind client
// returns the item with a failed conditional write when asked to
// (ReturnValuesOnConditionCheckFailure ALL_OLD), as DynamoDB does: then a
// replay or a conflict is one call instead of two.
func ReturnsItemOnConditionFailure(ctx context.Context, client *dynamodb.Client, table string) (bool, error) {
	pk := &types.AttributeValueMemberS{Value: fmt.Sprintf("probe-%d", time.Now().UnixNano())}
	item := map[string]types.AttributeValue{"pk": pk, "st": &types.AttributeValueMemberS{Value: "completed"}}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		return false, err
	}
	_, err := client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(table), Item: item,
		ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var cf *types.ConditionalCheckFailedException
	if !errors.As(err, &cf) {
		return false, fmt.Errorf("probe: conditional PutItem of an existing key: %v, want a condition failure", err)
	}
	_, err = client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": pk}})
	return len(cf.Item) > 0, err
}

// MotoVersion returns moto's version, or "" when it cannot be read.
func MotoVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "python3", "-c", "import moto; print(moto.__version__)").Output()
	if err != nil {
		return ""
	}
	return string(trimSpace(out))
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
