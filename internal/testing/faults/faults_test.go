package faults_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/faults"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// value returns attribute v of item pk, or "" when there is no such item.
func value(t *testing.T, c *dynamodb.Client, table, pk string) string {
	t.Helper()
	out, err := c.GetItem(t.Context(), &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": str(pk)}, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if out.Item == nil {
		return ""
	}
	return out.Item["v"].(*types.AttributeValueMemberS).Value
}

// via returns a client whose calls go through the transport that wrap
// makes of a fresh one, a client that sees no faults, and a fresh table.
func via(t *testing.T, wrap func(http.RoundTripper) http.RoundTripper) (c, raw *dynamodb.Client, table string) {
	t.Helper()
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	c, err := dynalite.NewClientVia(t.Context(), dynalite.Endpoint(t), wrap(base))
	if err != nil {
		t.Fatal(err)
	}
	raw = dynalite.Client(t)
	return c, raw, dynalite.CreateTable(t, raw, dynalite.KeyTable("faults"))
}

// held returns a client whose first times PutItem calls are held
// (DelayedApply), their transport, a client that sees no faults, and a
// fresh table.
func held(t *testing.T, times int) (c *dynamodb.Client, ft *faults.Transport, raw *dynamodb.Client, table string) {
	t.Helper()
	c, raw, table = via(t, func(base http.RoundTripper) http.RoundTripper {
		ft = faults.New(base, faults.Rule{Op: "PutItem", Times: times, Kind: faults.DelayedApply})
		return ft
	})
	return c, ft, raw, table
}

// put returns a PutItem of item pk with attribute v into table, on
// condition cond unless that is "".
func put(table, pk, v string, cond string) *dynamodb.PutItemInput {
	in := &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{"pk": str(pk), "v": str(v)}}
	if cond != "" {
		in.ConditionExpression = aws.String(cond)
	}
	return in
}

// TestDelayedApply: against dynalite through the SDK, a PutItem spoiled by
// DelayedApply fails at once with an error the SDK's standard retryer
// retries, is not on the server until Deliver sends it, and is applied
// then if its condition holds at that time: a late copy undoes a write
// made after it, and a conditional one is refused.
func TestDelayedApply(t *testing.T) {
	cases := []struct {
		name     string
		attempts int    // the SDK's attempts; 1: the fault is the call's answer
		cond     string // the PutItem's condition
		// later is the value written, unfaulted, after the call and before
		// the delivery ("": none).
		later string
		// before and after are the item's v before and after Deliver.
		before, after string
		// applied and typ are what Deliver reports.
		applied bool
		typ     string
	}{
		{name: "one attempt: the call fails, the write lands later", attempts: 1,
			before: "", after: "first", applied: true},
		{name: "retried: the late copy undoes a later write", attempts: 3, later: "second",
			before: "second", after: "first", applied: true},
		{name: "retried and conditional: the late copy is refused", attempts: 3, cond: "attribute_not_exists(pk)",
			before: "first", after: "first", applied: false, typ: "ConditionalCheckFailedException"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, ft, raw, table := held(t, 1)

			_, err := c.PutItem(ctx, put(table, "k", "first", tc.cond), func(o *dynamodb.Options) { o.RetryMaxAttempts = tc.attempts })
			if tc.attempts == 1 {
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					t.Fatalf("PutItem: %v, want a net.Error timeout", err)
				}
				if got := retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err); got != aws.TrueTernary {
					t.Fatalf("the SDK's retryables say %v for %v, want retryable", got, err)
				}
			} else if err != nil {
				t.Fatalf("PutItem: %v (the SDK's retry should land)", err)
			}
			if got, want := ft.Calls("PutItem"), tc.attempts; got != min(want, 2) {
				t.Fatalf("%d PutItem calls, want %d", got, min(want, 2))
			}
			if tc.later != "" {
				if _, err := c.PutItem(ctx, put(table, "k", tc.later, "")); err != nil {
					t.Fatal(err)
				}
			}
			ev := ft.Events()
			if len(ev) != 1 || ev[0] != (faults.Event{Op: "PutItem", Kind: faults.DelayedApply, Call: 1}) {
				t.Fatalf("events %v, want one delayed-apply on PutItem call 1", ev)
			}
			ft.Clear() // the rules go, the held request stays
			if ft.Held() != 1 {
				t.Fatalf("%d held, want 1", ft.Held())
			}
			if got := value(t, raw, table, "k"); got != tc.before {
				t.Fatalf("before delivery v=%q, want %q", got, tc.before)
			}

			ds := ft.Deliver()
			if len(ds) != 1 || ds[0].Op != "PutItem" || ds[0].Call != 1 || ds[0].Err != nil || ds[0].Applied() != tc.applied || ds[0].Type != tc.typ {
				t.Fatalf("deliveries %v, want one PutItem call 1 applied=%v type=%q", ds, tc.applied, tc.typ)
			}
			if got := value(t, raw, table, "k"); got != tc.after {
				t.Fatalf("after delivery v=%q, want %q", got, tc.after)
			}
			if ft.Held() != 0 || len(ft.Deliver()) != 0 {
				t.Fatal("a held request was delivered twice")
			}
		})
	}
}

