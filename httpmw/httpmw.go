// Package httpmw is net/http middleware that makes POST and PATCH handlers
// safe to retry. A request that carries an Idempotency-Key runs at most
// once per (tenant, operation, key). Its retries get the first response
// back, byte for byte, marked Idempotent-Replayed: true. Use it behind the
// Lambda Web Adapter or aws-lambda-go-api-proxy, or in a container. The
// semantics are those of package lambda/apigw; the settings are package
// httpconfig's, the problem types package httpproblem's.
//
//	g, _ := idemkit.New(idemkit.Config{Store: store})
//	mw := httpmw.New(g, httpmw.Config{Tenant: tenantFromAuth})
//	http.ListenAndServe(":8080", mw(mux))
//
// Place it after authentication and rate limiting, before business logic.
//
// # Responses
//
// A guarded response is buffered and sent once its outcome is stored, so a
// client that got it and retries is always replayed. Guarded handlers
// therefore cannot stream; the writer is not an http.Flusher. Trailers
// reach the first response, after its body, but are not stored, so a
// replay has none. Requests that are not guarded reach the handler with the
// original writer.
//
// A guarded response whose body grows past MaxResponseBytes (16 MiB by
// default, the largest body the DynamoDB store keeps) is not buffered
// further. What the handler wrote goes on to the client, and its later
// writes pass straight through, so memory stays bounded whatever the
// response. Its record completes without the body (Snapshot.Omitted), as a
// store would keep it, and a retry gets 410 response-not-stored with the
// first status and Location. Such a response reaches the client before its
// outcome is stored, so a retry sent at once may get 409 in-flight. A
// handler that calls Fail after that point cannot take back what was sent.
// Its connection is aborted (http.ErrAbortHandler), so the client sees a
// cut response, never a whole one.
//
// # Cancellation, failures and panics
//
// A net/http request has no deadline, so its lease is renewed while its
// handler runs. A client that hangs up, or a Shutdown cut short, cancels
// the request's context without freeing the key. A handler that goes on
// stores its outcome. One that stops should end with Fail. One that
// returns having written nothing after its context was cancelled keeps the
// key as an unknown outcome (ErrWroteNothing), since nothing says whether
// it acted. Under idemkit.Takeover, a handler whose lease is lost has its
// context cancelled with idemkit.ErrLeaseLost, and returning then without
// writing frees the key.
//
// A handler that panics frees its key, unless it had called Fail with
// idemkit.ErrOutcomeUnknown, which keeps it. Either way its panic reaches
// net/http unchanged (http.ErrAbortHandler included), which closes the
// connection without a response.
//
// # Request bodies
//
// A guarded request's body is read whole before the handler runs, into one
// buffer of its declared Content-Length (up to MaxBodyBytes). For a body
// over 64 KB, that buffer is set aside only once the first 64 KB have
// arrived. So a client that declares a large body and sends little holds
// 64 KB, not the declared length. Give the server a ReadTimeout all the
// same, so that a slow sender cannot hold even that for long.
package httpmw

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/internal/adapter"
	"github.com/idemkit/idemkit/internal/setting"
	"github.com/idemkit/idemkit/tenant"
)

// DefaultMaxBodyBytes is the largest guarded request body read when
// Config.MaxBodyBytes is zero: 6 MiB, the Lambda request payload limit.
const DefaultMaxBodyBytes = 6 << 20

// DefaultMaxResponseBytes is the most of a guarded response body buffered
// when Config.MaxResponseBytes is zero: 16 MiB, the largest body the
// DynamoDB store keeps (it stores a longer one without its body).
const DefaultMaxResponseBytes = 16 << 20

