// Package faults is a fault-injecting http.RoundTripper for tests of the
// DynamoDB store through the real AWS SDK: set a *Transport as the SDK
// client's HTTPClient and add Rules. A rule names a DynamoDB operation (the
// suffix of the X-Amz-Target header, "PutItem"), optionally a predicate on
// the request body, which matching calls it lets through first (Skip), and
// how many it then spoils (Times; negative: every one after Skip).
//
// The faults are the ones that cause double executions in real systems:
//
//	LostAck         the request reaches the server and is applied; the
//	                response is dropped and the call fails with a
//	                connection reset
//	LostAckBody     as LostAck, but the response's body breaks mid-read
//	Throttle        400 ProvisionedThroughputExceededException, not applied
//	Throttling      400 ThrottlingException, not applied
//	ServerError     500 InternalServerError, not applied
//	Reset           connection reset before the request is sent, not applied
//	Timeout         no answer until the request's context ends, not applied
//	TimeoutApplied  applied at once, then no answer until the context ends
//	DelayedApply    the call fails at once with a read timeout (the SDK
//	                retries it); the request is held and reaches the
//	                server later, when Deliver sends it, on a context of
//	                its own: a write that lands after its client moved on
//
// The responses have the JSON shape DynamoDB sends
// ({"__type":"com.amazonaws.dynamodb.v20120810#...","message":"..."}).
package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Kind is a fault.
type Kind int

// The faults a Rule injects.
const (
	LostAck Kind = iota + 1
	LostAckBody
	Throttle
	Throttling
	ServerError
	Reset
	Timeout
	TimeoutApplied
	DelayedApply
)

var kindNames = map[Kind]string{
	LostAck: "lost-ack", LostAckBody: "lost-ack-body", Throttle: "throttle",
	Throttling: "throttling", ServerError: "5xx", Reset: "reset",
	Timeout: "timeout", TimeoutApplied: "timeout-applied", DelayedApply: "delayed-apply",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Applied reports whether a request spoiled by k reaches the server, which
// applies it if its condition holds: at once, or for DelayedApply when
// Deliver sends it.
func (k Kind) Applied() bool {
	return k == LostAck || k == LostAckBody || k == TimeoutApplied || k == DelayedApply
}

// TargetPrefix is the X-Amz-Target prefix of DynamoDB operations.
const TargetPrefix = "DynamoDB_20120810."

// Rule spoils some calls of one operation.
type Rule struct {
	// Op is the operation ("PutItem"); empty: every operation.
	Op string
	// Match, when set, must accept the request body for the call to count.
	Match func(body []byte) bool
	// Skip is the number of matching calls let through before the first
	// spoiled one.
	Skip int
	// Times is the number of matching calls spoiled after Skip; negative:
	// all of them (the fault never clears).
	Times int
	// Every, when above 1, spoils only every Every-th matching call after
	// Skip (the first, then Every later, ...): a server that throttles a
	// share of the traffic.
	Every int
	// Kind is the fault.
	Kind Kind
}

type rule struct {
	Rule
	seen, hit int
}

// Event is one spoiled call.
type Event struct {
	Op   string
	Kind Kind
	Call int // the matching call's number for its rule, from 1
}

// Transport is an http.RoundTripper that spoils the calls its rules match
// and forwards the others to Base. It is safe for concurrent use.
type Transport struct {
	// Base forwards requests. Nil: http.DefaultTransport.
	Base http.RoundTripper

	mu     sync.Mutex
	rules  []*rule
	calls  map[string]int
	events []Event
	held   []heldCall
}

// heldCall is a request spoiled by DelayedApply, not yet delivered.
type heldCall struct {
	req  *http.Request
	body []byte
	op   string
	call int
}

// New returns a Transport forwarding to base with the given rules.
func New(base http.RoundTripper, rules ...Rule) *Transport {
	t := &Transport{Base: base}
	for _, r := range rules {
		t.Add(r)
	}
	return t
}

// Client returns an *http.Client using t, for the SDK's HTTPClient option.
func (t *Transport) Client() *http.Client { return &http.Client{Transport: t} }

// Do lets t be the SDK's HTTPClient directly.
func (t *Transport) Do(req *http.Request) (*http.Response, error) { return t.RoundTrip(req) }

// Add adds a rule.
func (t *Transport) Add(r Rule) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = append(t.rules, &rule{Rule: r})
}

