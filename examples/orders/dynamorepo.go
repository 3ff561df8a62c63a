package orders

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The key of the orders table. It is a table of its own, apart from the
// idempotency records: orders are kept for good (no TTL), records expire.
// An order is the item (tenant, "order#<id>"); each captured payment of it
// is (tenant, "order#<id>#payment#<payment id>"), so one Query reads an
// order with its payments, and the tenant in the key makes another
// tenant's order unreachable.
const (
	OrdersAttrTenant = "tenant" // S  partition key: the caller's identity (JWT sub)
	OrdersAttrSK     = "sk"     // S  sort key: "order#<id>" or "order#<id>#payment#<id>"
)

// OrdersTableDefinition returns the definition of an orders table named
// name: partition key OrdersAttrTenant, sort key OrdersAttrSK, on-demand
// billing. template.yaml declares the same; a test checks it.
func OrdersTableDefinition(name string) *dynamodb.CreateTableInput {
	s := types.ScalarAttributeTypeS
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(OrdersAttrTenant), AttributeType: s},
			{AttributeName: aws.String(OrdersAttrSK), AttributeType: s},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(OrdersAttrTenant), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(OrdersAttrSK), KeyType: types.KeyTypeRange},
		},
	}
}

// DynamoClient is the part of *dynamodb.Client DynamoRepo uses: PutItem
// and Query, the only grants the function's role has on the orders table.
type DynamoClient interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// DynamoRepo is a Repo on a DynamoDB table laid out as
// OrdersTableDefinition says. It is safe for concurrent use.
type DynamoRepo struct {
	Client DynamoClient
	Table  string
}

var _ Repo = (*DynamoRepo)(nil)

func orderSK(id string) string { return "order#" + id }

func paymentSK(orderID, id string) string { return orderSK(orderID) + "#payment#" + id }

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func ts(t time.Time) types.AttributeValue { return s(t.UTC().Format(time.RFC3339Nano)) }

// CreateOrder implements Repo. The write is conditional: an ID is never
// reused.
func (r *DynamoRepo) CreateOrder(ctx context.Context, tenant string, o Order) error {
	_, err := r.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(r.Table),
		Item: map[string]types.AttributeValue{
			OrdersAttrTenant: s(tenant),
			OrdersAttrSK:     s(orderSK(o.ID)),
			"id":             s(o.ID),
			"sku":            s(o.SKU),
			"quantity":       n(o.Quantity),
			"amount_cents":   n(o.AmountCents),
			"currency":       s(o.Currency),
			"created_at":     ts(o.CreatedAt),
		},
		ConditionExpression:      aws.String("attribute_not_exists(#sk)"),
		ExpressionAttributeNames: map[string]string{"#sk": OrdersAttrSK},
	})
	if err != nil {
		return fmt.Errorf("orders: put order %s: %w", o.ID, err)
	}
	return nil
}

// AddPayment implements Repo.
func (r *DynamoRepo) AddPayment(ctx context.Context, tenant string, p Payment) error {
	_, err := r.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(r.Table),
		Item: map[string]types.AttributeValue{
			OrdersAttrTenant: s(tenant),
			OrdersAttrSK:     s(paymentSK(p.OrderID, p.ID)),
			"id":             s(p.ID),
			"order_id":       s(p.OrderID),
			"amount_cents":   n(p.AmountCents),
			"currency":       s(p.Currency),
			"card_last4":     s(p.CardLast4),
			"status":         s(p.Status),
			"created_at":     ts(p.CreatedAt),
		},
		ConditionExpression:      aws.String("attribute_not_exists(#sk)"),
		ExpressionAttributeNames: map[string]string{"#sk": OrdersAttrSK},
	})
	if err != nil {
		return fmt.Errorf("orders: put payment %s: %w", p.ID, err)
	}
	return nil
}

// GetOrder implements Repo with one consistent Query (paged when large).
func (r *DynamoRepo) GetOrder(ctx context.Context, tenant, id string) (Order, error) {
	in := &dynamodb.QueryInput{
		TableName:                aws.String(r.Table),
		KeyConditionExpression:   aws.String("#t = :t AND begins_with(#sk, :p)"),
		ExpressionAttributeNames: map[string]string{"#t": OrdersAttrTenant, "#sk": OrdersAttrSK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":t": s(tenant), ":p": s(orderSK(id)),
		},
		ConsistentRead: aws.Bool(true),
	}
	var (
		o     Order
		found bool
		pays  = []Payment{}
	)
	for {
		out, err := r.Client.Query(ctx, in)
		if err != nil {
			return Order{}, fmt.Errorf("orders: query order %s: %w", id, err)
		}
		for _, it := range out.Items {
			sk := str(it[OrdersAttrSK])
			switch {
			case sk == orderSK(id):
				found = true
				o = Order{ID: str(it["id"]), SKU: str(it["sku"]), Quantity: num(it["quantity"]),
					AmountCents: num(it["amount_cents"]), Currency: str(it["currency"]), CreatedAt: tm(it["created_at"])}
			case strings.HasPrefix(sk, orderSK(id)+"#payment#"):
				pays = append(pays, Payment{ID: str(it["id"]), OrderID: str(it["order_id"]),
					AmountCents: num(it["amount_cents"]), Currency: str(it["currency"]),
					CardLast4: str(it["card_last4"]), Status: str(it["status"]), CreatedAt: tm(it["created_at"])})
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	if !found {
		return Order{}, ErrNotFound
	}
	o.Payments = pays
	for _, p := range pays {
		o.PaidCents += p.AmountCents
	}
	return o, nil
}

func str(v types.AttributeValue) string {
	if x, ok := v.(*types.AttributeValueMemberS); ok {
		return x.Value
	}
	return ""
}

func num(v types.AttributeValue) int64 {
	if x, ok := v.(*types.AttributeValueMemberN); ok {
		i, _ := strconv.ParseInt(x.Value, 10, 64)
		return i
	}
	return 0
}

func tm(v types.AttributeValue) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, str(v))
	return t
}

// TableCreator is the part of *dynamodb.Client CreateOrdersTable uses.
type TableCreator interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// CreateOrdersTable creates the orders table and waits until it is ACTIVE.
// A table that already exists is left as it is.
func CreateOrdersTable(ctx context.Context, c TableCreator, name string) error {
	_, err := c.CreateTable(ctx, OrdersTableDefinition(name))
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("orders: create table %s: %w", name, err)
	}
	w := dynamodb.NewTableExistsWaiter(c, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 20 * time.Millisecond
		o.MaxDelay = time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		return fmt.Errorf("orders: wait for table %s: %w", name, err)
	}
	return nil
}
