// Package httpmw is net/http middleware that makes POST and PATCH handlers
// safe to retry. A request that carries an Idempotency-Key runs at most
// once per (tenant, operation, key). Its retries get the first response
// back, byte for byte, marked Idempotent-Replayed: true. Use it behind the
// Lambda Web Adapter or aws-lambda-go-api-proxy, or in a container. The
// semantics are those of package lambda/apigw; the settings and problem
// types are package httpguard's.
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
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpguard"
	"github.com/idemkit/idemkit/internal/adapter"
	"github.com/idemkit/idemkit/internal/httpheader"
)

// DefaultMaxBodyBytes is the largest guarded request body read when
// Config.MaxBodyBytes is zero: 6 MiB, the Lambda request payload limit.
const DefaultMaxBodyBytes = 6 << 20

// DefaultMaxResponseBytes is the most of a guarded response body buffered
// when Config.MaxResponseBytes is zero: 16 MiB, the largest body the
// DynamoDB store keeps (it stores a longer one without its body).
const DefaultMaxResponseBytes = 16 << 20

// Config configures New. It holds the tenant, the settings every adapter
// shares (httpguard.Settings), and the bounds of what the middleware
// buffers. A route template is the ServeMux pattern that matched
// (Request.Pattern), when the middleware wraps a handler registered on the
// mux. A request's operation uses its escaped path, normalized as
// docs/FINGERPRINT.md says, so "/orders/%31" and "/orders/1" are one.
type Config struct {
	// Tenant returns the authenticated caller of r, from the session or
	// token your authentication middleware verified, as idemkit.TenantFunc
	// says. Its ctx is r's context. Required: New panics without it. An
	// empty result or an error fails the request closed (500
	// tenant-missing).
	Tenant idemkit.TenantFunc[*http.Request]

	httpguard.Settings

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
	a := adapter.MustNew("httpmw", g, cfg.Settings, cfg.Tenant != nil)
	limit := cfg.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	respLimit := cfg.MaxResponseBytes
	if respLimit <= 0 {
		respLimit = DefaultMaxResponseBytes
	}
	codec := adapter.Codec[*response]{
		Snapshot: func(r *response) *idemkit.Snapshot {
			if r.streamed {
				return &idemkit.Snapshot{Status: r.status, Header: a.FilterSent(r.sent), Omitted: true}
			}
			return &idemkit.Snapshot{Status: r.status, Header: a.FilterSent(r.sent), Body: r.body.Bytes()}
		},
		Replay: func(s *idemkit.Snapshot) *response {
			r := &response{status: s.Status, sent: s.Header.Clone()}
			if r.sent == nil {
				r.sent = http.Header{}
			}
			r.sent.Set(adapter.ReplayedHeader, "true")
			body := s.Body
			if s.Base64 {
				// Stored by a Lambda adapter from a base64 proxy response.
				if b, err := base64.StdEncoding.DecodeString(string(s.Body)); err == nil {
					body = b
				}
			}
			r.body = *bytes.NewBuffer(body)
			return r
		},
		Fresh: func(r *response) *response {
			// sent is the recorder's own copy of the handler's header.
			for k := range r.sent {
				if httpheader.EqualFold(k, adapter.ReplayedHeader) {
					delete(r.sent, k)
				}
			}
			return r
		},
		Respond: respond,
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if !a.Guarded(req.Method) {
				next.ServeHTTP(w, req)
				return
			}
			r := adapter.Request{
				Method:      req.Method,
				Path:        adapter.NormalizePath(req.URL.EscapedPath()),
				Template:    template(req.Pattern),
				Key:         req.Header.Values(a.Header()),
				ContentType: req.Header.Get("Content-Type"),
				RawQuery:    req.URL.RawQuery,
				Header:      func() map[string][]string { return req.Header },
			}
			if cfg.Tenant != nil {
				r.Tenant = func(ctx context.Context) (string, error) { return cfg.Tenant(ctx, req) }
			}
			// Decide first: a request that is not guarded reaches next
			// with its body unread, whatever its size.
			if a.Unguarded(&r) {
				next.ServeHTTP(w, req)
				return
			}
			body, err := readBody(req, limit)
			if err != nil {
				p := adapter.BodyInvalid(err)
				var mbe *http.MaxBytesError
				switch {
				case errors.As(err, &mbe):
					p = adapter.BodyTooLarge(mbe.Limit) // an outer http.MaxBytesReader's
				case errors.Is(err, ErrBodyTooLarge):
					p = adapter.BodyTooLarge(limit)
				}
				a.Refuse(req.Context(), &r, err)
				respond(a.ProblemResponse(req.Context(), p)).writeTo(w)
				return
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			r.Body = body
			c := codec
			c.Pass = func(context.Context) (*response, error) {
				next.ServeHTTP(w, req)
				return nil, nil
			}
			var (
				panicked any
				rec      *response
			)
			resp, err := adapter.Serve(req.Context(), a, &r, c, func(ctx context.Context) (resp *response, err error) {
				rec = &response{header: http.Header{}, w: w, limit: respLimit}
				failed := &failure{}
				defer func() {
					// A handler that said its outcome is unknown (Fail with
					// ErrOutcomeUnknown) and then panicked keeps its key:
					// the panic must not free it for a second run. It
					// reaches net/http once the key is kept.
					if errors.Is(failed.err, idemkit.ErrOutcomeUnknown) {
						if p := recover(); p != nil {
							panicked, resp, err = p, nil, failed.err
						}
					}
				}()
				next.ServeHTTP(rec, req.WithContext(context.WithValue(ctx, failureKey{}, failed)))
				if failed.err != nil {
					return nil, failed.err
				}
				if err := stoppedUnwritten(ctx, rec); err != nil {
					return nil, err
				}
				rec.finish()
				return rec, nil
			})
			if panicked != nil {
				panic(panicked)
			}
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
				resp = respond(a.ProblemResponse(req.Context(), adapter.HandlerFailed()))
			}
			if resp != nil {
				resp.writeTo(w)
			}
		})
	}
}

