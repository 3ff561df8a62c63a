package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpconfig"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/internal/adapter"
	"github.com/idemkit/idemkit/lambda/apigw"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
)

// Params are a world's fixed settings, drawn from its seed: they do not
// change when a history is shrunk.
type Params struct {
	Policy       idemkit.StalePolicy
	AccountWide  bool
	ReplayWindow time.Duration
	Retention    time.Duration
	MaxRenewals  int
	Skews        []time.Duration // one per instance
	FaultPct     int             // the share of store calls spoiled, in percent
	Clients      []Client
}

func (p Params) String() string {
	scope := "per-operation"
	if p.AccountWide {
		scope = "account-wide"
	}
	var cs []string
	for i, c := range p.Clients {
		cs = append(cs, fmt.Sprintf("c%d=%s", i, c))
	}
	return fmt.Sprintf("policy=%s keys=%s replay=%s retention=%s renewals=%d skews=%v faults=%d%% clients: %s",
		p.Policy, scope, p.ReplayWindow, p.Retention, p.MaxRenewals, p.Skews, p.FaultPct, strings.Join(cs, " "))
}

// Client is one caller and the key it sends: its tenant (an authorizer's
// numeric id, which the Lambda runtime decodes as a float64), its key and
// the order it acts on.
type Client struct {
	Tenant int64
	Key    string
	UUIDv7 bool
	// KeyAge dates a UUIDv7 key: that long before the world starts.
	KeyAge  time.Duration
	keyBits uint64
	Order   int
}

func (c Client) String() string { return fmt.Sprintf("t%d/%s/order%d", c.Tenant, c.Key, c.Order) }

// Variants of a client's request: a retry of its first request, or a
// reuse of its key for something else.
const (
	vRetry = iota
	vBody
	vResource
	vOperation
	vTenant
	vMethodCase
	vTenantTwin
	nVariants
)

var variantNames = [...]string{"retry", "other-body", "other-resource", "other-operation", "other-tenant", "method-case", "tenant-twin"}

// shape is one HTTP request as the client means it: the simulation's
// truth, from which the kit's scope and fingerprint are derived by the
// adapter, as in production.
type shape struct {
	tenant                      int64
	method, template, path, key string
	body                        string
}

// intent names the request exactly: two requests with one intent are the
// same request, retried.
func (s shape) intent() string {
	return fmt.Sprintf("t%d %s %s %s %s", s.tenant, s.method, s.path, s.key, s.body)
}

// scope is the request's true scope: tenant, operation (the method as
// sent and the route) unless keys are account-wide, and key.
func (s shape) scope(accountWide bool) string {
	if accountWide {
		return fmt.Sprintf("t%d %s", s.tenant, s.key)
	}
	return fmt.Sprintf("t%d %s %s %s", s.tenant, s.method, s.template, s.key)
}

// identity is what the execution identity must tell apart: tenant,
// operation, resource and key.
func (s shape) identity() string {
	return fmt.Sprintf("t%d %s %s %s", s.tenant, s.method, s.path, s.key)
}

// exactTenant reports whether the tenant id survives a float64.
func exactTenant(id int64) bool { return id <= 1<<53-1 && id >= -(1<<53-1) }

func (w *World) shapeOf(c Client, variant int) shape {
	s := shape{tenant: c.Tenant, method: "POST", template: "/orders/{id}", path: "/orders/" + strconv.Itoa(c.Order),
		key: c.Key, body: `{"amount":100}`}
	switch variant {
	case vBody:
		s.body = `{"amount":200}`
	case vResource:
		s.path = "/orders/" + strconv.Itoa(c.Order+1)
	case vOperation:
		s.template, s.path = "/refunds/{id}", "/refunds/"+strconv.Itoa(c.Order)
	case vTenant:
		s.tenant = c.Tenant + 7
	case vMethodCase:
		s.method = "post"
	case vTenantTwin:
		// Past 2^53 a neighbour rounds to the same float64.
		s.tenant = c.Tenant + 1
	}
	return s
}

// outcome is how a handler ends.
type outcome uint8

const (
	o201       outcome = iota // a created order: cached
	o500                      // a deliberate 500: cached
	o503                      // a transient answer: not cached, the key freed
	oError                    // a Go error: the key freed
	oEffectErr                // the effect written, then an error: freed
	oPanic                    // a panic: the key freed
	oUnknown                  // ErrOutcomeUnknown: the key kept
	oPark                     // waits for a Resume step, or for its context
	nOutcomes
)

