package orders

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit/awswrite"
	"github.com/idemkit/idemkit/dynamo"
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
	// CallTimeout bounds one send of a call, the SDK's retries included, so
	// that a server that does not answer leaves time to send again within
	// the request's deadline. Zero: DefaultCallTimeout.
	CallTimeout time.Duration
	// DeadlineGap ends each call this long before the context's deadline
	// (a call keeps at least half the time left), so that a write never
	// lands so late that idemkit cannot complete the key: the order would
	// exist while its key went indeterminate. Zero: DefaultDeadlineGap.
	DeadlineGap time.Duration
}

// DefaultCallTimeout is DynamoRepo's CallTimeout when none is set.
const DefaultCallTimeout = 2 * time.Second

// DefaultDeadlineGap is DynamoRepo's DeadlineGap when none is set: twice
// the idemkit store's own gap (dynamo.DefaultDeadlineGap), so that after
// the repository's last call the store's completion still has a whole
// call before its gap.
const DefaultDeadlineGap = 2 * dynamo.DefaultDeadlineGap

// call returns the context of one send: it ends after CallTimeout, and
// DeadlineGap before ctx's deadline, keeping at least half the time left.
func (r *DynamoRepo) call(ctx context.Context) (context.Context, context.CancelFunc) {
	d := r.CallTimeout
	if d <= 0 {
		d = DefaultCallTimeout
	}
	gap := r.DeadlineGap
	if gap <= 0 {
		gap = DefaultDeadlineGap
	}
	now := time.Now()
	end := now.Add(d)
	if dl, ok := ctx.Deadline(); ok {
		e := dl.Add(-gap)
		if half := now.Add(dl.Sub(now) / 2); e.Before(half) {
			e = half
		}
		if e.Before(end) {
			end = e
		}
	}
	return context.WithDeadline(ctx, end)
}

var _ Repo = (*DynamoRepo)(nil)

func orderSK(id string) string { return "order#" + id }

func paymentSK(orderID, id string) string { return orderSK(orderID) + "#payment#" + id }

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func ts(t time.Time) types.AttributeValue { return s(t.UTC().Format(time.RFC3339Nano)) }

// WriteAttempts is how many times DynamoRepo sends a write whose outcome
// is unknown, the first included, before it gives up with
// ErrWriteUnknown. Each send is retried by the SDK as well.
const WriteAttempts = 3

// writeBackoff is the pause before a write's second send; it doubles
// before each later one.
const writeBackoff = 25 * time.Millisecond

// ClientOptions configure a DynamoDB client for DynamoRepo: the SDK's
// standard retries, with pauses of at most MaxBackoff and without its
// client-side retry quota. The quota runs dry under sustained errors and
// then leaves every call one attempt, which turns passing faults into
// unknown outcomes; DynamoRepo bounds its retries itself (WriteAttempts,
// CallTimeout). The SDK's own pauses, up to 20 s, would spend a send's
// CallTimeout on one throttle. Pass it to dynamodb.NewFromConfig.
func ClientOptions(o *dynamodb.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.RateLimiter = ratelimit.None
		so.MaxBackoff = MaxBackoff
	})
}

// MaxBackoff caps the SDK's pause between the attempts of one send, under
// ClientOptions.
const MaxBackoff = 200 * time.Millisecond

// newItem is a PutItem of tenant's item sk with attrs, stored only where
// no item has that key.
func (r *DynamoRepo) newItem(tenant, sk string, attrs map[string]types.AttributeValue) *dynamodb.PutItemInput {
	attrs[OrdersAttrTenant], attrs[OrdersAttrSK] = s(tenant), s(sk)
	return &dynamodb.PutItemInput{
		TableName:                aws.String(r.Table),
		Item:                     attrs,
		ConditionExpression:      aws.String("attribute_not_exists(#sk)"),
		ExpressionAttributeNames: map[string]string{"#sk": OrdersAttrSK},
	}
}

// CreateOrder implements Repo. The write is conditional on the order's ID
// being free; when it is not, the stored order is read and returned if it
// is the same order.
func (r *DynamoRepo) CreateOrder(ctx context.Context, tenant string, o Order) (Order, error) {
	in := r.newItem(tenant, orderSK(o.ID), map[string]types.AttributeValue{
		"id":           s(o.ID),
		"sku":          s(o.SKU),
		"quantity":     n(o.Quantity),
		"amount_cents": n(o.AmountCents),
		"currency":     s(o.Currency),
		"created_at":   ts(o.CreatedAt),
	})
	o.Payments, o.PaidCents = []Payment{}, 0
	return create(ctx, r, "order "+o.ID, in, o, func(ctx context.Context) (Order, error) {
		return r.GetOrder(ctx, tenant, o.ID)
	}, sameOrder)
}