type failureKey struct{}

// ErrWroteNothing is wrapped, with idemkit.ErrOutcomeUnknown, by the
// error reported for a guarded handler that returned without writing
// anything, and without calling Fail, after its request's context was
// done. The handler may have stopped before acting, or gone on and meant
// an implicit 200. So the key is kept, rather than run again or answered
// with a 200 that may never have been meant.
var ErrWroteNothing = errors.New("httpmw: the handler wrote nothing after its request's context was done")

// stoppedUnwritten returns the outcome of a handler that wrote nothing,
// called Fail with nothing, and whose context ctx is done: the lease lost
// (idemkit.ErrLeaseLost, under Takeover) frees the key; any other end of
// the context (the client hung up, a Shutdown cut short) keeps it as an
// unknown outcome. It returns nil for every other handler.
func stoppedUnwritten(ctx context.Context, rec *response) error {
	if rec.sent != nil || rec.body.Len() > 0 || ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	if errors.Is(cause, idemkit.ErrLeaseLost) {
		return cause
	}
	return fmt.Errorf("%w: %w (%w)", idemkit.ErrOutcomeUnknown, ErrWroteNothing, cause)
}

// failure is where Fail leaves a guarded handler's error.
type failure struct{ err error }

// Fail ends the guarded request that ctx (the request's context) belongs to
// with err instead of the response the handler wrote, which is discarded.
// It is the net/http counterpart of a Lambda handler returning an error.
//
//   - When err wraps idemkit.ErrOutcomeUnknown, the key is kept
//     (indeterminate) and the client gets 503 outcome-unknown, so the
//     request never runs twice.
//   - For any other err, the key is freed and the client gets 500
//     handler-failed, so a retry runs the handler again.
//
// Call it before returning from the handler. It reports false, doing
// nothing, when ctx is not a guarded request's.
func Fail(ctx context.Context, err error) bool {
	f, ok := ctx.Value(failureKey{}).(*failure)
	if !ok || err == nil {
		return false
	}
	f.err = err
	return true
}

// ErrBodyTooLarge is the error reported to the Observer for a guarded
// request whose body is over MaxBodyBytes, or over the limit of an outer
// http.MaxBytesReader (answered 413 body-too-large).
var ErrBodyTooLarge = errors.New("httpmw: request body too large")

// bodyFirstRead bounds what readBody sets aside before a body's bytes
// arrive: a request that declares a large length and sends little holds
// this much at most, not the declared length. A body up to it is read
// into one buffer of its size; a longer one into this much first, then
// one buffer of the declared length.
const bodyFirstRead = 64 << 10

// readBody reads the whole body, at most limit bytes.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return []byte{}, nil
	}
	defer r.Body.Close()
	if r.ContentLength > limit {
		return nil, ErrBodyTooLarge
	}
	var buf bytes.Buffer
	src := io.LimitReader(r.Body, limit+1)
	// ReadFrom wants MinRead bytes free before each read: with only the
	// expected length free it would grow the buffer to twice the body
	// before seeing the end.
	if n := r.ContentLength; n > 0 {
		first := min(n, bodyFirstRead)
		buf.Grow(int(first) + bytes.MinRead)
		if n > first {
			if _, err := buf.ReadFrom(io.LimitReader(src, first)); err != nil {
				return nil, bodyError(err)
			}
			if int64(buf.Len()) == first {
				buf.Grow(int(n-first) + bytes.MinRead)
			}
		}
	}
	if _, err := buf.ReadFrom(src); err != nil {
		return nil, bodyError(err)
	}
	if int64(buf.Len()) > limit {
		return nil, ErrBodyTooLarge
	}
	return buf.Bytes(), nil
}