var outcomeNames = [...]string{"201", "500", "503", "error", "effect+error", "panic", "unknown", "park"}

func (o outcome) String() string { return outcomeNames[o] }

// resp is what a client receives.
type resp struct {
	Status   int
	Header   map[string]string
	Body     string
	Replayed bool
	Problem  *httpproblem.Details
}

// request is one request sent by a client.
type request struct {
	n     int
	step  int
	inst  int
	shape shape
	plan  outcome
	// deadline is the Lambda invocation's deadline on the instance's
	// clock; zero for a server without one.
	deadline time.Time
	sentAt   time.Time // on the instance's clock
	sentTrue time.Time // true time

	owner   string // the owner token of its claim, once it made one
	recID   string // the record ID its claim names
	faulted bool   // a fault spoiled one of its store calls
	exec    *execution
	done    bool
	resp    resp
	err     error
	panic   any

	injected bool // the fault layer spoiled one of its store calls
}

// execution is one run of a handler.
type execution struct {
	n       int
	req     *request
	id      string // idemkit.ExecutionID
	owner   string
	recID   string
	start   time.Time // true time
	live    bool
	parked  bool
	crashed bool
	resume  chan outcome
	thaw    chan struct{} // closed to let a crashed handler return at the end
	thawed  bool
	// returned: the handler returned status and tag normally.
	returned   bool
	status     int
	unknown    bool // it ended with ErrOutcomeUnknown
	lostLease  bool // its context was cancelled with ErrLeaseLost
	effectSeen bool // it found its own earlier effect
}

func (e *execution) tag() string { return "e" + strconv.Itoa(e.n) }

// resolution is an operator's accepted decision.
type resolution struct {
	n      int
	recID  string
	as     idemkit.State
	intent string // the record's first request
}

// Violation is a broken invariant.
type Violation struct {
	Step      int // the index of the step in the history
	Invariant string
	Detail    string
}

func (v *Violation) String() string {
	return fmt.Sprintf("step %d: %s: %s", v.Step, v.Invariant, v.Detail)
}

// World is one simulated deployment: guards over one store behind a fault
// layer, their clients, handlers and operators. Its methods run on one
// goroutine at a time (see the package documentation).
type World struct {
	p     Params
	tl    *timeline
	epoch time.Time
	inner Store
	store *faultStore
	insts []*instance
	wait  func() // returns once every goroutine of the world is blocked

	mu        sync.Mutex
	rng       *rand.Rand
	step      int
	reqs      []*request
	execs     []*execution
	owners    map[string]*request // owner token -> the request that made it
	bound     map[string]string   // record ID -> the intent its current life is bound to
	ids       map[string]string   // execution ID -> identity
	ledger    map[string]string   // the handlers' own effects: execution ID -> intent
	recIDs    []string            // every record ID claimed, in order
	recSeen   map[string]bool
	held      []*heldCall
	unheld    map[string]time.Time // record ID -> the true time a write last ended its in_flight state
	res       map[int]*resolution  // by the number in an operator's answer
	decisions int
	tokens    int
	running   int
	violation *Violation
	log       []string // what happened during the current step
	stats     Stats
	reg       *regions // the regions of a world of two (nil: one store)
}

// Stats count what a run did.
type Stats struct {
	Steps, Requests, Executions, Faults, LateCopies, Resolutions int
}

type instance struct {
	n     int
	clock *clock
	guard *idemkit.Guard
	front *adapter.Adapter
}

type reqKey struct{}

// reqOf returns the request a store call is made for, nil for an
// operator's.
func reqOf(ctx context.Context) *request {
	r, _ := ctx.Value(reqKey{}).(*request)
	return r
}

// Epoch is the true time at which every world starts.
func epoch() time.Time { return time.Now().UTC() }

