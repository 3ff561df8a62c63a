package orders_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
	"github.com/idemkit/idemkit/internal/testing/testclock"
)

// repos returns each Repo implementation, fresh for the test t given; the
// DynamoDB one sends its calls through rt (nil: straight to the server) and
// skips t when no server can be had.
func repos() map[string]func(t *testing.T, rt http.RoundTripper) orders.Repo {
	return map[string]func(t *testing.T, rt http.RoundTripper) orders.Repo{
		"memory": func(*testing.T, http.RoundTripper) orders.Repo { return &orders.MemRepo{} },
		"dynamodb": func(t *testing.T, rt http.RoundTripper) orders.Repo {
			raw := dynalite.Client(t)
			table := dynalite.CreateTable(t, raw, orders.OrdersTableDefinition("orders"))
			return &orders.DynamoRepo{Client: faultyClient(t, rt), Table: table}
		},
	}
}

// faultyClient is a DynamoDB client of the test server configured as the
// example configures its orders client, sending through rt.
func faultyClient(t *testing.T, rt http.RoundTripper) *dynamodb.Client {
	t.Helper()
	if rt == nil {
		rt = http.DefaultTransport
	}
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion(dynalite.Region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	if err != nil {
		t.Fatal(err)
	}
	return dynamodb.NewFromConfig(cfg, orders.ClientOptions, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(dynalite.Endpoint(t))
		o.HTTPClient = &http.Client{Transport: rt}
	})
}

var (
	testOrder   = orders.Order{ID: "0194a1b2-0000-7000-8000-000000000001", SKU: "sku-1", Quantity: 2, AmountCents: 1999, Currency: "EUR", CreatedAt: fixedNow}
	testPayment = orders.Payment{ID: "0194a1b2-0000-7000-8000-0000000000p1", OrderID: testOrder.ID, AmountCents: 500, Currency: "EUR", CardLast4: "4242", Status: "captured", CreatedAt: fixedNow}
)

// A write whose ID is stored returns the stored item when it is the same
// (a retried execution: its CreatedAt is later, the stored one wins), and
// ErrIDConflict when it is another; nothing is stored twice.
func TestRepoWritesAreIdempotent(t *testing.T) {
	for name, newRepo := range repos() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			r := newRepo(t, nil)
			o, err := r.CreateOrder(ctx, "alice", testOrder)
			if err != nil || !o.CreatedAt.Equal(fixedNow) {
				t.Fatalf("create: %+v %v", o, err)
			}
			retry := testOrder
			retry.CreatedAt = fixedNow.Add(time.Minute)
			o, err = r.CreateOrder(ctx, "alice", retry)
			if err != nil || !o.CreatedAt.Equal(fixedNow) || o.ID != testOrder.ID {
				t.Fatalf("retried create: %+v %v, want the stored order", o, err)
			}
			other := testOrder
			other.AmountCents++
			if _, err := r.CreateOrder(ctx, "alice", other); !errors.Is(err, orders.ErrIDConflict) {
				t.Fatalf("another order under a stored id: %v, want ErrIDConflict", err)
			}
			// Another tenant's order with the same id is another order.
			if _, err := r.CreateOrder(ctx, "bob", other); err != nil {
				t.Fatalf("bob's order: %v", err)
			}

			p, err := r.AddPayment(ctx, "alice", testPayment)
			if err != nil || p != testPayment {
				t.Fatalf("pay: %+v %v", p, err)
			}
			retryPay := testPayment
			retryPay.CreatedAt = fixedNow.Add(time.Minute)
			if p, err = r.AddPayment(ctx, "alice", retryPay); err != nil || !p.CreatedAt.Equal(fixedNow) {
				t.Fatalf("retried payment: %+v %v, want the stored payment", p, err)
			}
			otherPay := testPayment
			otherPay.AmountCents++
			if _, err := r.AddPayment(ctx, "alice", otherPay); !errors.Is(err, orders.ErrIDConflict) {
				t.Fatalf("another payment under a stored id: %v, want ErrIDConflict", err)
			}
			sr := r.(orders.ShipmentRepo)
			sh := orders.Shipment{ID: "0194a1b2-0000-7000-8000-0000000000s1", OrderID: testOrder.ID, SKU: testOrder.SKU, Quantity: testOrder.Quantity, CreatedAt: fixedNow}
			if got, err := sr.CreateShipment(ctx, "alice", sh); err != nil || got != sh {
				t.Fatalf("ship: %+v %v", got, err)
			}
			retryShip := sh
			retryShip.CreatedAt = fixedNow.Add(time.Minute)
			if got, err := sr.CreateShipment(ctx, "alice", retryShip); err != nil || !got.CreatedAt.Equal(fixedNow) {
				t.Fatalf("retried shipment: %+v %v, want the stored shipment", got, err)
			}
			otherShip := sh
			otherShip.Quantity++
			if _, err := sr.CreateShipment(ctx, "alice", otherShip); !errors.Is(err, orders.ErrIDConflict) {
				t.Fatalf("another shipment under a stored id: %v, want ErrIDConflict", err)
			}
			if all, err := sr.Shipments(ctx, "alice", testOrder.ID); err != nil || len(all) != 1 {
				t.Fatalf("shipments: %+v %v, want one", all, err)
			}
			got, err := r.GetOrder(ctx, "alice", testOrder.ID)
			if err != nil || len(got.Payments) != 1 || got.PaidCents != testPayment.AmountCents || got.AmountCents != testOrder.AmountCents {
				t.Fatalf("stored: %+v %v, want the order once with one payment", got, err)
			}
		})
	}
}