// Clear removes every rule: the faults clear.
func (t *Transport) Clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = nil
}

// Calls returns how many calls of op (every operation for "") went
// through t, spoiled or not.
func (t *Transport) Calls(op string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if op == "" {
		n := 0
		for _, c := range t.calls {
			n += c
		}
		return n
	}
	return t.calls[op]
}

// Events returns the spoiled calls so far, in order.
func (t *Transport) Events() []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Event(nil), t.events...)
}

// Op returns the DynamoDB operation of a request ("PutItem"), or "".
func Op(req *http.Request) string {
	return strings.TrimPrefix(req.Header.Get("X-Amz-Target"), TargetPrefix)
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	op := Op(req)
	req, body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	kind, call := t.pick(op, body)
	base := t.base()
	switch kind {
	case 0:
		return base.RoundTrip(req)
	case Throttle:
		return jsonError(req, 400, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
			"The level of configured provisioned throughput for the table was exceeded. (injected)"), nil
	case Throttling:
		return jsonError(req, 400, "com.amazon.coral.availability#ThrottlingException", "Rate of requests exceeds the allowed throughput. (injected)"), nil
	case ServerError:
		return jsonError(req, 500, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error (injected)"), nil
	case Reset:
		return nil, resetErr(op, call)
	case Timeout:
		<-req.Context().Done()
		return nil, req.Context().Err()
	case DelayedApply:
		t.mu.Lock()
		t.held = append(t.held, heldCall{req: req, body: body, op: op, call: call})
		t.mu.Unlock()
		return nil, timeoutErr(op, call)
	}
	return applied(base, req, kind, op, call)
}

// readBody reads the body of req, if any, and returns a clone of req that
// sends it again, with the body.
func readBody(req *http.Request) (*http.Request, []byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil, nil
	}
	b, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, nil, err
	}
	return withBody(req.Context(), req, b), b, nil
}

// withBody returns a clone of req on ctx that sends b as its body, as
// often as it is sent.
func withBody(ctx context.Context, req *http.Request, b []byte) *http.Request {
	req = req.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(b))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return req
}

// base returns Base, or http.DefaultTransport when it is nil.
func (t *Transport) base() http.RoundTripper {
	if t.Base == nil {
		return http.DefaultTransport
	}
	return t.Base
}

// applied sends req through base and then spoils the answer with kind, one
// of the faults that let the server apply the request, for call of op.
func applied(base http.RoundTripper, req *http.Request, kind Kind, op string, call int) (*http.Response, error) {
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, rerr := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if rerr != nil {
		return nil, rerr
	}
	switch kind {
	case LostAck:
		return nil, resetErr(op, call)
	case LostAckBody:
		resp.Body = &brokenBody{r: bytes.NewReader(b[:len(b)/2]), err: resetErr(op, call)}
		return resp, nil
	case TimeoutApplied:
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	return nil, fmt.Errorf("faults: unknown kind %v", kind)
}

// pick returns the fault for a call, 0 for none, counting it.
func (t *Transport) pick(op string, body []byte) (Kind, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.calls == nil {
		t.calls = make(map[string]int)
	}
	t.calls[op]++
	for _, r := range t.rules {
		if r.Op != "" && r.Op != op {
			continue
		}
		if r.Match != nil && !r.Match(body) {
			continue
		}
		r.seen++
		if r.seen <= r.Skip || (r.Times >= 0 && r.hit >= r.Times) {
			continue
		}
		if r.Every > 1 && (r.seen-r.Skip-1)%r.Every != 0 {
			continue
		}
		r.hit++
		t.events = append(t.events, Event{Op: op, Kind: r.Kind, Call: r.seen})
		return r.Kind, r.seen
	}
	return 0, 0
}

func jsonError(req *http.Request, status int, typ, msg string) *http.Response {
	b := []byte(fmt.Sprintf(`{"__type":%q,"message":%q}`, typ, msg))
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Requestid": {"injected"}},
		Body:          io.NopCloser(bytes.NewReader(b)),
		ContentLength: int64(len(b)),
		Request:       req,
	}
}

