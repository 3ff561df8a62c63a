// Package adapter is the one implementation of the HTTP semantics every
// idemkit adapter shares: which requests are guarded, where the key and
// tenant come from, how the request is fingerprinted, what a response
// snapshot keeps, and which problem answers which guard error.
package adapter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/idemkey"
	"github.com/idemkit/idemkit/internal/httpheader"
	"github.com/idemkit/idemkit/internal/setting"
)

// DefaultHeader is the request header carrying the key.
const DefaultHeader = "Idempotency-Key"

// DefaultStoreRetryAfter is the Retry-After sent when the store is unavailable.
const DefaultStoreRetryAfter = time.Second

// ErrNoMethod is reported to the observer for an event without an HTTP
// method: an event of another shape than its wrapper's (a REST API event
// given to the HTTP API wrapper, a payload format version that does not
// match). It is refused with a 500 guard-failure problem, never run
// unguarded.
var ErrNoMethod = errors.New("idemkit: event has no HTTP method: the wrapper does not match the event source or its payload format version")

type route struct {
	optional bool
	fp       *fingerprint.Fingerprinter
	fpPath   *fingerprint.Fingerprinter // fp that also hashes the concrete path
	query    bool                       // fp reads query parameters
	headers  bool                       // fp reads headers
}

// Adapter is an httpconfig.Settings compiled and bound to an
// idemkit.Guard: the HTTP semantics every adapter (apigw, alb, httpmw)
// shares, which each feeds its requests and responses through Serve.
type Adapter struct {
	g          *idemkit.Guard
	methods    []string
	header     string
	keyOpts    idemkey.Options
	def        route
	routes     map[string]route
	template   bool
	replay     []string
	storeRetry time.Duration

	problemHook func(context.Context, httpproblem.Details) httpproblem.Response
	replayHook  func(context.Context, int, http.Header)
}

// New compiles o. It fails when g is nil or o cannot be used: a safe
// method, or one not an upper-case token, in Methods or a Routes key, a
// header that may never be replayed in ReplayHeaders, invalid fingerprint
// options.
func New(g *idemkit.Guard, o httpconfig.Settings) (*Adapter, error) {
	if g == nil {
		return nil, errors.New("nil *idemkit.Guard")
	}
	a := &Adapter{g: g, header: o.Header, keyOpts: idemkey.Options{MaxLen: o.MaxKeyLen},
		template: o.RouteTemplate, storeRetry: o.StoreRetryAfter,
		problemHook: o.ProblemResponse, replayHook: o.AdjustReplay}
	if a.header == "" {
		a.header = DefaultHeader
	}
	a.storeRetry = setting.Or(a.storeRetry, DefaultStoreRetryAfter)
	if o.MaxKeyLen < 0 {
		return nil, fmt.Errorf("negative MaxKeyLen %d", o.MaxKeyLen)
	}
	var err error
	if a.methods, err = guardedMethods(o.Methods); err != nil {
		return nil, err
	}
	if a.replay, err = allowList(o.ReplayHeaders); err != nil {
		return nil, err
	}
	if a.def, err = compileRoute(o.KeyOptional, &o.Fingerprint); err != nil {
		return nil, err
	}
	if a.routes, err = compileRoutes(o.Routes, &o.Fingerprint); err != nil {
		return nil, err
	}
	return a, nil
}

// guardedMethods returns the methods to guard: POST and PATCH when
// methods is nil, else methods themselves, each an upper-case token and
// none safe by definition, or an error naming the first that is not.
func guardedMethods(methods []string) ([]string, error) {
	if methods == nil {
		return []string{http.MethodPost, http.MethodPatch}, nil
	}
	var guarded []string
	for _, m := range methods {
		if err := checkMethod(m); err != nil {
			return nil, err
		}
		switch m {
		case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodConnect:
			return nil, fmt.Errorf("method %q cannot be guarded: it is safe by definition", m)
		}
		guarded = append(guarded, m)
	}
	return guarded, nil
}

