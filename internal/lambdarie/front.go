package lambdarie

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit/examples/orders"
)

// Front does, over plain HTTP, what template.yaml's HTTP API does in front
// of the function: it matches the routes (404 {"message":"Not Found"}
// otherwise), runs the JWT authorizer (401 {"message":"Unauthorized"}
// without a valid token), turns the request into a payload 2.0 event with
// the token's claims in requestContext.authorizer.jwt, invokes the
// function in a free sandbox, one invocation per sandbox at a time (429
// {"message":"Too Many Requests"} when none is free, as past a function's
// concurrency), and maps the function's answer back to HTTP: a payload 2.0
// response as API Gateway does, a function error, crash or timeout as 500
// {"message":"Internal Server Error"}.
type Front struct {
	// Sandboxes run the function.
	Sandboxes []*Sandbox
	// Authorizer checks the bearer tokens.
	Authorizer *Authorizer
	// Timeout bounds an invocation from the front's side: the function's
	// Timeout plus the emulator's margin. Zero: 35 s.
	Timeout time.Duration
	// Logger receives invocation failures. Nil: slog.Default().
	Logger *slog.Logger

	once  sync.Once
	free  chan int
	mu    sync.Mutex
	calls []int // guarded by mu: invocations per sandbox
}

func (f *Front) init() {
	f.once.Do(func() {
		f.free = make(chan int, len(f.Sandboxes))
		for i := range f.Sandboxes {
			f.free <- i
		}
		f.calls = make([]int, len(f.Sandboxes))
	})
}

// Invocations returns how many invocations each sandbox has served.
func (f *Front) Invocations() []int {
	f.init()
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.calls...)
}

func gatewayAnswer(status int, message string) events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{StatusCode: status,
		Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"message":"` + message + `"}`}
}

// ServeHTTP implements http.Handler.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.init()
	log := f.Logger
	if log == nil {
		log = slog.Default()
	}
	routeKey, params, ok := orders.MatchRoute(r.Method, r.URL.EscapedPath())
	if !ok {
		orders.WriteResponse(w, gatewayAnswer(http.StatusNotFound, "Not Found"), log)
		return
	}
	claims, err := f.authorize(r.Header.Get("Authorization"))
	if err != nil {
		resp := gatewayAnswer(http.StatusUnauthorized, "Unauthorized")
		resp.Headers["WWW-Authenticate"] = `Bearer error="invalid_token"`
		orders.WriteResponse(w, resp, log)
		return
	}
	body, err := orders.ReadBody(r)
	if errors.Is(err, orders.ErrBodyTooLarge) {
		orders.WriteResponse(w, gatewayAnswer(http.StatusRequestEntityTooLarge, "Request Entity Too Large"), log)
		return
	}
	if err != nil {
		orders.WriteResponse(w, gatewayAnswer(http.StatusBadRequest, "Bad Request"), log)
		return
	}
	for k, v := range params {
		if u, err := url.PathUnescape(v); err == nil {
			params[k] = u
		}
	}
	ev := orders.Event(r, body, routeKey, params, newRequestID(), time.Now())
	ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
		JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims.Claims, Scopes: claims.Scopes},
	}
	resp, err := f.invoke(r.Context(), ev)
	switch {
	case errors.Is(err, errNoSandbox):
		resp = gatewayAnswer(http.StatusTooManyRequests, "Too Many Requests")
	case err != nil:
		log.Error("lambdarie: function error", "route", routeKey, "error", err.Error())
		resp = gatewayAnswer(http.StatusInternalServerError, "Internal Server Error")
	}
	orders.WriteResponse(w, resp, log)
}

func (f *Front) authorize(header string) (Claims, error) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Claims{}, ErrToken
	}
	return f.Authorizer.Verify(strings.TrimSpace(token))
}

// FunctionError is invoke's error for an invocation that did not return a
// payload 2.0 response: the function returned an error, crashed, timed
// out or failed to initialise.
type FunctionError struct {
	Status int    // the emulator's HTTP status
	Body   string // what it answered, cut to 500 bytes
}

func (e *FunctionError) Error() string {
	return "lambdarie: function error: emulator answered " + http.StatusText(e.Status) + ": " + e.Body
}

func (f *Front) invoke(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	var i int
	select {
	case i = <-f.free:
	default:
		return events.APIGatewayV2HTTPResponse{}, errNoSandbox
	}
	defer func() { f.free <- i }()
	f.mu.Lock()
	f.calls[i]++
	f.mu.Unlock()
	payload, err := json.Marshal(ev)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 35 * time.Second
	}
	// As in Lambda, a client hanging up does not end the invocation.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	status, out, err := f.Sandboxes[i].Call(ctx, payload)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return Response(status, out)
}

// Response maps what the emulator answered for an invocation to the
// payload 2.0 response API Gateway makes of it: a JSON object with a
// statusCode is the response; a JSON object with errorType or
// errorMessage, a non-200 status, or anything else that is not JSON
// (the emulator's "Task timed out") is a *FunctionError; other JSON is
// the body of a 200 (payload 2.0's simple responses).
func Response(status int, out []byte) (events.APIGatewayV2HTTPResponse, error) {
	fnErr := &FunctionError{Status: status, Body: string(out[:min(len(out), 500)])}
	if status != http.StatusOK {
		return events.APIGatewayV2HTTPResponse{}, fnErr
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(out, &probe); err != nil {
		if json.Valid(out) {
			return events.APIGatewayV2HTTPResponse{StatusCode: 200,
				Headers: map[string]string{"Content-Type": "application/json"}, Body: string(out)}, nil
		}
		return events.APIGatewayV2HTTPResponse{}, fnErr
	}
	if _, ok := probe["statusCode"]; !ok {
		if _, e1 := probe["errorType"]; e1 {
			return events.APIGatewayV2HTTPResponse{}, fnErr
		}
		if _, e2 := probe["errorMessage"]; e2 {
			return events.APIGatewayV2HTTPResponse{}, fnErr
		}
		return events.APIGatewayV2HTTPResponse{StatusCode: 200,
			Headers: map[string]string{"Content-Type": "application/json"}, Body: string(out)}, nil
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return events.APIGatewayV2HTTPResponse{}, fnErr
	}
	return resp, nil
}
