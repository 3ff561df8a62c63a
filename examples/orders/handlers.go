package orders

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/idemkit/idemkit"
)

// MaxDelay bounds a payment's delay_ms.
const MaxDelay = 10 * time.Second

type createOrderRequest struct {
	SKU         *string `json:"sku"`
	Quantity    *int64  `json:"quantity"`
	AmountCents *int64  `json:"amount_cents"`
	Currency    *string `json:"currency"`
}

type createPaymentRequest struct {
	OrderID     *string `json:"order_id"`
	AmountCents *int64  `json:"amount_cents"`
	Card        *string `json:"card"`
	DelayMS     *int64  `json:"delay_ms"`
}

func (a *app) createOrder(ctx context.Context, tenant string, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	var req createOrderRequest
	if resp, ok := decode(ev, &req); !ok {
		return resp, nil
	}
	var bad []InvalidParam
	bad = text(bad, "sku", req.SKU, validSKU, "must be 1 to 64 printable characters")
	bad = positive(bad, "quantity", req.Quantity)
	bad = positive(bad, "amount_cents", req.AmountCents)
	bad = text(bad, "currency", req.Currency, validCurrency, "must be a 3-letter ISO 4217 code in upper case, such as EUR")
	if len(bad) > 0 {
		return invalid(bad), nil
	}
	id, err := executionBased(ctx, "order")
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	o := Order{ID: id, SKU: *req.SKU, Quantity: *req.Quantity, AmountCents: *req.AmountCents,
		Currency: *req.Currency, CreatedAt: a.now().UTC().Truncate(time.Millisecond), Payments: []Payment{}}
	// A retry whose earlier run stored the order (its answer was lost)
	// gets the stored order back.
	o, err = a.repo.CreateOrder(ctx, tenant, o)
	if errors.Is(err, ErrIDConflict) {
		return keyReused("order"), nil
	}
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, writeFailed(err)
	}
	// The order is shipped by the shipping worker. A send that fails fails
	// the request: the key is freed, and the retry finds the order and
	// sends again. A request run again sends again too; the worker ships
	// each order once, keyed by its id.
	if a.outbox != nil {
		if err := a.outbox.Send(ctx, tenant, ShipRequest{OrderID: o.ID, SKU: o.SKU, Quantity: o.Quantity}); err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
	}
	body, err := json.Marshal(o)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(201, body, map[string]string{"Location": "/orders/" + o.ID}), nil
}

func (a *app) getOrder(ctx context.Context, tenant, id string) (events.APIGatewayV2HTTPResponse, error) {
	if u, err := uuid.Parse(id); err != nil || u.String() != id {
		return notFound("No order " + id + "."), nil
	}
	o, err := a.repo.GetOrder(ctx, tenant, id)
	if errors.Is(err, ErrNotFound) {
		return notFound("No order " + id + "."), nil
	}
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	body, err := json.Marshal(o)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(200, body, nil), nil
}

// paidBefore answers with the payment stored under p.ID by an earlier run
// of the key (its 201, or key-reused when it is another payment); found is
// false when o has none.
func paidBefore(o Order, p Payment) (resp events.APIGatewayV2HTTPResponse, found bool, err error) {
	for _, old := range o.Payments {
		if old.ID != p.ID {
			continue
		}
		if !samePayment(old, p) {
			return keyReused("payment"), true, nil
		}
		body, err := json.Marshal(old)
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, true, err
		}
		return jsonResponse(201, body, nil), true, nil
	}
	return events.APIGatewayV2HTTPResponse{}, false, nil
}

func (a *app) createPayment(ctx context.Context, tenant string, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	var req createPaymentRequest
	if resp, ok := decode(ev, &req); !ok {
		return resp, nil
	}
	if bad := req.check(); len(bad) > 0 {
		return invalid(bad), nil
	}
	o, err := a.repo.GetOrder(ctx, tenant, *req.OrderID)
	if errors.Is(err, ErrNotFound) {
		return notFound("No order " + *req.OrderID + " to pay."), nil
	}
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	var delay time.Duration
	if req.DelayMS != nil {
		delay = time.Duration(*req.DelayMS) * time.Millisecond
	}
	payID, err := executionBased(ctx, "payment")
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	p := Payment{ID: payID, OrderID: o.ID, AmountCents: *req.AmountCents, Currency: o.Currency,
		CardLast4: (*req.Card)[len(*req.Card)-4:], Status: "captured"}
	// Look before charging: a payment stored under payID was captured by
	// an earlier run of this key, whose record is gone (expired, or freed
	// by an operator). Answer it; never capture again, as the processor's
	// own idempotency window may be over.
	if resp, found, err := paidBefore(o, p); found {
		return resp, err
	}
	switch err := capture(ctx, payID, *req.Card, delay); {
	case errors.Is(err, errDeclined):
		return (&Problem{Type: TypeCardDeclined, Title: "Card declined", Status: 402,
			Detail: "The card was declined. Nothing was charged. This key keeps this answer; pay with another card under a new Idempotency-Key."}).Response(), nil
	case errors.Is(err, errProcessorDown):
		return (&Problem{Type: TypeProcessorDown, Title: "Payment processor unavailable", Status: 503, RetryAfter: 1,
			Detail: "The payment processor did not answer. Nothing was charged and nothing was recorded for this Idempotency-Key; retry with the same key."}).Response(), nil
	case errors.Is(err, errChargeUnknown):
		// Charged or not, nobody can say: keep the key for an operator,
		// never capture again.
		return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("orders: capture %s: %w: %w", payID, idemkit.ErrOutcomeUnknown, err)
	case err != nil:
		return events.APIGatewayV2HTTPResponse{}, err
	}
	p.CreatedAt = a.now().UTC().Truncate(time.Millisecond)
	p, err = a.repo.AddPayment(ctx, tenant, p)
	if errors.Is(err, ErrIDConflict) {
		return keyReused("payment"), nil
	}
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, writeFailed(err)
	}
	body, err := json.Marshal(p)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(201, body, nil), nil
}

