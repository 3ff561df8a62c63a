package event_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/idemkey"
	"github.com/idemkit/idemkit/internal/testing/eventlog"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/event"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
	"github.com/idemkit/idemkit/tenant"
)

type transfer struct {
	TransferID string `json:"transferId"`
	Account    string `json:"account"`
	Amount     int    `json:"amount"`
}

type receipt struct {
	TransferID string `json:"transferId"`
	Run        int32  `json:"run"`
}

// sqsConfig keys SQS messages by the transfer id in their body, tenant by
// a message attribute, and compares bodies only.
var sqsConfig = event.Config[events.SQSMessage]{
	Key: func(m events.SQSMessage) (string, error) {
		var tr transfer
		err := json.Unmarshal([]byte(m.Body), &tr)
		return tr.TransferID, err
	},
	Tenant: func(_ context.Context, m events.SQSMessage) (string, error) {
		if a, ok := m.MessageAttributes["tenant"]; ok && a.StringValue != nil {
			return *a.StringValue, nil
		}
		return "", nil
	},
	Operation: "transfers.execute",
	Payload:   func(m events.SQSMessage) ([]byte, error) { return []byte(m.Body), nil },
}

type transfers struct {
	runs atomic.Int32
	err  error
}

func (x *transfers) handle(_ context.Context, m events.SQSMessage) (receipt, error) {
	n := x.runs.Add(1)
	if x.err != nil {
		return receipt{}, x.err
	}
	var tr transfer
	json.Unmarshal([]byte(m.Body), &tr)
	return receipt{TransferID: tr.TransferID, Run: n}, nil
}

func TestSQSRedelivery(t *testing.T) {
	x := &transfers{}
	h := event.Wrap(testguard.Mem(t), sqsConfig, x.handle)
	msg := testkit.Load[events.SQSEvent](t, "sqs-event.json").Records[0]
	first := testkit.Call(t, h, msg)
	msg.Attributes["ApproximateReceiveCount"] = "2"
	msg.ReceiptHandle = "AQEBother"
	second, err := h(context.Background(), msg)
	if err != nil || second != first || x.runs.Load() != 1 {
		t.Fatalf("redelivery: %+v %v after %d runs, want %+v", second, err, x.runs.Load(), first)
	}
}

func TestSQSRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*event.Config[events.SQSMessage])
		msg  func(*events.SQSMessage)
		want error
	}{
		{name: "no key", cfg: func(c *event.Config[events.SQSMessage]) { c.Key = nil }, want: idemkey.ErrInvalid},
		{name: "empty tenant", cfg: func(c *event.Config[events.SQSMessage]) {
			c.Tenant = func(context.Context, events.SQSMessage) (string, error) { return "", nil }
		}, want: idemkit.ErrTenantMissing},
		{name: "empty key", msg: func(m *events.SQSMessage) { m.Body = `{"transferId":"","amount":1}` }, want: idemkey.ErrInvalid},
		{name: "key too long", cfg: func(c *event.Config[events.SQSMessage]) { c.MaxKeyLen = 4 }, want: idemkey.ErrTooLong},
		{name: "same key, different body", msg: func(m *events.SQSMessage) {
			m.Body = `{"transferId":"tr_1001","account":"acct-acme","amount":9999,"currency":"eur"}`
		}, want: idemkit.ErrFingerprintMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := testguard.Mem(t)
			x := &transfers{}
			// A first delivery of the original message.
			event.Wrap(g, sqsConfig, x.handle)(context.Background(), testkit.Load[events.SQSEvent](t, "sqs-event.json").Records[0])
			cfg := sqsConfig
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			msg := testkit.Load[events.SQSEvent](t, "sqs-event.json").Records[0]
			if tc.msg != nil {
				tc.msg(&msg)
			}
			_, err := event.Wrap(g, cfg, x.handle)(context.Background(), msg)
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if x.runs.Load() != 1 {
				t.Errorf("ran %d times", x.runs.Load())
			}
		})
	}
}

// TestWrapRefusesConfigWithoutTenant: a Config without a Tenant, the
// zero Config among them, is refused when the function is wrapped, with a
// panic naming the setting, as every adapter refuses it.
func TestWrapRefusesConfigWithoutTenant(t *testing.T) {
	g := testguard.Mem(t)
	x := &transfers{}
	noTenant := sqsConfig
	noTenant.Tenant = nil
	for name, cfg := range map[string]event.Config[events.SQSMessage]{"zero": {}, "no tenant": noTenant} {
		msg := testkit.PanicOf(func() { event.Wrap(g, cfg, x.handle) })
		if !strings.HasPrefix(msg, "event: invalid Config: the Tenant setting is nil") {
			t.Errorf("%s Config: panic %q, want one naming the Tenant setting", name, msg)
		}
	}
}