// NewWorld builds the world of p over inner (nil: a memstore), which
// must list stale leases. wait returns once every goroutine the world
// started is blocked (in a testing/synctest bubble, synctest.Wait).
func NewWorld(p Params, inner Store, wait func()) (*World, error) {
	if inner == nil {
		inner = memstore.New()
	}
	if !inner.ListsStale() {
		return nil, errors.New("sim: the store does not list stale leases (idemkit.StaleLister): the operator could not see them")
	}
	start := epoch()
	w := &World{p: p, tl: &timeline{now: start}, epoch: start, inner: inner, wait: wait,
		owners: map[string]*request{}, bound: map[string]string{}, ids: map[string]string{},
		ledger: map[string]string{}, res: map[int]*resolution{}, unheld: map[string]time.Time{}, recSeen: map[string]bool{}, rng: rand.New(rand.NewPCG(1, 1))}
	w.store = &faultStore{w: w, inner: inner}
	w.p.Clients = append([]Client(nil), p.Clients...)
	for i, c := range w.p.Clients {
		if c.UUIDv7 {
			w.p.Clients[i].Key = uuidV7(c.keyBits, start.Add(-c.KeyAge))
		}
	}
	pol := idemkit.Policy{OnStaleLease: p.Policy, ReplayWindow: p.ReplayWindow, RecordRetention: p.Retention, MaxRenewals: p.MaxRenewals}
	for i, skew := range p.Skews {
		c := &clock{tl: w.tl, skew: skew}
		g, err := idemkit.New(idemkit.Config{Store: w.store, Policy: pol, AccountWide: p.AccountWide, Clock: c,
			NewToken: w.newToken, Observer: observe.ObserverFunc(func(context.Context, observe.Event) {}), ExecutionSecret: []byte("simulation secret, 16+ bytes")})
		if err != nil {
			return nil, err
		}
		f, err := adapter.New(g, httpconfig.Settings{RouteTemplate: true})
		if err != nil {
			return nil, err
		}
		w.insts = append(w.insts, &instance{n: i, clock: c, guard: g, front: f})
	}
	return w, nil
}

func (w *World) newToken() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.tokens++
	return "o" + strconv.Itoa(w.tokens)
}

// logf records a line of what happened in the current step; the caller
// holds w.mu.
func (w *World) logf(format string, args ...any) {
	w.log = append(w.log, fmt.Sprintf(format, args...))
}

// fail records the first violation; the caller holds w.mu.
func (w *World) fail(inv, format string, args ...any) {
	if w.violation == nil {
		w.violation = &Violation{Step: w.step, Invariant: inv, Detail: fmt.Sprintf(format, args...)}
	}
}

// since returns t as an offset from the epoch, for the history.
func (w *World) since(t time.Time) string { return t.Sub(w.epoch).Round(time.Millisecond).String() }

// send starts a request and runs it until it answers or blocks.
func (w *World) send(s Step) {
	c := w.p.Clients[s.Client%len(w.p.Clients)]
	inst := w.insts[s.Instance%len(w.insts)]
	sh := w.shapeOf(c, s.Variant%nVariants)
	w.mu.Lock()
	r := &request{n: len(w.reqs) + 1, step: w.step, inst: inst.n, shape: sh, plan: s.Outcome % nOutcomes, sentAt: inst.clock.Now(), sentTrue: w.tl.Now()}
	if s.Deadline > 0 {
		r.deadline = r.sentAt.Add(s.Deadline)
	}
	w.reqs = append(w.reqs, r)
	w.stats.Requests++
	w.running++
	w.logf("r%d %s from c%d on i%d: %s %s key=%s body=%s tenant=%d plan=%s deadline=%s", r.n, variantNames[s.Variant%nVariants],
		s.Client%len(w.p.Clients), inst.n, sh.method, sh.path, sh.key, sh.body, sh.tenant, r.plan, s.Deadline)
	w.mu.Unlock()

	ctx := context.WithValue(context.Background(), reqKey{}, r)
	var cancel context.CancelFunc = func() {}
	if !r.deadline.IsZero() {
		// The deadline is on the instance's clock, which the guard reads
		// it by; the context itself never fires (the test's own clock
		// stands still), the Lambda freeze is modelled by crash.
		ctx, cancel = context.WithDeadline(ctx, r.deadline)
	}
	ar := &adapter.Request{Method: sh.method, Path: sh.path, Template: sh.template, Key: []string{sh.key},
		ContentType: "application/json", BodyString: sh.body,
		Tenant: func(ctx context.Context) (string, error) {
			ev := &events.APIGatewayV2HTTPRequest{RequestContext: events.APIGatewayV2HTTPRequestContext{
				Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
					Lambda: map[string]any{"tenant": float64(sh.tenant)}}}}
			return apigw.AuthorizerContext("tenant")(ctx, apigw.Request{V2: ev})
		}}
	codec := adapter.Responder[resp]{
		Snapshot: func(x resp) *idemkit.Snapshot {
			return &idemkit.Snapshot{Status: x.Status, Header: inst.front.FilterHeader(x.Header, nil), Body: []byte(x.Body)}
		},
		Replay: func(sn *idemkit.Snapshot) resp {
			h := map[string]string{}
			for k := range sn.Header {
				h[k] = sn.Header.Get(k)
			}
			return resp{Status: sn.Status, Header: h, Body: string(sn.Body), Replayed: true}
		},
		Problem: func(p *httpproblem.Details) resp { return resp{Status: p.Status, Problem: p} },
	}
	go func() {
		defer cancel()
		var (
			out resp
			err error
		)
		func() {
			defer func() {
				if v := recover(); v != nil {
					w.mu.Lock()
					r.panic = v
					w.mu.Unlock()
				}
			}()
			out, err = adapter.Serve(ctx, inst.front, ar, codec, w.handler(r))
		}()
		w.mu.Lock()
		defer w.mu.Unlock()
		r.done, r.resp, r.err = true, out, err
		w.running--
		w.answered(r)
	}()
	w.wait()
}