// Config configures New. It holds the tenant, the settings every adapter
// shares (httpconfig.Settings), and the bounds of what the middleware
// buffers. A route template is the ServeMux pattern that matched
// (Request.Pattern), when the middleware wraps a handler registered on the
// mux. A request's operation uses its escaped path, normalized as
// docs/FINGERPRINT.md says, so "/orders/%31" and "/orders/1" are one.
type Config struct {
	// Tenant returns the authenticated caller of r, from the session or
	// token your authentication middleware verified, as tenant.Func
	// says. Its ctx is r's context. Required: New panics without it. An
	// empty result or an error fails the request closed (500
	// tenant-missing).
	Tenant tenant.Func[*http.Request]

	httpconfig.Settings

	// MaxBodyBytes bounds a guarded request's body. A larger one gets a 413
	// problem, reported to the Observer as ErrBodyTooLarge, and so does a
	// body cut by an outer http.MaxBytesReader. A request that is not guarded
	// (its method, or no key on a key-optional route) is passed on with its
	// body unread, whatever its size. Zero: DefaultMaxBodyBytes.
	MaxBodyBytes int64

	// MaxResponseBytes bounds the guarded response body buffered until its
	// outcome is stored. Past it the response goes on to the client as it
	// is written, and its record completes without the body
	// (Snapshot.Omitted). A retry then gets 410 response-not-stored. Zero:
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64
}

// New returns middleware that guards the requests of the handler it wraps.
// It panics when g is nil, when cfg has no Tenant, or when a setting
// cannot be used.
func New(g *idemkit.Guard, cfg Config) func(http.Handler) http.Handler {
	m := &middleware{a: adapter.MustNew("httpmw", g, cfg.Settings, cfg.Tenant != nil), tenant: cfg.Tenant,
		limit: setting.Or(cfg.MaxBodyBytes, DefaultMaxBodyBytes), respLimit: setting.Or(cfg.MaxResponseBytes, DefaultMaxResponseBytes)}
	m.responder = newResponder(m.a)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { m.serve(next, w, req) })
	}
}

// middleware is what New made of its Config, shared by every handler it
// wraps.
type middleware struct {
	a         *adapter.Adapter
	tenant    tenant.Func[*http.Request]
	limit     int64 // the largest request body read
	respLimit int64 // the most of a response body buffered
	responder adapter.Responder[*response]
}

// serve passes req on to next unguarded, with its body unread, when its
// method or missing key says so; otherwise it reads the body and serves
// req under the guard.
func (m *middleware) serve(next http.Handler, w http.ResponseWriter, req *http.Request) {
	if !m.a.Guarded(req.Method) {
		next.ServeHTTP(w, req)
		return
	}
	r := m.request(req)
	// Decide first: a request that is not guarded reaches next
	// with its body unread, whatever its size.
	if m.a.Unguarded(&r) {
		next.ServeHTTP(w, req)
		return
	}
	body, err := readBody(req, m.limit)
	if err != nil {
		m.refuseBody(w, req, &r, err)
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	r.Body = body
	m.serveGuarded(next, w, req, &r)
}

// request returns the adapter's view of req, without its body: the
// operation's path and template, the keys, and the tenant from
// Config.Tenant.
func (m *middleware) request(req *http.Request) adapter.Request {
	r := adapter.Request{
		Method:      req.Method,
		Path:        adapter.NormalizePath(req.URL.EscapedPath()),
		Template:    template(req.Pattern),
		Key:         req.Header.Values(m.a.Header()),
		ContentType: req.Header.Get("Content-Type"),
		RawQuery:    req.URL.RawQuery,
		Header:      func() map[string][]string { return req.Header },
	}
	if m.tenant != nil {
		r.Tenant = func(ctx context.Context) (string, error) { return m.tenant(ctx, req) }
	}
	return r
}

// refuseBody answers a guarded request whose body could not be read, err
// saying why: 413 for a body over a limit (ours, or an outer
// http.MaxBytesReader's), a body-invalid problem otherwise.
func (m *middleware) refuseBody(w http.ResponseWriter, req *http.Request, r *adapter.Request, err error) {
	p := adapter.BodyInvalid(err)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		p = adapter.BodyTooLarge(mbe.Limit) // an outer http.MaxBytesReader's
	case errors.Is(err, ErrBodyTooLarge):
		p = adapter.BodyTooLarge(m.limit)
	}
	m.a.Refuse(req.Context(), r, err)
	respond(m.a.ProblemResponse(req.Context(), p)).writeTo(w)
}

