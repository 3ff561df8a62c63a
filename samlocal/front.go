package samlocal

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
)

// Pool is the sandboxes of one function, one invocation each at a time.
type Pool struct {
	Function  *Function
	Sandboxes []*Sandbox

	once  sync.Once
	free  chan int
	mu    sync.Mutex
	calls []int // guarded by mu: invocations per sandbox
}

func (p *Pool) init() {
	p.once.Do(func() {
		p.free = make(chan int, len(p.Sandboxes))
		for i := range p.Sandboxes {
			p.free <- i
		}
		p.calls = make([]int, len(p.Sandboxes))
	})
}

// errNoSandbox is Invoke's error when every sandbox is busy.
var errNoSandbox = errors.New("samlocal: every sandbox is busy")

// Invocations returns how many invocations each sandbox has served.
func (p *Pool) Invocations() []int {
	p.init()
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.calls...)
}

// Invoke runs event in a free sandbox and returns the emulator's status
// and answer. With every sandbox busy it fails at once, as Lambda
// throttles past a function's concurrency. Like Lambda, the invocation
// runs on when ctx's caller hangs up, until the function's timeout (plus
// the emulator's margin).
func (p *Pool) Invoke(ctx context.Context, event []byte) (int, []byte, error) {
	p.init()
	var i int
	select {
	case i = <-p.free:
	default:
		return 0, nil, errNoSandbox
	}
	defer func() { p.free <- i }()
	p.mu.Lock()
	p.calls[i]++
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(p.Function.Timeout)*time.Second+5*time.Second)
	defer cancel()
	return p.Sandboxes[i].Call(ctx, event)
}

// Front does, over plain HTTP, what the template's APIs do in front of
// their functions: it matches the routes (API Gateway's 404
// {"message":"Not Found"} otherwise), runs a route's JWT authorizer (401
// {"message":"Unauthorized"} without a valid token), turns the request
// into the route's payload (2.0 or 1.0) with the token's claims, invokes
// the function in a free sandbox (429 {"message":"Too Many Requests"}
// when none is free), and maps its answer back to HTTP; a function error,
// crash or timeout is 500 {"message":"Internal Server Error"} (502 for a
// REST API).
type Front struct {
	// Routes are matched as API Gateway does: a literal segment before a
	// parameter, a parameter before a greedy {proxy+}, a method before
	// ANY, $default last.
	Routes []*Route
	// Pools run the functions, by name.
	Pools map[string]*Pool
	// Authorizers check the tokens, by Route.Authorizer.
	Authorizers map[string]*Authorizer
	// Logger receives invocation failures. Nil: slog.Default().
	Logger *slog.Logger
}

// match returns the route for method and path, and its path parameters.
func (f *Front) match(method, path string) (*Route, map[string]string) {
	var best *Route
	var bestParams map[string]string
	bestScore := -1
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for _, rt := range f.Routes {
		if rt.Method != "ANY" && rt.Method != method {
			continue // methods are case-sensitive: post is not POST
		}
		score, params, ok := matchPath(rt.Path, segs)
		if !ok {
			continue
		}
		score *= 2
		if rt.Method != "ANY" {
			score++
		}
		if score > bestScore {
			best, bestParams, bestScore = rt, params, score
		}
	}
	return best, bestParams
}

// matchPath matches a route's path against a request's segments; the
// score ranks the more specific routes higher.
func matchPath(tmpl string, segs []string) (int, map[string]string, bool) {
	if tmpl == "$default" {
		return 0, nil, true
	}
	ts := strings.Split(strings.TrimPrefix(tmpl, "/"), "/")
	var params map[string]string
	score := 1
	for i, t := range ts {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "+}") {
			if i >= len(segs) || i != len(ts)-1 {
				return 0, nil, false
			}
			if params == nil {
				params = map[string]string{}
			}
			params[t[1:len(t)-2]] = unescape(strings.Join(segs[i:], "/"))
			return score, params, true
		}
		if i >= len(segs) {
			return 0, nil, false
		}
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			if segs[i] == "" {
				return 0, nil, false
			}
			if params == nil {
				params = map[string]string{}
			}
			params[t[1:len(t)-1]] = unescape(segs[i])
			score += 2
			continue
		}
		if t != segs[i] {
			return 0, nil, false
		}
		score += 3
	}
	if len(ts) != len(segs) {
		return 0, nil, false
	}
	return score + 1000, params, true
}

func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// ServeHTTP implements http.Handler.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := f.Logger
	if log == nil {
		log = slog.Default()
	}
	rt, params := f.match(r.Method, r.URL.EscapedPath())
	if rt == nil {
		gatewayReply(http.StatusNotFound, "Not Found").write(w)
		return
	}
	q := &request{r: r, route: rt, params: params, requestID: newRequestID(), now: time.Now()}
	if rt.Authorizer != "" {
		claims, err := f.authorize(rt.Authorizer, r.Header.Get("Authorization"))
		if err != nil {
			rp := gatewayReply(http.StatusUnauthorized, "Unauthorized")
			rp.headers["Www-Authenticate"] = []string{`Bearer error="invalid_token"`}
			rp.write(w)
			return
		}
		q.claims = &claims
	}
	var err error
	q.body, err = readBody(r)
	if errors.Is(err, errBodyTooLarge) {
		gatewayReply(http.StatusRequestEntityTooLarge, "Request Entity Too Large").write(w)
		return
	}
	if err != nil {
		gatewayReply(http.StatusBadRequest, "Bad Request").write(w)
		return
	}
	var ev any = q.eventV2()
	if rt.Payload == "1.0" {
		ev = q.eventV1()
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		gatewayReply(http.StatusInternalServerError, "Internal Server Error").write(w)
		return
	}
	pool := f.Pools[rt.Function]
	status, out, err := pool.Invoke(r.Context(), payload)
	var rp reply
	if err == nil {
		rp, err = Response(rt.Payload, status, out)
	}
	switch {
	case errors.Is(err, errNoSandbox):
		rp = gatewayReply(http.StatusTooManyRequests, "Too Many Requests")
	case err != nil && rt.REST:
		log.Error("samlocal: function error", "function", rt.Function, "route", rt.RouteKey(), "error", err.Error())
		rp = gatewayReply(http.StatusBadGateway, "Internal server error")
	case err != nil:
		log.Error("samlocal: function error", "function", rt.Function, "route", rt.RouteKey(), "error", err.Error())
		rp = gatewayReply(http.StatusInternalServerError, "Internal Server Error")
	}
	rp.write(w)
}

func (f *Front) authorize(name, header string) (Claims, error) {
	a := f.Authorizers[name]
	if a == nil {
		return Claims{}, ErrToken
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Claims{}, ErrToken
	}
	return a.Verify(strings.TrimSpace(token))
}