// The DynamoDB repo under faults: a write whose answer is lost (applied)
// or refused (not applied) is sent again and ends stored once; one whose
// outcome stays unknown on every send fails with ErrWriteUnknown.
func TestDynamoRepoFaults(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rule    faults.Rule
		unknown bool
	}{
		{"lost ack once", faults.Rule{Op: "PutItem", Kind: faults.LostAck, Times: 1}, false},
		{"lost ack on every SDK attempt of the first send", faults.Rule{Op: "PutItem", Kind: faults.LostAck, Times: 3}, false},
		{"5xx on every SDK attempt of two sends", faults.Rule{Op: "PutItem", Kind: faults.ServerError, Times: 6}, false},
		{"throttled on four attempts", faults.Rule{Op: "PutItem", Kind: faults.Throttle, Times: 4}, false},
		{"no answer once (applied)", faults.Rule{Op: "PutItem", Kind: faults.TimeoutApplied, Times: 1}, false},
		{"no answer once (not applied)", faults.Rule{Op: "PutItem", Kind: faults.Timeout, Times: 1}, false},
		{"lost ack forever", faults.Rule{Op: "PutItem", Kind: faults.LostAck, Times: -1}, true},
		{"5xx forever", faults.Rule{Op: "PutItem", Kind: faults.ServerError, Times: -1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A send that gets no answer ends at CallTimeout, well before
			// the request's deadline, leaving time for another.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			raw := dynalite.Client(t)
			table := dynalite.CreateTable(t, raw, orders.OrdersTableDefinition("orders"))
			ft := faults.New(http.DefaultTransport, tc.rule)
			r := &orders.DynamoRepo{Client: faultyClient(t, ft), Table: table, CallTimeout: 500 * time.Millisecond}
			clean := &orders.DynamoRepo{Client: raw, Table: table}
			o, err := r.CreateOrder(ctx, "alice", testOrder)
			if tc.unknown {
				if !errors.Is(err, orders.ErrWriteUnknown) {
					t.Fatalf("create: %v, want ErrWriteUnknown", err)
				}
				if n := ft.Calls("PutItem"); n != 3*orders.WriteAttempts {
					t.Errorf("%d PutItem calls, want %d sends of 3 SDK attempts", n, orders.WriteAttempts)
				}
				return
			}
			if err != nil || o.ID != testOrder.ID {
				t.Fatalf("create: %+v %v", o, err)
			}
			ft.Clear()
			got, err := clean.GetOrder(ctx, "alice", testOrder.ID)
			if err != nil || got.AmountCents != testOrder.AmountCents {
				t.Fatalf("stored: %+v %v", got, err)
			}
			// The payment goes through the same faults.
			ft.Add(tc.rule)
			if _, err := r.AddPayment(ctx, "alice", testPayment); err != nil {
				t.Fatalf("pay: %v", err)
			}
			got, err = clean.GetOrder(ctx, "alice", testOrder.ID)
			if err != nil || len(got.Payments) != 1 || got.PaidCents != testPayment.AmountCents {
				t.Fatalf("stored: %+v %v, want one payment", got, err)
			}
		})
	}
}

// A context that has ended sends nothing: a definite failure, not an
// unknown outcome. A refused request (invalid) is definite too.
func TestDynamoRepoDefiniteFailures(t *testing.T) {
	raw := dynalite.Client(t)
	table := dynalite.CreateTable(t, raw, orders.OrdersTableDefinition("orders"))
	ft := faults.New(http.DefaultTransport)
	r := &orders.DynamoRepo{Client: faultyClient(t, ft), Table: table}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.CreateOrder(ctx, "alice", testOrder); err == nil || errors.Is(err, orders.ErrWriteUnknown) {
		t.Errorf("cancelled: %v, want a definite failure", err)
	}
	if n := ft.Calls(""); n != 0 {
		t.Errorf("%d calls sent with an ended context", n)
	}
	bad := &orders.DynamoRepo{Client: faultyClient(t, ft), Table: "no-such-table"}
	if _, err := bad.CreateOrder(context.Background(), "alice", testOrder); err == nil || errors.Is(err, orders.ErrWriteUnknown) {
		t.Errorf("missing table: %v, want a definite failure", err)
	}
}

// unsupported sends every PutItem as an operation the server does not
// have (its X-Amz-Target, set before the request is signed).
type unsupported struct{ *dynamodb.Client }

func (u unsupported) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return u.Client.PutItem(ctx, in, append(optFns, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Build.Add(middleware.BuildMiddlewareFunc("target", func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
				if r, ok := in.Request.(*smithyhttp.Request); ok {
					r.Header.Set("X-Amz-Target", faults.TargetPrefix+"NoSuchOperation")
				}
				return next.HandleBuild(ctx, in)
			}), middleware.After)
		})
	})...)
}