// compileRoutes returns routes compiled, each without a Fingerprint of
// its own taking def, or an error naming a route whose key is not
// "METHOD /path" with an upper-case token or whose options cannot be
// used; nil for no routes.
func compileRoutes(routes map[string]httpconfig.Route, def *fingerprint.Options) (map[string]route, error) {
	if len(routes) == 0 {
		return nil, nil
	}
	compiled := make(map[string]route, len(routes))
	for name, r := range routes {
		m, _, ok := strings.Cut(name, " ")
		if !ok {
			return nil, fmt.Errorf("route %q: want \"METHOD /path\"", name)
		}
		if err := checkMethod(m); err != nil {
			return nil, fmt.Errorf("route %q: %w", name, err)
		}
		fo := r.Fingerprint
		if fo == nil {
			fo = def
		}
		cr, err := compileRoute(r.KeyOptional, fo)
		if err != nil {
			return nil, fmt.Errorf("route %q: %w", name, err)
		}
		compiled[name] = cr
	}
	return compiled, nil
}

// checkMethod refuses a configured method that is not an upper-case token.
// Methods are case-sensitive (RFC 9110, section 9.1): "post" is another
// method than POST, which no client means, so it is a configuration error,
// not a method to guard apart.
func checkMethod(m string) error {
	if m == "" {
		return errors.New("empty method")
	}
	for i := 0; i < len(m); i++ {
		switch c := m[i]; {
		case 'a' <= c && c <= 'z':
			return fmt.Errorf("method %q is not upper case: methods are case-sensitive (RFC 9110), so it would not name %q", m, strings.ToUpper(m))
		case !isTchar(c):
			return fmt.Errorf("method %q is not a token (RFC 9110): byte 0x%02x", m, c)
		}
	}
	return nil
}