// timeoutErr is the error a read deadline gives ("i/o timeout"): a
// net.Error whose Timeout and Temporary are true, which the SDK's
// standard retryer retries.
func timeoutErr(op string, call int) error {
	return &net.OpError{Op: "read", Net: "tcp", Source: injectedAddr(fmt.Sprintf("injected %s call %d", op, call)), Err: os.ErrDeadlineExceeded}
}

// resetErr is the error a reset connection gives.
func resetErr(op string, call int) error {
	return &net.OpError{Op: "read", Net: "tcp", Source: injectedAddr(fmt.Sprintf("injected %s call %d", op, call)), Err: syscall.ECONNRESET}
}

type injectedAddr string

func (a injectedAddr) Network() string { return "tcp" }
func (a injectedAddr) String() string  { return string(a) }

// brokenBody returns r's bytes, then err.
type brokenBody struct {
	r   *bytes.Reader
	err error
}

func (b *brokenBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, b.err
	}
	return n, err
}

func (b *brokenBody) Close() error { return nil }

// Delivery is what the server answered a held request when Deliver sent
// it.
type Delivery struct {
	Op   string // the operation ("PutItem")
	Call int    // the matching call's number for its rule, as in Event
	// Status is the HTTP status of the answer: 200 when the write was
	// applied; 0 when it could not be sent (Err).
	Status int
	// Type is the DynamoDB error type of a refusal, without its prefix
	// ("ConditionalCheckFailedException"); empty for a 200.
	Type string
	Err  error
}

// Applied reports whether the server applied the delivered write.
func (d Delivery) Applied() bool { return d.Err == nil && d.Status == http.StatusOK }

func (d Delivery) String() string {
	switch {
	case d.Err != nil:
		return fmt.Sprintf("%s call %d: %v", d.Op, d.Call, d.Err)
	case d.Type != "":
		return fmt.Sprintf("%s call %d: %d %s", d.Op, d.Call, d.Status, d.Type)
	}
	return fmt.Sprintf("%s call %d: %d", d.Op, d.Call, d.Status)
}

// deliverTimeout bounds each held request's delivery.
const deliverTimeout = 30 * time.Second

// Held returns how many requests DelayedApply holds, not yet delivered.
func (t *Transport) Held() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.held)
}

// Deliver sends the requests DelayedApply holds to Base, one after the
// other in the order they were held, each on a fresh context (the
// client's gave up long ago), and returns the server's answers. The
// requests are sent as they were signed: a real DynamoDB refuses a
// signature older than five minutes, so a delivery models a delay shorter
// than that. A held request is delivered once; Clear does not drop it.
func (t *Transport) Deliver() []Delivery {
	t.mu.Lock()
	held := t.held
	t.held = nil
	t.mu.Unlock()
	base := t.base()
	out := make([]Delivery, 0, len(held))
	for _, h := range held {
		out = append(out, deliver(base, h))
	}
	return out
}

// deliver sends one held request and reads its answer.
func deliver(base http.RoundTripper, h heldCall) Delivery {
	d := Delivery{Op: h.op, Call: h.call}
	ctx, cancel := context.WithTimeout(context.Background(), deliverTimeout)
	defer cancel()
	resp, err := base.RoundTrip(withBody(ctx, h.req, h.body))
	if err != nil {
		d.Err = err
		return d
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		d.Err = err
		return d
	}
	d.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Type string `json:"__type"`
		}
		_ = json.Unmarshal(b, &e)
		d.Type = e.Type[strings.LastIndex(e.Type, "#")+1:]
	}
	return d
}

// WithoutConditionItem returns a RoundTripper that drops the item a
// ConditionalCheckFailedException carries
// (ReturnValuesOnConditionCheckFailure=ALL_OLD), as a server without that
// capability does: a test of the read that follows a refusal then makes
// that read whatever the test server is.
func WithoutConditionItem(base http.RoundTripper) http.RoundTripper {
	return withoutConditionItem{base}
}

type withoutConditionItem struct{ base http.RoundTripper }

func (w withoutConditionItem) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var e map[string]json.RawMessage
	if json.Unmarshal(body, &e) == nil && bytes.Contains(e["__type"], []byte("ConditionalCheckFailedException")) && e["Item"] != nil {
		delete(e, "Item")
		body, _ = json.Marshal(e)
		resp.Header.Del("X-Amz-Crc32") // the body changed
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp, nil
}