// check returns the invalid members of a payment request, in the order of
// its fields; none when it is valid.
func (req *createPaymentRequest) check() []InvalidParam {
	var bad []InvalidParam
	bad = text(bad, "order_id", req.OrderID, validUUID, "must be an order id (a UUID in lower case)")
	bad = positive(bad, "amount_cents", req.AmountCents)
	bad = text(bad, "card", req.Card, validCard, "must be a card number: 12 to 19 digits with a valid check digit")
	if req.DelayMS != nil && (*req.DelayMS < 0 || time.Duration(*req.DelayMS)*time.Millisecond > MaxDelay) {
		bad = append(bad, InvalidParam{"delay_ms", fmt.Sprintf("must be between 0 and %d", MaxDelay.Milliseconds())})
	}
	return bad
}

// idNamespace is the UUID namespace of the IDs executionBased derives.
var idNamespace = uuid.MustParse("5d0f1c6e-8f3a-4f57-9a51-3c1f0e7d2b64")

// executionBased returns the ID of the kind ("order", "payment") of item
// the guarded request ctx creates: a UUID (version 5) derived from
// idemkit.ExecutionID, the same for every run of one Idempotency-Key (same
// caller, route and resource) and distinct across them. A run that finds the item
// under its ID stored knows an earlier run of the same key stored it.
func executionBased(ctx context.Context, kind string) (string, error) {
	x, ok := idemkit.ExecutionID(ctx)
	if !ok {
		return "", errors.New("orders: no execution identity: the handler runs outside idemkit's guard")
	}
	return uuid.NewSHA1(idNamespace, []byte(kind+":"+x)).String(), nil
}

// writeFailed returns the handler's error for a failed write: one whose
// outcome is unknown wraps idemkit.ErrOutcomeUnknown, so that the key is
// kept (indeterminate) instead of freed: freeing it would tell the client
// that nothing was recorded, which may be false.
func writeFailed(err error) error {
	if errors.Is(err, ErrWriteUnknown) {
		return fmt.Errorf("%w: %w", idemkit.ErrOutcomeUnknown, err)
	}
	return err
}

// decode reads a JSON object into dst, refusing unknown members, trailing
// data and other media types. On failure it returns the problem to send.
func decode(ev events.APIGatewayV2HTTPRequest, dst any) (events.APIGatewayV2HTTPResponse, bool) {
	if ct := header(ev.Headers, "Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
			return (&Problem{Type: TypeUnsupportedMedia, Title: "Unsupported media type", Status: 415,
				Detail: "Send the body as JSON with Content-Type: application/json."}).Response(), false
		}
	}
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(ev.Body)
		if err != nil {
			return invalid([]InvalidParam{{"body", "is not valid base64"}}), false
		}
		body = b
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return invalid([]InvalidParam{{"body", "is required: a JSON object"}}), false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return invalid([]InvalidParam{{te.Field, "must be " + jsonType(te.Type.Kind().String())}}), false
		}
		reason := strings.TrimPrefix(err.Error(), "json: ")
		return invalid([]InvalidParam{{"body", reason}}), false
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid([]InvalidParam{{"body", "must hold one JSON object and nothing after it"}}), false
	}
	return events.APIGatewayV2HTTPResponse{}, true
}

func jsonType(kind string) string {
	switch kind {
	case "int64":
		return "an integer"
	case "string":
		return "a string"
	case "ptr", "pointer":
		return "of another type"
	}
	return "a " + kind
}

func header(h map[string]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// text appends to bad the problem of the string member name: absent, or
// not valid (must says what it must be).
func text(bad []InvalidParam, name string, v *string, valid func(string) bool, must string) []InvalidParam {
	switch {
	case v == nil:
		return append(bad, InvalidParam{name, "is required"})
	case !valid(*v):
		return append(bad, InvalidParam{name, must})
	}
	return bad
}

// positive appends to bad the problem of the integer member name: absent,
// or not greater than 0.
func positive(bad []InvalidParam, name string, v *int64) []InvalidParam {
	switch {
	case v == nil:
		return append(bad, InvalidParam{name, "is required"})
	case *v <= 0:
		return append(bad, InvalidParam{name, "must be an integer greater than 0"})
	}
	return bad
}

func validSKU(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

func validCurrency(c string) bool {
	if len(c) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if c[i] < 'A' || c[i] > 'Z' {
			return false
		}
	}
	return true
}

func validUUID(s string) bool {
	u, err := uuid.Parse(s)
	return err == nil && u.String() == s
}