// TestHandlerError: an error is returned and the redelivery runs again.
func TestHandlerError(t *testing.T) {
	x := &transfers{err: errors.New("ledger unavailable")}
	h := event.Wrap(testguard.Mem(t), sqsConfig, x.handle)
	msg := testkit.Load[events.SQSEvent](t, "sqs-event.json").Records[0]
	if _, err := h(context.Background(), msg); !errors.Is(err, x.err) {
		t.Fatalf("error %v", err)
	}
	x.err = nil
	if r, err := h(context.Background(), msg); err != nil || r.Run != 2 {
		t.Errorf("retry: %+v %v", r, err)
	}
}

// TestInFlight: a duplicate delivered while the first runs fails at once
// with ErrInFlight.
func TestInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	x := &transfers{}
	h := event.Wrap(testguard.Mem(t), sqsConfig, func(ctx context.Context, m events.SQSMessage) (receipt, error) {
		close(entered)
		<-release
		return x.handle(ctx, m)
	})
	msg := testkit.Load[events.SQSEvent](t, "sqs-event.json").Records[0]
	done := make(chan error)
	go func() { _, err := h(context.Background(), msg); done <- err }()
	<-entered
	_, err := h(context.Background(), msg)
	var ce *idemkit.ConflictError
	if !errors.Is(err, idemkit.ErrInFlight) || !errors.As(err, &ce) || ce.RetryAfter < 1 {
		t.Errorf("duplicate: %v, want ErrInFlight with a RetryAfter", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Error(err)
	}
}

type orderPlaced struct {
	OrderID string `json:"orderId"`
	Tenant  string `json:"tenant"`
	Amount  int    `json:"amount"`
}

// TestEventBridgeDetail: a typed EventBridge detail, keyed by order id,
// with the default operation and a fingerprint of the whole detail.
func TestEventBridgeDetail(t *testing.T) {
	runs := 0
	h := event.Wrap(testguard.Mem(t), event.Config[events.EventBridgeEvent]{
		Key:         func(e events.EventBridgeEvent) (string, error) { return e.ID, nil },
		Tenant:      tenant.Single[events.EventBridgeEvent]("orders"),
		Payload:     func(e events.EventBridgeEvent) ([]byte, error) { return e.Detail, nil },
		Fingerprint: fingerprintAmountOnly,
	}, func(_ context.Context, e events.EventBridgeEvent) (map[string]any, error) {
		runs++
		var d orderPlaced
		json.Unmarshal(e.Detail, &d)
		return map[string]any{"order": d.OrderID, "invoiced": true}, nil
	})
	ev := testkit.Load[events.EventBridgeEvent](t, "eventbridge.json")
	first := testkit.Call(t, h, ev)
	ev.Time = ev.Time.Add(1)
	second, err := h(context.Background(), ev)
	if err != nil || runs != 1 || second["order"] != first["order"] || second["invoiced"] != true {
		t.Errorf("second %v %v after %d runs", second, err, runs)
	}
}

// TestTenantError: an error of Tenant refuses the call without running
// it; the caller and the observer get it joined with ErrTenantMissing.
func TestTenantError(t *testing.T) {
	errDirectory := errors.New("directory down")
	obs := &eventlog.Log{}
	g := testguard.New(t, idemkit.Config{Store: memstore.New(), Observer: obs})
	cfg := sqsConfig
	cfg.Tenant = func(context.Context, events.SQSMessage) (string, error) { return "acme", errDirectory }
	x := &transfers{}
	_, err := event.Wrap(g, cfg, x.handle)(context.Background(), testkit.Load[events.SQSEvent](t, "sqs-event.json").Records[0])
	if !errors.Is(err, idemkit.ErrTenantMissing) || !errors.Is(err, errDirectory) {
		t.Errorf("error %v, want ErrTenantMissing and the Tenant error", err)
	}
	if x.runs.Load() != 0 {
		t.Error("handler ran")
	}
	if observed := obs.Events(); len(observed) != 1 || observed[0].Kind != observe.EventRefused || !errors.Is(observed[0].Err, errDirectory) ||
		!errors.Is(observed[0].Err, idemkit.ErrTenantMissing) || observed[0].Operation != "transfers.execute" {
		t.Errorf("observed %+v, want one refusal carrying the Tenant error", observed)
	}
}
