package orders

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
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
	// DefaultLocalConcurrency is how many invocations Local runs at once,
	// standing for the function's concurrency (the sandboxes Lambda runs
	// it in at once); more get 429 at once, as from API Gateway's
	// throttling. With MaxLocalBody it bounds the bodies the running
	// handlers hold: 64 events of at most 10 MB (13.4 MB base64-encoded).
	DefaultLocalConcurrency = 64
	// EnvLocalConcurrency sets cmd/local's -concurrency default.
	EnvLocalConcurrency = "ORDERS_LOCAL_CONCURRENCY"
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
	// Concurrency is how many invocations run at once; more get API
	// Gateway's throttling answer, 429. A slot is taken once the body has
	// been read, so a slow sender holds none. Zero: DefaultLocalConcurrency.
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
	rid := newRequestID()
	routeKey, params, ok := MatchRoute(r.Method, r.URL.EscapedPath())
	if !ok {
		// What API Gateway answers, itself, for an unmatched route.
		WriteResponse(w, events.APIGatewayV2HTTPResponse{StatusCode: http.StatusNotFound,
			Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"message":"Not Found"}`}, l.Logger)
		return
	}
	// The body is read before a slot is taken: a client sending slowly
	// holds its connection, never an invocation.
	body, err := ReadBody(r)
	if errors.Is(err, ErrBodyTooLarge) {
		resp := (&Problem{Type: TypePayloadTooLarge, Title: "Payload too large", Status: 413,
			Detail: "The body is larger than API Gateway's 10 MB limit."}).Response()
		resp.Headers[RequestIDHeader] = rid
		resp.Headers["Cache-Control"] = "no-store"
		WriteResponse(w, resp, l.Logger)
		return
	}
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !l.acquire() {
		// What API Gateway answers when it throttles a request.
		WriteResponse(w, events.APIGatewayV2HTTPResponse{StatusCode: http.StatusTooManyRequests,
			Headers: map[string]string{"Content-Type": "application/json"}, Body: `{"message":"Too Many Requests"}`}, l.Logger)
		return
	}
	defer l.release()
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

// ErrBodyTooLarge is ReadBody's error for a body over MaxLocalBody.
var ErrBodyTooLarge = errors.New("orders: body larger than 10 MB")

// Body is a request body as an API Gateway event carries it.
type Body struct {
	// Text is the body as the event's body field: the bytes themselves,
	// or their base64 encoding when Base64 is set.
	Text string
	// Base64 is the event's isBase64Encoded.
	Base64 bool
	// Len is the body's length in bytes, before any encoding.
	Len int
}

// bodyChunk is the size of the pieces ReadBody reads a body in.
const bodyChunk = 256 << 10

// ReadBody reads r's body, at most MaxLocalBody bytes (more, or a larger
// Content-Length, is ErrBodyTooLarge), into the form API Gateway passes
// it: as text for a textual Content-Type (isText), else base64-encoded.
// Memory follows what has arrived (pieces of 256 KB, so a slow sender
// costs what it has sent, not what it announced), and the event's
// string is made once, at its exact size: a body costs its size twice
// while read, 2.4 times when base64-encoded.
func ReadBody(r *http.Request) (Body, error) {
	if r.ContentLength > MaxLocalBody {
		return Body{}, ErrBodyTooLarge
	}
	var chunks [][]byte
	n := 0
	src := io.LimitReader(r.Body, MaxLocalBody+1)
	for {
		size := bodyChunk
		if r.ContentLength >= 0 {
			// A declared length: the last piece is cut to fit, and one byte
			// more tells a body that lied about it.
			size = min(bodyChunk, int(r.ContentLength)-n+1)
		}
		c := make([]byte, size)
		m, err := io.ReadFull(src, c)
		n += m
		if m > 0 {
			chunks = append(chunks, c[:m])
		}
		if n > MaxLocalBody {
			return Body{}, ErrBodyTooLarge
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return Body{}, err
		}
	}
	b := Body{Len: n}
	if n == 0 {
		return b, nil
	}
	var sb strings.Builder
	if isText(r.Header.Get("Content-Type")) {
		sb.Grow(n)
		for _, c := range chunks {
			sb.Write(c)
		}
	} else {
		b.Base64 = true
		sb.Grow(base64.StdEncoding.EncodedLen(n))
		enc := base64.NewEncoder(base64.StdEncoding, &sb)
		for _, c := range chunks {
			_, _ = enc.Write(c)
		}
		_ = enc.Close()
	}
	b.Text = sb.String()
	return b, nil
}

func (l *Local) logger() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.Default()
}

// Event returns the payload 2.0 event API Gateway sends for r, whose body
// ReadBody read, matched to routeKey with path parameters params: header
// names lower-cased, repeated headers and query parameters joined with
// commas, cookies moved to Cookies, and the path decoded (rawPath and
// requestContext.http.path), as an HTTP API delivers it: /orders/%31 is
// /orders/1. It sets no authorizer (DevAuthorizer does).
func Event(r *http.Request, body Body, routeKey string, params map[string]string, requestID string, now time.Time) events.APIGatewayV2HTTPRequest {
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
	if body.Len > 0 {
		headers["content-length"] = strconv.Itoa(body.Len)
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
		RawPath:               r.URL.Path,
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
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	ev.Body, ev.IsBase64Encoded = body.Text, body.Base64
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
	for _, k := range slices.Sorted(maps.Keys(resp.Headers)) {
		h.Set(k, resp.Headers[k])
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	// A text body is written as is, a base64 one decoded once: no copy
	// beyond that.
	body := resp.Body
	var decoded []byte
	if resp.IsBase64Encoded {
		b, err := decodeBase64(resp.Body)
		if err != nil {
			resp.StatusCode = 0
		}
		decoded = b
	}
	if resp.StatusCode < 100 || resp.StatusCode > 999 {
		if logger == nil {
			logger = slog.Default()
		}
		logger.Error("local: malformed Lambda response", "error", errors.New("bad status or base64 body").Error())
		h.Set("Content-Type", "application/json")
		resp.StatusCode, body, decoded, resp.IsBase64Encoded = 500, `{"message":"Internal Server Error"}`, nil, false
	}
	if resp.IsBase64Encoded {
		h.Set("Content-Length", strconv.Itoa(len(decoded)))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(decoded)
		return
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	_, _ = io.WriteString(w, body)
}

// decodeBase64 decodes standard base64 into one buffer, without copying s.
func decodeBase64(s string) ([]byte, error) {
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	dec := base64.NewDecoder(base64.StdEncoding, strings.NewReader(s))
	n, err := io.ReadFull(dec, b)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return b[:n], nil
	case err != nil:
		return nil, err
	}
	// b is full: anything after it is an error.
	if m, err := dec.Read(make([]byte, 1)); m > 0 || err != io.EOF {
		return nil, errors.New("local: base64 body longer than its decoded length")
	}
	return b, nil
}

// newRequestID returns an ID shaped like API Gateway's requestId.
func newRequestID() string {
	b := make([]byte, 11)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