// Writes the server refuses for good, or throttles on every send, stored
// nothing: they fail at once (a refusal) or after WriteAttempts sends (a
// throttle), never with ErrWriteUnknown, which would keep the key for an
// operator. An operation the server does not support (dynalite's 400
// UnknownOperationException, which the SDK labels neither a client nor a
// server fault) is such a refusal.
func TestDynamoRepoNotApplied(t *testing.T) {
	raw := dynalite.Client(t)
	table := dynalite.CreateTable(t, raw, orders.OrdersTableDefinition("orders"))
	ctx := t.Context()
	t.Run("unsupported operation", func(t *testing.T) {
		ft := faults.New(http.DefaultTransport)
		r := &orders.DynamoRepo{Client: unsupported{faultyClient(t, ft)}, Table: table}
		_, err := r.CreateOrder(ctx, "alice", testOrder)
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "UnknownOperationException" {
			t.Skipf("the test server (%s) answers an unknown operation with %v", dynalite.ServerName(), err)
		}
		if errors.Is(err, orders.ErrWriteUnknown) {
			t.Errorf("create: %v, want a definite failure", err)
		}
		if n := ft.Calls(""); n != 1 {
			t.Errorf("%d sends, want 1", n)
		}
	})
	t.Run("throttled on every send", func(t *testing.T) {
		ft := faults.New(http.DefaultTransport, faults.Rule{Op: "PutItem", Kind: faults.Throttle, Times: -1})
		one := dynamodb.New(faultyClient(t, ft).Options(), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 })
		r := &orders.DynamoRepo{Client: one, Table: table}
		_, err := r.CreateOrder(ctx, "alice", testOrder)
		if err == nil || errors.Is(err, orders.ErrWriteUnknown) {
			t.Errorf("create: %v, want a definite failure", err)
		}
		if n := ft.Calls("PutItem"); n != orders.WriteAttempts {
			t.Errorf("%d sends, want %d", n, orders.WriteAttempts)
		}
	})
}

// deadlines is a DynamoClient that sends every call to the server and
// records the deadline of the context each call was given.
type deadlines struct {
	orders.DynamoClient
	mu   sync.Mutex
	seen []time.Time
}

func (d *deadlines) record(ctx context.Context) {
	dl, _ := ctx.Deadline()
	d.mu.Lock()
	d.seen = append(d.seen, dl)
	d.mu.Unlock()
}

func (d *deadlines) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	d.record(ctx)
	return d.DynamoClient.PutItem(ctx, in, optFns...)
}

func (d *deadlines) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	d.record(ctx)
	return d.DynamoClient.Query(ctx, in, optFns...)
}

// Every call of the DynamoDB repo ends DeadlineGap before the request's
// deadline, or halfway there when less than twice the gap is left: a write
// never lands so late that idemkit cannot complete the key.
func TestDynamoRepoStopsBeforeDeadline(t *testing.T) {
	raw := dynalite.Client(t)
	table := dynalite.CreateTable(t, raw, orders.OrdersTableDefinition("orders"))
	clk := testclock.New()
	for _, tc := range []struct {
		name      string
		left, gap time.Duration // time to the deadline; DeadlineGap (0: default)
		halfway   bool          // the gap is more than half the time left
	}{
		{"default gap", 20 * time.Second, 0, false},
		{"gap set", 20 * time.Second, 3 * time.Second, false},
		{"little time left", 20 * time.Second, time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &deadlines{DynamoClient: raw}
			r := &orders.DynamoRepo{Client: rec, Table: table, DeadlineGap: tc.gap, CallTimeout: time.Minute}
			gap := tc.gap
			if gap == 0 {
				gap = orders.DefaultDeadlineGap
			}
			ctx := clk.Deadline(t, context.Background(), tc.left)
			dl, _ := ctx.Deadline()
			start := time.Now()
			o := testOrder
			o.ID = "0194a1b2-0000-7000-8000-00000000dl" + strconv.Itoa(len(tc.name))
			// The second write of each is refused and reads the stored one.
			p := testPayment
			p.OrderID = o.ID
			for range 2 {
				if _, err := r.CreateOrder(ctx, "alice", o); err != nil {
					t.Fatal(err)
				}
				if _, err := r.AddPayment(ctx, "alice", p); err != nil {
					t.Fatal(err)
				}
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.seen) < 6 {
				t.Fatalf("%d calls recorded, want two puts, two refused puts and their queries", len(rec.seen))
			}
			for i, got := range rec.seen {
				switch {
				case got.IsZero():
					t.Errorf("call %d: no deadline", i)
				case !tc.halfway && got.After(dl.Add(-gap)):
					t.Errorf("call %d ends %s before the deadline, want at least the gap %s", i, dl.Sub(got), gap)
				case tc.halfway && (!got.Before(dl) || got.Before(start.Add(dl.Sub(start)/2))):
					t.Errorf("call %d ends %s before the deadline, want halfway (%s)", i, dl.Sub(got), dl.Sub(start)/2)
				}
			}
		})
	}
}