// bodyError is the error of a failed body read: ErrBodyTooLarge for the
// limit of an outer http.MaxBytesReader.
func bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return fmt.Errorf("%w: %w", ErrBodyTooLarge, err)
	}
	return err
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

// respond returns the response recorded for resp.
func respond(resp httpguard.Response) *response {
	r := &response{status: resp.Status, sent: resp.Header}
	if r.sent == nil {
		r.sent = http.Header{}
	}
	r.body = *bytes.NewBuffer(resp.Body)
	return r
}

// response records a guarded handler's response.
type response struct {
	header  http.Header // what the handler sets
	sent    http.Header // header at WriteHeader
	status  int
	body    bytes.Buffer
	trailer http.Header // trailers, canonical names; never stored

	// A handler's recorder streams to w once its body would pass limit
	// bytes: streamed is then set and body is empty.
	w        http.ResponseWriter
	limit    int64
	streamed bool
}

func (r *response) Header() http.Header { return r.header }

func (r *response) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if r.sent != nil {
		return
	}
	if code < 200 {
		return // informational responses are not recorded
	}
	r.status = code
	r.sent = r.header.Clone()
}

func (r *response) Write(p []byte) (int, error) {
	if r.sent == nil {
		r.WriteHeader(http.StatusOK)
	}
	if !r.streamed && r.w != nil && int64(r.body.Len())+int64(len(p)) > r.limit {
		if err := r.stream(); err != nil {
			return 0, err
		}
	}
	if r.streamed {
		return r.w.Write(p)
	}
	return r.body.Write(p)
}

// stream sends the response recorded so far to r.w, as the client gets a
// fresh response (without the ReplayedHeader), and makes later writes pass
// through: its body is over the limit, so it is not stored.
func (r *response) stream() error {
	r.streamed = true
	h := r.w.Header()
	for k, vs := range r.sent {
		if !httpheader.EqualFold(k, adapter.ReplayedHeader) {
			h[k] = vs
		}
	}
	r.w.WriteHeader(r.status)
	_, err := r.w.Write(r.body.Bytes())
	r.body = bytes.Buffer{}
	return err
}

// sendTrailers sets the trailers of a streamed response on r.w, which
// sends them after the body: those its header declared under their
// names, the others with http.TrailerPrefix.
func (r *response) sendTrailers() {
	h := r.w.Header()
	for name, vs := range r.trailer {
		if declared(h, name) {
			h[name] = vs
		} else {
			h[http.TrailerPrefix+name] = vs
		}
	}
}

// finish records an implicit 200 for a handler that wrote nothing, and the
// trailers the handler set: the names its Trailer header declared and
// those with http.TrailerPrefix, as net/http sends them after the body.
func (r *response) finish() {
	if r.sent == nil {
		r.WriteHeader(http.StatusOK)
	}
	for _, v := range r.sent["Trailer"] {
		for _, name := range strings.Split(v, ",") {
			name = http.CanonicalHeaderKey(strings.TrimSpace(name))
			if vs, ok := r.header[name]; ok && name != "" {
				r.addTrailer(name, vs)
			}
		}
	}
	for k, vs := range r.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok && name != "" {
			r.addTrailer(http.CanonicalHeaderKey(name), vs)
		}
	}
}

func (r *response) addTrailer(name string, vs []string) {
	if r.trailer == nil {
		r.trailer = http.Header{}
	}
	r.trailer[name] = vs
}

func (r *response) writeTo(w http.ResponseWriter) {
	h := w.Header()
	for k, vs := range r.sent {
		h[k] = vs
	}
	// Trailers are declared, so that the body is sent chunked with them
	// after it, and then without a Content-Length.
	for name := range r.trailer {
		if !declared(h, name) {
			h.Add("Trailer", name)
		}
	}
	if r.body.Len() > 0 && h.Get("Trailer") == "" && h.Get("Content-Length") == "" && h.Get("Transfer-Encoding") == "" {
		h.Set("Content-Length", strconv.Itoa(r.body.Len()))
	}
	w.WriteHeader(r.status)
	w.Write(r.body.Bytes())
	for name, vs := range r.trailer {
		h[name] = vs
	}
}

// declared reports whether h's Trailer header names name.
func declared(h http.Header, name string) bool {
	for _, v := range h["Trailer"] {
		for _, n := range strings.Split(v, ",") {
			if httpheader.EqualFold(strings.TrimSpace(n), name) {
				return true
			}
		}
	}
	return false
}