// serveGuarded runs next at most once for r, whose body req now holds,
// and sends the client the outcome; a panic of next reaches net/http once
// its key is settled.
func (m *middleware) serveGuarded(next http.Handler, w http.ResponseWriter, req *http.Request, r *adapter.Request) {
	c := m.responder
	c.Pass = func(context.Context) (*response, error) {
		next.ServeHTTP(w, req)
		return nil, nil
	}
	h := &handlerRun{next: next, w: w, req: req, limit: m.respLimit}
	resp, err := adapter.Serve(req.Context(), m.a, r, c, h.run)
	if h.panicked != nil {
		panic(h.panicked)
	}
	m.deliver(w, req, h.rec, resp, err)
}

// handlerRun is one guarded run of a handler: its recorder, and the panic
// held back while its key is kept.
type handlerRun struct {
	next     http.Handler
	w        http.ResponseWriter
	req      *http.Request
	limit    int64
	rec      *response // nil until the handler runs
	panicked any       // the panic of a handler that had failed with an unknown outcome
}

// run runs the handler with a recorder and returns its response, or the
// error it failed with (Fail, or a context done with nothing written).
func (h *handlerRun) run(ctx context.Context) (resp *response, err error) {
	h.rec = &response{header: http.Header{}, w: h.w, limit: h.limit}
	failed := &failure{}
	defer func() {
		// A handler that said its outcome is unknown (Fail with
		// ErrOutcomeUnknown) and then panicked keeps its key:
		// the panic must not free it for a second run. It
		// reaches net/http once the key is kept.
		if errors.Is(failed.err, idemkit.ErrOutcomeUnknown) {
			if p := recover(); p != nil {
				h.panicked, resp, err = p, nil, failed.err
			}
		}
	}()
	h.next.ServeHTTP(h.rec, h.req.WithContext(context.WithValue(ctx, failureKey{}, failed)))
	if failed.err != nil {
		return nil, failed.err
	}
	if err := stoppedUnwritten(ctx, h.rec); err != nil {
		return nil, err
	}
	h.rec.finish()
	return h.rec, nil
}

// deliver sends the client resp, the guard's answer (err its failure),
// given rec, the handler's recorder if it ran: a streamed response is
// ended with its trailers, or cut when the handler failed after it went
// out; a freed key's failure gets 500 handler-failed.
func (m *middleware) deliver(w http.ResponseWriter, req *http.Request, rec, resp *response, err error) {
	if rec != nil && rec.streamed {
		if resp != rec {
			// The handler failed (Fail) after part of its
			// response went out: the client must not take it
			// for a whole one.
			panic(http.ErrAbortHandler)
		}
		rec.sendTrailers()
		return
	}
	if resp == nil && err != nil {
		// The handler failed (Fail) and its key was freed: what it
		// wrote is dropped, so a retry runs it again.
		resp = respond(m.a.ProblemResponse(req.Context(), adapter.HandlerFailed()))
	}
	if resp != nil {
		resp.writeTo(w)
	}
}

// template returns the path of a ServeMux pattern ("POST /orders/{id}" ->
// "/orders/{id}"); a pattern ending in "/" or "{x...}" matches many paths
// and names no single operation.
func template(pattern string) string {
	if _, p, ok := strings.Cut(pattern, " "); ok {
		pattern = p
	}
	if strings.HasSuffix(pattern, "/") || strings.HasSuffix(pattern, "...}") {
		return ""
	}
	return pattern
}
