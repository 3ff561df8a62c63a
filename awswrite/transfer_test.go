package awswrite_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/awswrite"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/memstore"
)

var (
	errInsufficient = errors.New("transfer: insufficient balance")
	errKeyReused    = errors.New("transfer: this key made another payment")
)

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// transfer debits amount from account and records the payment, keyed on
// the request's ExecutionID, in one transaction: both writes or neither.
func transfer(ctx context.Context, db *dynamodb.Client, table, account string, amount int64) (string, error) {
	x, ok := idemkit.ExecutionID(ctx)
	if !ok {
		return "", errors.New("transfer: not run by the guard")
	}
	pay := "pay#" + x
	_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		// 32 hex digits: a retry within 10 minutes is the same transaction.
		ClientRequestToken: aws.String(x),
		TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{
				TableName:                           aws.String(table),
				Item:                                map[string]types.AttributeValue{"pk": str(pay), "account": str(account), "amount": num(amount)},
				ConditionExpression:                 aws.String("attribute_not_exists(pk)"),
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			}},
			{Update: &types.Update{
				TableName:                 aws.String(table),
				Key:                       map[string]types.AttributeValue{"pk": str("acct#" + account)},
				UpdateExpression:          aws.String("SET balance = balance - :a"),
				ConditionExpression:       aws.String("balance >= :a"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":a": num(amount)},
			}},
		},
	})
	var tc *types.TransactionCanceledException
	var mismatch *types.IdempotentParameterMismatchException
	switch {
	case err == nil:
		return pay, nil
	case errors.As(err, &mismatch):
		return "", errKeyReused // the same token, another transfer: 422
	case errors.As(err, &tc) && failed(tc, 0):
		// The payment exists: an earlier run of this request made it and
		// lost its answer, or another request under this key did.
		if same, err := samePayment(ctx, db, table, pay, tc.CancellationReasons[0].Item, account, amount); err != nil || !same {
			return "", errors.Join(errKeyReused, err)
		}
		return pay, nil
	case errors.As(err, &tc) && failed(tc, 1):
		return "", errInsufficient // a business outcome, stored: 402
	}
	// Keyed on ExecutionID: whatever happened, a retry finds the payment if
	// it was made. awswrite says whether it was, for the log.
	return "", fmt.Errorf("transfer (%v): %w", awswrite.Classify(err), err)
}

// failed reports whether item i of a cancelled transaction failed its
// condition.
func failed(tc *types.TransactionCanceledException, i int) bool {
	return i < len(tc.CancellationReasons) && aws.ToString(tc.CancellationReasons[i].Code) == "ConditionalCheckFailed"
}

// samePayment reports whether the payment stored under pay (item, when the
// server returned it with the cancellation, else read) is from account
// for amount.
func samePayment(ctx context.Context, db *dynamodb.Client, table, pay string, item map[string]types.AttributeValue, account string, amount int64) (bool, error) {
	if item == nil {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table),
			Key: map[string]types.AttributeValue{"pk": str(pay)}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return false, err
		}
		item = out.Item
	}
	a, _ := item["account"].(*types.AttributeValueMemberS)
	n, _ := item["amount"].(*types.AttributeValueMemberN)
	return a != nil && n != nil && a.Value == account && n.Value == strconv.FormatInt(amount, 10), nil
}

// TestTransfer: the money-moving pattern of docs/HANDLER-WRITES.md, on a
// server with TransactWriteItems. Each run has a guard of its own, as a
// retry has after its record is gone: the run finds its own payment and
// never debits twice.
func TestTransfer(t *testing.T) {
	dynalite.Require(t, dynalite.Transactions)
	c := dynalite.Client(t)
	table := dynalite.CreateTable(t, c, dynalite.KeyTable(""))
	ctx := t.Context()
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
		Item: map[string]types.AttributeValue{"pk": str("acct#alice"), "balance": num(100)}}); err != nil {
		t.Fatal(err)
	}
	run := func(key string, amount int64) (string, error) {
		g, err := idemkit.New(idemkit.Config{Store: memstore.New()})
		if err != nil {
			t.Fatal(err)
		}
		var pay string
		req := idemkit.Request{Scope: idemkit.Scope{Tenant: "alice", Operation: "POST /transfers", Key: key}, Fingerprint: "v2:sha256:" + strconv.FormatInt(amount, 10)}
		_, _, err = g.Do(ctx, req, func(ctx context.Context) (*idemkit.Snapshot, error) {
			var err error
			pay, err = transfer(ctx, c, table, "alice", amount)
			if err != nil {
				return nil, err
			}
			return &idemkit.Snapshot{Status: http.StatusCreated}, nil
		})
		return pay, err
	}
	balance := func() string {
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table),
			Key: map[string]types.AttributeValue{"pk": str("acct#alice")}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item["balance"].(*types.AttributeValueMemberN).Value
	}

	first, err := run("k1", 30)
	if err != nil || balance() != "70" {
		t.Fatalf("first transfer: %q, %v; balance %s, want 70", first, err, balance())
	}
	again, err := run("k1", 30)
	if err != nil || again != first || balance() != "70" {
		t.Errorf("retry of k1: %q, %v; balance %s; want %q and 70", again, err, balance(), first)
	}
	if _, err := run("k1", 50); !errors.Is(err, errKeyReused) || balance() != "70" {
		t.Errorf("k1 for another amount: %v, balance %s; want errKeyReused and 70", err, balance())
	}
	if _, err := run("k2", 71); !errors.Is(err, errInsufficient) || balance() != "70" {
		t.Errorf("k2 for 71: %v, balance %s; want errInsufficient and 70", err, balance())
	}
}

// TestHandlerWritesShowsTransfer: docs/HANDLER-WRITES.md shows transfer as
// this file has it, so the documented pattern is the tested one.
func TestHandlerWritesShowsTransfer(t *testing.T) {
	src, err := os.ReadFile("transfer_test.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/HANDLER-WRITES.md")
	if err != nil {
		t.Fatal(err)
	}
	_, fn, ok := strings.Cut(string(src), "\n// transfer debits")
	if !ok {
		t.Fatal("transfer_test.go has no transfer function")
	}
	fn, _, _ = strings.Cut(fn, "\n}\n")
	fn = "// transfer debits" + fn + "\n}\n"
	if !strings.Contains(string(doc), fn) {
		t.Errorf("docs/HANDLER-WRITES.md does not show transfer as transfer_test.go has it:\n%s", fn)
	}
}