// handler is the application behind the guard: it records its run,
// writes its effect keyed by its execution identity (the pattern of
// HANDLER-WRITES.md), and ends as its request's plan says.
func (w *World) handler(r *request) func(context.Context) (resp, error) {
	return func(ctx context.Context) (resp, error) {
		e := w.begin(ctx, r)
		returned := false
		defer func() {
			w.mu.Lock()
			if !e.crashed {
				e.live = false
			}
			if !returned {
				w.logf("e%d (r%d) panicked", e.n, r.n)
			}
			w.mu.Unlock()
		}()
		out, err := w.run(ctx, e)
		returned = true
		return out, err
	}
}

func (w *World) run(ctx context.Context, e *execution) (resp, error) {
	r := e.req
	reply := func(status int) (resp, error) {
		w.mu.Lock()
		e.returned, e.status = true, status
		w.logf("e%d (r%d) answers %d", e.n, r.n, status)
		w.mu.Unlock()
		return resp{Status: status, Body: e.tag(), Header: map[string]string{"Content-Type": "application/json",
			"Set-Cookie": "session=" + e.tag(), "Date": "Mon, 01 Jan 2024 00:00:00 GMT", "Location": r.shape.path}}, nil
	}
	if r.shape.method != "POST" {
		// A router that compares methods exactly (net/http's mux) does
		// not route post to the POST handler.
		return reply(405)
	}
	w.effect(e)
	o := r.plan
	if o == oPark {
		w.mu.Lock()
		e.parked = true
		w.logf("e%d (r%d) runs on", e.n, r.n)
		w.mu.Unlock()
		select {
		case o = <-e.resume:
		case <-ctx.Done():
			w.mu.Lock()
			crashed := e.crashed
			w.mu.Unlock()
			if crashed {
				<-e.thaw
				return resp{}, errors.New("sim: the invocation was frozen")
			}
			w.mu.Lock()
			e.parked, e.live = false, false
			e.lostLease = errors.Is(context.Cause(ctx), idemkit.ErrLeaseLost)
			w.logf("e%d (r%d) stops: %v", e.n, r.n, context.Cause(ctx))
			w.mu.Unlock()
			return resp{}, ctx.Err()
		}
		w.mu.Lock()
		e.parked = false
		crashed := e.crashed
		w.mu.Unlock()
		if crashed {
			<-e.thaw
			return resp{}, errors.New("sim: the invocation was frozen")
		}
	}
	switch o {
	case o201:
		return reply(201)
	case o500:
		return reply(500)
	case o503:
		return reply(503)
	case oError, oEffectErr:
		w.mu.Lock()
		w.logf("e%d (r%d) fails", e.n, r.n)
		w.mu.Unlock()
		return resp{}, errors.New("sim: downstream failed")
	case oPanic:
		panic("sim: handler panic")
	case oUnknown:
		w.mu.Lock()
		e.unknown = true
		w.logf("e%d (r%d) outcome unknown", e.n, r.n)
		w.mu.Unlock()
		return resp{}, fmt.Errorf("sim: provider timed out: %w", idemkit.ErrOutcomeUnknown)
	}
	return reply(201)
}