// TestDelayedApplyKind: the kind's name, and it reaches the server.
func TestDelayedApplyKind(t *testing.T) {
	if got := faults.DelayedApply.String(); got != "delayed-apply" {
		t.Errorf("String %q", got)
	}
	if !faults.DelayedApply.Applied() {
		t.Error("DelayedApply.Applied() is false: the request reaches the server when delivered")
	}
	if faults.Timeout.Applied() {
		t.Error("Timeout.Applied() is true")
	}
}

// TestDeliverUnreachable: a held request that cannot be sent is reported
// with its error, not dropped silently.
func TestDeliverUnreachable(t *testing.T) {
	ft := faults.New(&http.Transport{}, faults.Rule{Times: 1, Kind: faults.DelayedApply})
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", faults.TargetPrefix+"DeleteItem")
	if _, err := ft.RoundTrip(req); err == nil {
		t.Fatal("a held call answered")
	}
	ds := ft.Deliver()
	if len(ds) != 1 || ds[0].Op != "DeleteItem" || ds[0].Err == nil || ds[0].Applied() {
		t.Fatalf("deliveries %v, want one DeleteItem that failed to send", ds)
	}
}

// TestDeliverOrder: held requests are delivered in the order they were
// held, so that the server applies them in the order they were sent.
func TestDeliverOrder(t *testing.T) {
	ctx := context.Background()
	c, ft, raw, table := held(t, 2)
	for _, v := range []string{"first", "second"} {
		if _, err := c.PutItem(ctx, put(table, "k", v, ""), func(o *dynamodb.Options) { o.RetryMaxAttempts = 1 }); err == nil {
			t.Fatalf("PutItem %q answered, want it held", v)
		}
	}
	ds := ft.Deliver()
	if len(ds) != 2 || ds[0].Call != 1 || ds[1].Call != 2 || !ds[0].Applied() || !ds[1].Applied() {
		t.Fatalf("deliveries %v, want calls 1 then 2, applied", ds)
	}
	if got := value(t, raw, table, "k"); got != "second" {
		t.Fatalf("after delivery v=%q, want the later write's", got)
	}
}

// TestWithoutConditionItem: on a server that returns the item with a
// failed condition, the wrapper drops it, and the SDK still reads the
// refusal (its checksum and length match the body it gets); other
// answers pass unchanged.
func TestWithoutConditionItem(t *testing.T) {
	dynalite.Require(t, dynalite.AllOldOnConditionFailure)
	ctx := context.Background()
	c, raw, table := via(t, faults.WithoutConditionItem)
	in := put(table, "k", "first", "attribute_not_exists(pk)")
	in.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	if _, err := c.PutItem(ctx, in); err != nil {
		t.Fatal(err)
	}
	// The same write through a client without the wrapper gets the item.
	var cf *types.ConditionalCheckFailedException
	if _, err := raw.PutItem(ctx, in); !errors.As(err, &cf) || len(cf.Item) == 0 {
		t.Fatalf("unwrapped: %v, want a refusal carrying the item", err)
	}
	if _, err := c.PutItem(ctx, in); !errors.As(err, &cf) || len(cf.Item) != 0 {
		t.Fatalf("wrapped: %v (item %v), want a refusal without the item", err, cf)
	}
	if got := value(t, raw, table, "k"); got != "first" {
		t.Fatalf("v=%q, want first", got)
	}
}
