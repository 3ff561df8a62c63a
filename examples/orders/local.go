package orders

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Local stand-in values of the API Gateway request context.
const (
	LocalAccountID = "123456789012"
	LocalAPIID     = "local"
	// MaxLocalBody is API Gateway's payload limit, 10 MB. A deployed
	// function receives less: Lambda takes an event of at most 6 MB
	// (6,291,456 bytes, the whole event JSON, a binary body
	// base64-encoded), which the local server does not enforce.
	MaxLocalBody = 10 << 20
	// DefaultLocalTimeout is the deadline of each local invocation: the
	// function's Timeout in template.yaml, under API Gateway's 30 s.
	DefaultLocalTimeout = 29 * time.Second
	// DefaultLocalConcurrency is how many requests Local serves at once;
	// more get 429 at once, as from API Gateway's throttling. With
	// MaxLocalBody it bounds the bodies held in memory: 8 × 10 MB.
	DefaultLocalConcurrency = 8
)

// Connection limits of NewLocalServer.
const (
	// LocalReadHeaderTimeout bounds reading a request's headers.
	LocalReadHeaderTimeout = 10 * time.Second
	// LocalReadTimeout bounds reading a whole request, body included: a
	// 10 MB body needs about 350 KB/s.
	LocalReadTimeout = 30 * time.Second
	// LocalIdleTimeout closes a keep-alive connection idle this long.
	LocalIdleTimeout = 30 * time.Second
	// LocalMaxHeaderBytes bounds a request's headers (API Gateway's limit
	// is 10 KB per header value).
	LocalMaxHeaderBytes = 64 << 10
)