// effect writes the handler's effect to the ledger, keyed by its
// execution identity: a write already there is its own earlier one.
func (w *World) effect(e *execution) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if prev, ok := w.ledger[e.id]; ok {
		e.effectSeen = true
		if prev != e.req.shape.identity() {
			w.fail("execution-id", "e%d (r%d, %s) found the effect of %s under its execution ID", e.n, e.req.n, e.req.shape.identity(), prev)
		}
		return
	}
	w.ledger[e.id] = e.req.shape.identity()
}

// begin records the start of an execution and checks that it may start.
func (w *World) begin(ctx context.Context, r *request) *execution {
	id, ok := idemkit.ExecutionID(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	e := &execution{n: len(w.execs) + 1, req: r, id: id, owner: r.owner, recID: r.recID, start: w.tl.Now(), live: true,
		resume: make(chan outcome, 1), thaw: make(chan struct{})}
	w.execs = append(w.execs, e)
	r.exec = e
	w.stats.Executions++
	w.logf("e%d starts for r%d (owner %s, record %s)", e.n, r.n, r.owner, r.recID)
	if !ok {
		w.fail("execution-id", "e%d: no execution ID in a guarded handler", e.n)
	}
	if prev, seen := w.ids[id]; seen && prev != r.shape.identity() {
		w.fail("execution-id", "e%d (%s) has the execution ID of %s", e.n, r.shape.identity(), prev)
	}
	w.ids[id] = r.shape.identity()
	for _, o := range w.execs[:len(w.execs)-1] {
		if o.live && o.req.shape.scope(w.p.AccountWide) == r.shape.scope(w.p.AccountWide) && !w.acceptedRun(r) {
			w.fail("one-execution", "e%d (r%d) starts while e%d (r%d) of the same scope %q still runs", e.n, r.n, o.n, o.req.n, r.shape.scope(w.p.AccountWide))
		}
	}
	if cl := w.owners[r.owner]; cl != r {
		w.fail("one-execution", "e%d (r%d) runs without a claim of its own landed", e.n, r.n)
	}
	w.regionBegin(e)
	return e
}

// parked returns the executions waiting in their handler, in order.
func (w *World) parked() []*execution {
	var out []*execution
	for _, e := range w.execs {
		if e.parked && e.live && !e.crashed {
			out = append(out, e)
		}
	}
	return out
}

// resume lets a parked handler go on to o.
func (w *World) resume(s Step) {
	w.mu.Lock()
	ps := w.parked()
	if len(ps) == 0 {
		w.mu.Unlock()
		return
	}
	e := ps[s.N%len(ps)]
	o := s.Outcome % nOutcomes
	if o == oPark {
		o = o201
	}
	w.logf("e%d (r%d) resumes: %s", e.n, e.req.n, o)
	e.parked = false
	e.resume <- o
	w.mu.Unlock()
	w.wait()
}

// crash freezes a parked handler's invocation: it never returns, and
// every store call made for its request from now on is lost.
func (w *World) crash(s Step) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ps := w.parked()
	if len(ps) == 0 {
		return
	}
	w.crashLocked(ps[s.N%len(ps)], "crashes")
}

func (w *World) crashLocked(e *execution, why string) {
	e.crashed, e.live, e.parked = true, false, false
	w.logf("e%d (r%d) %s", e.n, e.req.n, why)
}

// freezeDue crashes the parked handlers whose Lambda deadline has passed
// on their instance's clock; the caller holds w.mu.
func (w *World) freezeDue() {
	for _, e := range w.execs {
		r := e.req
		if e.live && !e.crashed && !r.deadline.IsZero() && !w.insts[r.inst].clock.Now().Before(r.deadline) {
			w.crashLocked(e, "is frozen at its deadline")
		}
	}
}

// advance moves time forward by d, firing the timers due on the way one
// at a time.
func (w *World) advance(d time.Duration) {
	target := w.tl.Now().Add(d)
	w.mu.Lock()
	w.logf("time +%s -> %s", d, w.since(target))
	w.mu.Unlock()
	for w.violation == nil {
		t := w.tl.next(target)
		if t == nil {
			break
		}
		w.mu.Lock()
		w.freezeDue()
		w.mu.Unlock()
		go t.f()
		w.wait()
		w.mu.Lock()
		w.checkRunning()
		w.mu.Unlock()
	}
	w.tl.set(target)
	w.mu.Lock()
	w.freezeDue()
	w.mu.Unlock()
}