// AddPayment implements Repo, conditional on the payment's ID as
// CreateOrder is.
func (r *DynamoRepo) AddPayment(ctx context.Context, tenant string, p Payment) (Payment, error) {
	sk := paymentSK(p.OrderID, p.ID)
	in := r.newItem(tenant, sk, map[string]types.AttributeValue{
		"id":           s(p.ID),
		"order_id":     s(p.OrderID),
		"amount_cents": n(p.AmountCents),
		"currency":     s(p.Currency),
		"card_last4":   s(p.CardLast4),
		"status":       s(p.Status),
		"created_at":   ts(p.CreatedAt),
	})
	return create(ctx, r, "payment "+p.ID, in, p, func(ctx context.Context) (Payment, error) {
		cctx, cancel := r.call(ctx)
		defer cancel()
		out, err := r.Client.Query(cctx, &dynamodb.QueryInput{
			TableName:                aws.String(r.Table),
			KeyConditionExpression:   aws.String("#t = :t AND #sk = :sk"),
			ExpressionAttributeNames: map[string]string{"#t": OrdersAttrTenant, "#sk": OrdersAttrSK},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":t": s(tenant), ":sk": s(sk),
			},
			ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return Payment{}, fmt.Errorf("orders: query payment %s: %w", p.ID, err)
		}
		if len(out.Items) == 0 {
			return Payment{}, ErrNotFound
		}
		return paymentOf(out.Items[0]), nil
	}, samePayment)
}

// create stores v's item (in) where its key is free, and returns v. Where
// the key is taken, it returns the stored value find reads when same says
// it is v, and ErrIDConflict when it is not. It fails as put does.
func create[T any](ctx context.Context, r *DynamoRepo, what string, in *dynamodb.PutItemInput, v T, find func(context.Context) (T, error), same func(a, b T) bool) (T, error) {
	var stored T
	found, err := r.put(ctx, what, in, func(ctx context.Context) error {
		var err error
		stored, err = find(ctx)
		return err
	})
	var zero T
	switch {
	case err != nil:
		return zero, err
	case !found:
		return v, nil
	case !same(stored, v):
		return zero, fmt.Errorf("%w: %s", ErrIDConflict, what)
	}
	return stored, nil
}

// put sends a conditional PutItem until its outcome is known, at most
// WriteAttempts times: stored (found false), or refused because the item
// exists, which find then reads (found true; find bounds its own calls).
// A send that may have been applied (awswrite.Unknown) or was throttled is
// sent again. It fails with ErrWriteUnknown when a send may have been
// applied and none gave a known outcome, and with the error itself when
// nothing was stored: the server refused the write (it is invalid, the
// table or the operation does not exist), or throttled every send.
func (r *DynamoRepo) put(ctx context.Context, what string, in *dynamodb.PutItemInput, find func(context.Context) error) (found bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("orders: put %s: not sent: %w", what, err)
	}
	var (
		last    error
		unknown bool // a send may have been applied
	)
	fail := func() error {
		if unknown {
			return fmt.Errorf("orders: put %s: %w: %w", what, ErrWriteUnknown, last)
		}
		return fmt.Errorf("orders: put %s: not stored: %w", what, last)
	}
	for attempt := range WriteAttempts {
		if attempt > 0 {
			t := time.NewTimer(writeBackoff << (attempt - 1))
			select {
			case <-ctx.Done():
				t.Stop()
				return false, fail()
			case <-t.C:
			}
		}
		cctx, cancel := r.call(ctx)
		_, err := r.Client.PutItem(cctx, in)
		cancel()
		var exists *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			return false, nil
		case errors.As(err, &exists):
			// find bounds its own calls: bounding them here as well would
			// halve the time left twice.
			ferr := find(ctx)
			if ferr == nil {
				return true, nil
			}
			// Refused, yet not found: the read failed (or the server is
			// inconsistent); the outcome is still unknown.
			last, unknown = ferr, true
		case awswrite.Classify(err) == awswrite.Unknown:
			last, unknown = err, true
		case throttled(err):
			last = err
		default:
			// Refused, as every send would be: nothing stored by this
			// one (nor by an earlier one, unless that was unknown).
			last = err
			return false, fail()
		}
	}
	return false, fail()
}

// throttled reports whether err is a throttle, which a later send may pass.
func throttled(err error) bool {
	return retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary
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
		cctx, cancel := r.call(ctx)
		out, err := r.Client.Query(cctx, in)
		cancel()
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
				pays = append(pays, paymentOf(it))
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

func paymentOf(it map[string]types.AttributeValue) Payment {
	return Payment{ID: str(it["id"]), OrderID: str(it["order_id"]),
		AmountCents: num(it["amount_cents"]), Currency: str(it["currency"]),
		CardLast4: str(it["card_last4"]), Status: str(it["status"]), CreatedAt: tm(it["created_at"])}
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