// NewLocalServer returns the http.Server of the local API: handler with
// the timeouts above, a write timeout of invocation (the handler's
// deadline) plus 10 s, and logs at Warn through logger.
func NewLocalServer(handler http.Handler, invocation time.Duration, logger *slog.Logger) *http.Server {
	if invocation <= 0 {
		invocation = DefaultLocalTimeout
	}
	if logger == nil {
		logger = slog.Default()
	}
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: LocalReadHeaderTimeout,
		ReadTimeout:       LocalReadTimeout,
		WriteTimeout:      invocation + 10*time.Second,
		IdleTimeout:       LocalIdleTimeout,
		MaxHeaderBytes:    LocalMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// Local serves an HTTP API handler over plain HTTP the way API Gateway
// (payload format 2.0) invokes it: each request becomes the
// events.APIGatewayV2HTTPRequest API Gateway would send, with a JWT
// authorizer block made by DevAuthorizer, and the handler's response
// becomes the HTTP response. The handler gets a context with a deadline
// (Timeout), as in Lambda, which a client hanging up does not cancel:
// in Lambda, the invocation runs on too.
type Local struct {
	// Handler is the function's handler, the one lambda.Start runs.
	Handler HandlerFunc
	// Timeout is each invocation's deadline. Zero: DefaultLocalTimeout.
	Timeout time.Duration
	// Logger receives failures. Nil: slog.Default().
	Logger *slog.Logger
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
	// Concurrency is how many requests are served at once; more get API
	// Gateway's throttling answer, 429, without their body being read.
	// Zero: DefaultLocalConcurrency.
	Concurrency int

	slotsOnce sync.Once
	slots     chan struct{}
}

// acquire takes a request slot, reporting false when all are taken.
func (l *Local) acquire() bool {
	l.slotsOnce.Do(func() {
		n := l.Concurrency
		if n <= 0 {
			n = DefaultLocalConcurrency
		}
		l.slots = make(chan struct{}, n)
	})
	select {
	case l.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (l *Local) release() { <-l.slots }

// ServeHTTP implements http.Handler.
func (l *Local) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now
	if l.Now != nil {
		now = l.Now
	}
	if !l.acquire() {
		// What API Gateway answers when it throttles a request.
		WriteResponse(w, events.APIGatewayV2HTTPResponse{StatusCode: http.StatusTooManyRequests,
			Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"message":"Too Many Requests"}`}, l.Logger)
		return
	}
	defer l.release()
	rid := newRequestID()
	rawPath := r.URL.EscapedPath()
	routeKey, params, ok := MatchRoute(r.Method, rawPath)
	if !ok {
		// What API Gateway answers, itself, for an unmatched route.
		WriteResponse(w, events.APIGatewayV2HTTPResponse{StatusCode: http.StatusNotFound,
			Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"message":"Not Found"}`}, l.Logger)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxLocalBody+1))
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > MaxLocalBody {
		resp := (&Problem{Type: TypePayloadTooLarge, Title: "Payload too large", Status: 413,
			Detail: "The body is larger than API Gateway's 10 MB limit."}).Response()
		resp.Headers[RequestIDHeader] = rid
		resp.Headers["Cache-Control"] = "no-store"
		WriteResponse(w, resp, l.Logger)
		return
	}
	for k, v := range params {
		if u, err := url.PathUnescape(v); err == nil {
			params[k] = u
		}
	}
	ev := Event(r, body, routeKey, params, rid, now())
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = DefaultLocalTimeout
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), timeout)
	defer cancel()
	resp, err := DevAuthorizer(l.Handler)(ctx, ev)
	if err != nil {
		// What API Gateway answers when the function fails.
		l.logger().ErrorContext(ctx, "local: handler error", "request_id", rid, "error", err.Error())
		resp = events.APIGatewayV2HTTPResponse{StatusCode: 500,
			Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"message":"Internal Server Error"}`}
	}
	WriteResponse(w, resp, l.Logger)
}

func (l *Local) logger() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.Default()
}

// Event returns the payload 2.0 event API Gateway sends for r, whose body
// was read into body, matched to routeKey with path parameters params:
// header names lower-cased, repeated headers and query parameters joined
// with commas, cookies moved to Cookies, and a body that is not text
// base64-encoded. It sets no authorizer (DevAuthorizer does).
func Event(r *http.Request, body []byte, routeKey string, params map[string]string, requestID string, now time.Time) events.APIGatewayV2HTTPRequest {
	headers := make(map[string]string, len(r.Header)+5)
	var cookies []string
	for name, vs := range r.Header {
		n := strings.ToLower(name)
		if n == "cookie" {
			for _, v := range vs {
				for _, c := range strings.Split(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[n] = strings.Join(vs, ",")
	}
	host := r.Host
	headers["host"] = host
	if len(body) > 0 {
		headers["content-length"] = strconv.Itoa(len(body))
	}
	sourceIP, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		sourceIP = r.RemoteAddr
	}
	headers["x-forwarded-for"] = sourceIP
	headers["x-forwarded-proto"] = "http"
	if _, port, err := net.SplitHostPort(host); err == nil {
		headers["x-forwarded-port"] = port
	}
	var query map[string]string
	if q := r.URL.Query(); len(q) > 0 {
		query = make(map[string]string, len(q))
		for k, vs := range q {
			query[k] = strings.Join(vs, ",")
		}
	}
	domainPrefix := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		domainPrefix = h
	}
	domainPrefix, _, _ = strings.Cut(domainPrefix, ".")
	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              routeKey,
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     routeKey,
			AccountID:    LocalAccountID,
			Stage:        "$default",
			RequestID:    requestID,
			APIID:        LocalAPIID,
			DomainName:   host,
			DomainPrefix: domainPrefix,
			Time:         now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.EscapedPath(),
				Protocol:  r.Proto,
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		if isText(headers["content-type"]) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}

// isText reports whether API Gateway passes a body of this media type as
// text; it base64-encodes all others (form posts and untyped bodies too).
func isText(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"),
		mt == "application/json", strings.HasSuffix(mt, "+json"),
		mt == "application/xml", strings.HasSuffix(mt, "+xml"),
		mt == "application/javascript", mt == "application/graphql":
		return true
	}
	return false
}

// WriteResponse writes a payload 2.0 response as API Gateway does:
// Headers, Cookies as Set-Cookie lines, and a base64 body decoded.
// MultiValueHeaders is not part of payload 2.0 and is ignored, as API
// Gateway ignores it. A response without a status is API Gateway's 500.
func WriteResponse(w http.ResponseWriter, resp events.APIGatewayV2HTTPResponse, logger *slog.Logger) {
	h := w.Header()
	names := make([]string, 0, len(resp.Headers))
	for k := range resp.Headers {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		h.Set(k, resp.Headers[k])
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			resp.StatusCode = 0
		}
		body = b
	}
	if resp.StatusCode < 100 || resp.StatusCode > 999 {
		if logger == nil {
			logger = slog.Default()
		}
		logger.Error("local: malformed Lambda response", "error", errors.New("bad status or base64 body").Error())
		h.Set("Content-Type", "application/json")
		resp.StatusCode, body = 500, []byte(`{"message":"Internal Server Error"}`)
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// newRequestID returns an ID shaped like API Gateway's requestId.
func newRequestID() string {
	b := make([]byte, 11)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