// isTchar reports whether c may appear in a token (RFC 9110, section 5.6.2).
func isTchar(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func compileRoute(optional bool, o *fingerprint.Options) (route, error) {
	fp, err := fingerprint.New(*o)
	if err != nil {
		return route{}, err
	}
	withPath := *o
	withPath.Path = true
	fpPath, err := fingerprint.New(withPath)
	if err != nil {
		return route{}, err
	}
	return route{optional: optional, fp: fp, fpPath: fpPath, query: !o.IgnoreQuery, headers: len(o.Headers) > 0}, nil
}

// MustNew is New that panics, naming pkg, when o cannot be used or the
// adapter's Config names no tenant source (hasTenant false). Adapters
// call it when a handler is wrapped, at init, so a bad Config stops the
// function from starting instead of failing every request.
func MustNew(pkg string, g *idemkit.Guard, o httpconfig.Settings, hasTenant bool) *Adapter {
	a, err := New(g, o)
	if err == nil && !hasTenant {
		err = errors.New("the Tenant setting is nil: name the authenticated caller (a JWT claim, the authorizer's context, the API key, the IAM caller, your own function), or SingleTenant for an internal API")
	}
	if err != nil {
		panic(pkg + ": invalid Config: " + err.Error())
	}
	return a
}

// Header returns the request header name carrying the key.
func (a *Adapter) Header() string { return a.header }

// Guarded reports whether requests with this method are guarded: the
// guarded methods and their spellings in another case ("post" when POST
// is guarded). A method is case-sensitive (RFC 9110), so such a spelling
// is another method, with an operation of its own ("post /orders", never
// sharing a record with "POST /orders"); it is guarded all the same
// because a handler may fold the case of methods, as some routers do, and
// would then run it as a POST: unguarded, a retry would run it twice.
func (a *Adapter) Guarded(method string) bool {
	for _, m := range a.methods {
		if strings.EqualFold(m, method) {
			return true
		}
	}
	return false
}

// Request is one HTTP request as the shared logic sees it.
type Request struct {
	Method string
	// Path is the concrete request path.
	Path string
	// Template is the route template path ("/orders/{id}"), or "" when the
	// event has none.
	Template string
	// Key holds the values of the key header, in order.
	Key         []string
	ContentType string
	// Body is the body; BodyString is used when Body is nil.
	Body       []byte
	BodyString string
	Base64     bool
	// RawQuery is the query string as sent, read when Query is nil.
	RawQuery string
	// Query and Header return the request's query parameters and headers
	// for fingerprint options that name some. Nil: none.
	Query  func() map[string][]string
	Header func() map[string][]string
	// Tenant returns the request's tenant; "" or an error fails closed,
	// and the error, joined with idemkit.ErrTenantMissing, is reported to
	// the observer. Nil: no tenant.
	Tenant func(ctx context.Context) (string, error)
	// OtherShape, for an event without a method, says what the event is
	// and which wrapper takes it ("this is a REST API (v1) event: use
	// WrapV1"), when the adapter can tell. It is added to ErrNoMethod.
	OtherShape string
}

// Operation returns the operation of r: its method, exactly as sent
// ("post" is not "POST", RFC 9110), and its concrete path, or with
// RouteTemplate its route template. A greedy template ("{proxy+}",
// "$default") names no single operation, so the concrete path is used.
// Paths are compared byte for byte: "/orders/" and "/orders", or "/Orders"
// and "/orders", are distinct operations, as the routers see them. A front
// whose event carries the path as sent gives it through NormalizePath, so
// its percent-encoding spellings ("/orders/%31", "/orders/1") are one.
func (a *Adapter) Operation(r *Request) string {
	if t, ok := a.opTemplate(r); ok {
		return r.Method + " " + t
	}
	if len(r.Path) > httpconfig.MaxPathLen {
		// Refused (ErrPathTooLong): the operation is only reported.
		return r.Method + " " + Echo(r.Path)
	}
	return r.Method + " " + r.Path
}

// opTemplate returns the route template that names r's operation, if any.
// Such an operation covers many resources, so the concrete path is then
// part of the fingerprint.
func (a *Adapter) opTemplate(r *Request) (string, bool) {
	if a.template {
		if t := r.Template; t != "" && t != "$default" && !strings.Contains(t, "+}") {
			return t, true
		}
	}
	return "", false
}

// route returns the settings for r, whose method names a route exactly:
// "post /orders" has the default settings, not those of "POST /orders".
func (a *Adapter) route(r *Request) route {
	if a.routes == nil {
		return a.def
	}
	m := r.Method
	if r.Template != "" {
		if rt, ok := a.routes[m+" "+r.Template]; ok {
			return rt
		}
	}
	if rt, ok := a.routes[m+" "+r.Path]; ok {
		return rt
	}
	return a.def
}

// Unguarded reports whether r runs without the guard: its method is not
// guarded, or its route makes the key optional and r has none. It reads
// only r's method, path, template and key, so an adapter can decide before
// it reads the body.
func (a *Adapter) Unguarded(r *Request) bool {
	return !a.Guarded(r.Method) || (len(r.Key) == 0 && a.route(r).optional)
}

// Refuse reports to the observer a guarded request refused by the adapter
// itself (a body too large or unreadable), with the scope known so far: the
// operation, the tenant and key when they can be had.
func (a *Adapter) Refuse(ctx context.Context, r *Request, err error) {
	scope := idemkit.Scope{Operation: a.Operation(r)}
	if r.Tenant != nil {
		if t, terr := r.Tenant(ctx); terr == nil {
			scope.Tenant = t
		}
	}
	if k, kerr := idemkey.Parse(r.Key, a.keyOpts); kerr == nil {
		scope.Key = k
	}
	a.g.Refuse(ctx, scope, err)
}

// Responder converts between an adapter's response type and snapshots.
type Responder[R any] struct {
	// Snapshot returns what may be stored of a handler's response: the
	// status, the allow-listed headers (use Adapter.FilterHeader), the body.
	Snapshot func(R) *idemkit.Snapshot
	// Replay returns the response for a stored snapshot, with the
	// ReplayedHeader set to "true".
	Replay func(*idemkit.Snapshot) R
	// Fresh returns a handler's fresh response as the client gets it:
	// without the ReplayedHeader in any spelling, which only a replay
	// carries. Nil: the response as it is.
	Fresh func(R) R
	// Respond returns the adapter's response for a problem's response.
	Respond func(httpproblem.Response) R
	// Problem, when set, returns the response for a problem instead of
	// Respond (a test that reads the problem itself).
	Problem func(*httpproblem.Details) R
	// Pass, when set, runs the handler of a request that is not guarded
	// instead of next (the net/http middleware lets it write directly).
	Pass func(context.Context) (R, error)
}

// Serve answers r: it refuses r when it has no method (ErrNoMethod), runs
// next unguarded when r's method is not guarded or its route makes the key
// optional and r has none, and otherwise runs next at most once per
// (tenant, operation, key) through the idemkit.Guard.
// A fresh execution returns next's response, through c.Fresh (without
// the ReplayedHeader a handler may have set); a replay returns
// c.Replay of the stored snapshot; a refusal returns c.Respond of the problem's response. An error
// returned by next is returned as is, after the claim was released.
func Serve[R any](ctx context.Context, a *Adapter, r *Request, c Responder[R], next func(context.Context) (R, error)) (R, error) {
	pass := next
	if c.Pass != nil {
		pass = c.Pass
	}
	if r.Method == "" {
		// Every HTTP event names its method; one that does not is of
		// another shape, its key and tenant unread. Passed on unguarded,
		// a retried POST would run twice.
		err := ErrNoMethod
		if r.OtherShape != "" {
			err = fmt.Errorf("%w: %s", ErrNoMethod, r.OtherShape)
		}
		a.Refuse(ctx, r, err)
		logUnobserved(ctx, a.g, idemkit.Scope{Operation: a.Operation(r)}, err)
		return problem(ctx, a, c, NoMethod()), nil
	}
	if a.Unguarded(r) {
		return pass(ctx)
	}
	req, p := a.request(ctx, r)
	if p != nil {
		return problem(ctx, a, c, p), nil
	}
	var (
		fresh R
		ran   bool
	)
	snap, replayed, err := a.g.Do(ctx, req, func(ctx context.Context) (*idemkit.Snapshot, error) {
		ran = true
		resp, err := next(ctx)
		if err != nil {
			return nil, err
		}
		fresh = resp
		return c.Snapshot(resp), nil
	})
	switch {
	case err != nil && ran && !errors.Is(err, idemkit.ErrOutcomeUnknown):
		// The handler failed and its key was freed: its own error goes to
		// the runtime, as without the guard.
		var zero R
		return zero, err
	case err != nil:
		// Refused, or the handler's outcome is unknown and its key kept:
		// the client gets a problem that says what a retry will get.
		logUnobserved(ctx, a.g, req.Scope, err)
		return problem(ctx, a, c, ProblemFor(err, a.storeRetry)), nil
	case replayed:
		if a.replayHook != nil {
			adjusted := *snap
			adjusted.Header = a.replayHeader(ctx, snap)
			snap = &adjusted
		}
		return c.Replay(snap), nil
	}
	if c.Fresh != nil {
		fresh = c.Fresh(fresh)
	}
	return fresh, nil
}

// problem returns the response of c for p.
func problem[R any](ctx context.Context, a *Adapter, c Responder[R], p *httpproblem.Details) R {
	if c.Problem != nil {
		return c.Problem(p)
	}
	return c.Respond(a.ProblemResponse(ctx, p))
}

// ProblemResponse returns the response for p: Settings.ProblemResponse's,
// held to its rules, or p.Response().
func (a *Adapter) ProblemResponse(ctx context.Context, p *httpproblem.Details) httpproblem.Response {
	if a.problemHook == nil {
		return p.Response()
	}
	r := a.problemHook(ctx, *p)
	if r.Status < 200 || r.Status > 599 {
		r.Status = p.Status
	}
	h := make(http.Header, len(r.Header))
	for k, vs := range r.Header {
		if hookField(k, vs) && !httpheader.EqualFold(k, ReplayedHeader) {
			h[k] = vs
		}
	}
	r.Header = h
	return r
}

// replayHeader returns the header of s's replay (without the
// ReplayedHeader, which the Responder sets): s.Header itself without
// Settings.AdjustReplay, else the header the hook left, held to its rules.
func (a *Adapter) replayHeader(ctx context.Context, s *idemkit.Snapshot) http.Header {
	if a.replayHook == nil {
		return s.Header
	}
	h := s.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	a.replayHook(ctx, s.Status, h)
	for k, vs := range h {
		if !hookField(k, vs) || httpheader.EqualFold(k, ReplayedHeader) || describesBody(k) {
			delete(h, k)
		}
	}
	for _, k := range bodyFields {
		if vs, ok := s.Header[k]; ok {
			h[k] = vs
		}
	}
	return h
}

// bodyFields describe a stored body; a replay keeps their stored values.
var bodyFields = []string{"Content-Type", "Content-Encoding"}

func describesBody(name string) bool {
	for _, f := range bodyFields {
		if httpheader.EqualFold(name, f) {
			return true
		}
	}
	return false
}

// hookField reports whether a hook's header field may be sent: a valid
// name and values, not hop-by-hop or framing.
func hookField(name string, vs []string) bool {
	if !httpheader.ValidName(name) || httpheader.HopByHop(name) {
		return false
	}
	for _, v := range vs {
		if !httpheader.ValidValue(v) {
			return false
		}
	}
	return true
}

// request returns the guard request for r, or the problem that refuses it
// (reported to the observer): no tenant, no key or an invalid one, a body
// that cannot be fingerprinted.
func (a *Adapter) request(ctx context.Context, r *Request) (idemkit.Request, *httpproblem.Details) {
	scope, p := a.scope(ctx, r)
	if p != nil {
		return idemkit.Request{}, p
	}
	rt := a.route(r)
	fper, in, err := a.fingerprintInput(rt, r)
	if err != nil {
		a.g.Refuse(ctx, scope, err)
		return idemkit.Request{}, ProblemFor(err, a.storeRetry)
	}
	fp, err := fper.Compute(in)
	if err != nil {
		a.g.Refuse(ctx, scope, err)
		return idemkit.Request{}, BodyInvalid(err)
	}
	return idemkit.Request{
		Scope:       scope,
		Fingerprint: fp,
		FingerprintAs: func(version string) (string, error) {
			return fper.ComputeVersion(version, in)
		},
		Resource: fper.Resource(in),
	}, nil
}

// scope returns r's tenant, operation and key, or the problem that
// refuses r (reported to the observer).
func (a *Adapter) scope(ctx context.Context, r *Request) (idemkit.Scope, *httpproblem.Details) {
	tenant, terr := "", error(nil)
	if r.Tenant != nil {
		tenant, terr = r.Tenant(ctx)
		if terr != nil {
			tenant = ""
		}
	}
	scope := idemkit.Scope{Tenant: tenant, Operation: a.Operation(r)}
	if tenant == "" {
		// The cause goes to the observer, not to the caller.
		err := idemkit.ErrTenantMissing
		if terr != nil {
			err = errors.Join(err, terr)
		}
		a.g.Refuse(ctx, scope, err)
		logUnobserved(ctx, a.g, scope, err)
		return scope, ProblemFor(err, a.storeRetry)
	}
	if len(r.Key) == 0 {
		a.g.Refuse(ctx, scope, idemkey.ErrMissing)
		return scope, KeyMissing(a.header)
	}
	key, err := idemkey.Parse(r.Key, a.keyOpts)
	if err != nil {
		a.g.Refuse(ctx, scope, err)
		return scope, ProblemFor(err, a.storeRetry)
	}
	scope.Key = key
	return scope, nil
}

// fingerprintInput returns the fingerprinter of r's route rt and what of
// r it hashes, or the error refusing r: a path over httpconfig.MaxPathLen
// bytes (ErrPathTooLong), a query it reads of more than
// httpconfig.MaxQueryParams parameters (ErrQueryTooLarge).
func (a *Adapter) fingerprintInput(rt route, r *Request) (*fingerprint.Fingerprinter, fingerprint.Input, error) {
	if len(r.Path) > httpconfig.MaxPathLen {
		return nil, fingerprint.Input{}, httpconfig.ErrPathTooLong
	}
	in := fingerprint.Input{Method: r.Method, Path: r.Path, ContentType: r.ContentType,
		Body: r.Body, BodyString: r.BodyString, IsBase64Encoded: r.Base64}
	fper := rt.fp
	if _, ok := a.opTemplate(r); ok {
		fper = rt.fpPath // one template, many resources: the path tells them apart
	}
	if rt.query {
		if err := readQuery(r, &in); err != nil {
			return nil, fingerprint.Input{}, err
		}
	}
	if rt.headers && r.Header != nil {
		in.Header = r.Header()
	}
	return fper, in, nil
}