// operate is an operator's action through the operator tools: list the
// records that wait for a decision, inspect one, resolve it through
// idemkit.Resolve.
func (w *World) operate(s Step) {
	inst := w.insts[s.Instance%len(w.insts)]
	now := inst.clock.Now()
	ctx := w.operatorCtx(inst)
	listed, ok := w.list(ctx, now)
	w.mu.Lock()
	if ok {
		w.checkVisible(w.listedCtx(inst), listed, now)
	}
	w.mu.Unlock()
	if s.Op == opList || len(listed) == 0 {
		return
	}
	rec := listed[s.N%len(listed)]
	cur, err := w.store.Get(ctx, rec.ID)
	if err != nil {
		return
	}
	res := idemkit.Resolution{As: idemkit.StateFailed, Operator: "op", Reason: "sim"}
	w.mu.Lock()
	w.decisions++
	n := w.decisions
	w.mu.Unlock()
	if s.Op == opComplete {
		res = idemkit.Resolution{As: idemkit.StateCompleted, Operator: "op", Reason: "sim",
			Snapshot: &idemkit.Snapshot{Status: 201, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: []byte("op" + strconv.Itoa(n))}}
	}
	out, was, err := idemkit.Resolve(ctx, w.store, cur.ID, res, now)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.logf("operator on i%d: resolve %s as %s: refused: %v", inst.n, cur.ID, res.As, err)
		return
	}
	w.logf("operator on i%d: resolved %s (%s, owner %s) as %s (op%d)", inst.n, out.ID, was, cur.Owner, res.As, n)
}

const (
	opList = iota
	opFail
	opComplete
	nOps
)

var opNames = [...]string{"list", "resolve-failed", "resolve-completed"}

// list returns what the operator tools list: indeterminate records and
// stale leases, every page. ok is false when a call failed.
func (w *World) list(ctx context.Context, now time.Time) (recs []*idemkit.Record, ok bool) {
	for _, f := range []func(context.Context, string, string, int, time.Time) ([]*idemkit.Record, string, error){
		w.store.ListIndeterminate, w.store.ListStale} {
		page := ""
		for {
			rs, next, err := f(ctx, "", page, 3, now)
			if err != nil {
				return recs, false
			}
			recs = append(recs, rs...)
			if next == "" {
				break
			}
			page = next
		}
	}
	return recs, true
}

// deliver lands a held late copy of a write.
func (w *World) deliver(s Step) {
	w.mu.Lock()
	if len(w.held) == 0 {
		w.mu.Unlock()
		return
	}
	i := s.N % len(w.held)
	h := w.held[i]
	w.held = append(w.held[:i], w.held[i+1:]...)
	if w.tl.Now().Add(h.skew).After(h.sent.Add(idemkit.MaxWriteDelay)) {
		w.logf("late %s of %s dropped: signed more than %s ago", h.op, h.who, idemkit.MaxWriteDelay)
		w.mu.Unlock()
		return
	}
	w.stats.LateCopies++
	w.logf("late %s of %s lands (sent at %s)", h.op, h.who, w.since(h.sent.Add(-h.skew)))
	w.mu.Unlock()
	w.land(h)
	w.wait()
}

// drain ends the world: parked handlers fail, frozen ones return, and
// time runs on until every request has answered.
func (w *World) drain() {
	w.mu.Lock()
	w.rng = rand.New(rand.NewPCG(0, 0))
	w.p.FaultPct = 0
	w.mu.Unlock()
	for i := 0; i < 10000; i++ {
		w.mu.Lock()
		for _, e := range w.execs {
			switch {
			case e.crashed && !e.thawed:
				e.thawed = true
				close(e.thaw)
				e.resume <- oError
			case e.parked && e.live:
				e.parked = false
				e.resume <- oError
			}
		}
		w.mu.Unlock()
		w.wait()
		w.mu.Lock()
		running := w.running
		w.mu.Unlock()
		if running == 0 {
			return
		}
		t := w.tl.next(w.tl.Now().Add(24 * time.Hour))
		if t == nil {
			return
		}
		go t.f()
		w.wait()
	}
}

// sortedIDs returns the record IDs claimed so far; the caller holds w.mu.
func (w *World) sortedIDs() []string {
	ids := append([]string(nil), w.recIDs...)
	sort.Strings(ids)
	return ids
}
