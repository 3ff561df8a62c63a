package explore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/clock"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/memstore"
)

// ClientSpec is one client: it sends requests with one key K, one body,
// from an instance of its own (a Guard whose clock is off by Skew), and
// retries a refused or failed one up to Retries times.
type ClientSpec struct {
	Name    string // one capital letter
	Body    int    // two clients with one body send one request
	Skew    time.Duration
	Retries int
}

// Config bounds one exploration.
type Config struct {
	Name    string
	Policy  idemkit.StalePolicy
	Clients []ClientSpec
	// Operators is how many times the operator lists the indeterminate
	// records and resolves the first one (completed or failed, each
	// explored), concurrently with everything else.
	Operators int
	// Faults bounds the network faults of one history: a call lost, its
	// answer lost, held (its caller told it failed, the call landing
	// later) or duplicated.
	Faults int
	// Depth bounds the actions of one history.
	Depth int
	// MaxStates stops the search once this many states were found (zero:
	// no bound); the result then says it was truncated.
	MaxStates int
	// Deadline is each request's deadline (a Lambda invocation's): its
	// handler is frozen at it. Zero: 10 s.
	Deadline time.Duration
	// Horizon, when not zero, bounds time: no instant later than Horizon
	// after the start is stepped to.
	Horizon time.Duration
	// Retention, when not zero, is the guards' RecordRetention and
	// ReplayWindow: a record then expires within the horizon.
	Retention time.Duration
	// ClaimAttempts and WriteAttempts are the guards' (zero: 2 each).
	ClaimAttempts, WriteAttempts int
}

func (c Config) withDefaults() Config {
	if c.Deadline <= 0 {
		c.Deadline = 10 * time.Second
	}
	if c.ClaimAttempts <= 0 {
		c.ClaimAttempts = 2
	}
	if c.WriteAttempts <= 0 {
		c.WriteAttempts = 2
	}
	return c
}

// The handlers' outcomes the explorer chooses, and the errors they return.
var (
	errHandler = errors.New("explore: the handler failed")
	errUnknown = fmt.Errorf("explore: the provider timed out: %w", idemkit.ErrOutcomeUnknown)
	errStop    = errors.New("explore: the history is over")
)

// actor counts the store calls of an attempt or an operator run.
type actor struct {
	name  string
	calls int
}

type client struct {
	spec  ClientSpec
	guard *idemkit.Guard
	atts  []*attempt
}

// attempt is one request a client sent (a retry is another attempt, with
// another owner token: the token is its name).
type attempt struct {
	*actor
	c        *client
	n        int
	tokens   int       // the tokens its guard took: its owner, then a version per write
	deadline time.Time // true time
	done     bool
	frozen   bool   // its invocation froze at its deadline
	class    string // the kind of answer
	answer   string
	run      *run
}

// run is one execution of the handler.
type run struct {
	n        int
	att      *attempt
	ch       chan string
	parked   bool
	returned string // "201", "error", "unknown"; empty while it runs
	// What ended its hold on the key, from the store's data.
	released, failed, takenOver bool
	expires                     time.Time // its record's expiry, as it began
}

func (r *run) tag() string { return fmt.Sprintf("run%d", r.n) }

// opRun is one run of the operator's tool.
type opRun struct {
	*actor
	as      idemkit.State
	checked string // the owner of the record its first read returned
	done    bool
	answer  string
}

// world is one history being run: guards, clients, handlers and the
// operator over a memstore behind the network.
type world struct {
	cfg   Config
	wait  func()
	epoch time.Time
	inner *memstore.Store
	store *Net
	id    string // the record ID of the key K

	mu      sync.Mutex
	clients []*client
	actors  map[string]*actor
	atts    map[string]*attempt // by name (= owner token)
	runs    []*run
	ops     []*opRun
	net     []*msg // the calls in the network
	all     []*msg // every call made
	faults  int
	busy    int // goroutines of the world still running
	// labels names each version written by its first writer and the
	// number of versions that writer wrote before it ("A1#2"), so that
	// the state is the same whatever the versions Resolve makes.
	labels  map[string]string
	written map[string]int    // per actor, the versions labelled
	opFP    map[string]string // operator run -> the fingerprint of the record its completed decision landed on
	closing bool
	step    int
	log     []string
	vios    []*Violation
	logOn   bool
}

// Violation is a broken guarantee.
type Violation struct {
	Invariant string
	Detail    string
	Step      int      // the action after which it was found (1-based)
	Trace     []string // the actions, one a line
}

func (v *Violation) String() string { return v.Invariant + ": " + v.Detail }

const (
	tenant    = "t"
	operation = "POST /orders"
	key       = "K"
)

func fingerprint(body int) string { return fmt.Sprintf("v1:body%d", body) }

func newWorld(cfg Config, wait func(), logOn bool) (*world, error) {
	w := &world{cfg: cfg, wait: wait, epoch: time.Now(), inner: memstore.New(), actors: map[string]*actor{},
		atts: map[string]*attempt{}, opFP: map[string]string{}, labels: map[string]string{}, written: map[string]int{}, logOn: logOn}
	w.store = &Net{w: w, inner: w.inner}
	w.id = idemkit.Scope{Tenant: tenant, Operation: operation, Key: key}.ID(false)
	for _, spec := range cfg.Clients {
		c := &client{spec: spec}
		g, err := idemkit.New(idemkit.Config{
			Store:         w.store,
			Policy:        idemkit.Policy{OnStaleLease: cfg.Policy, RecordRetention: cfg.Retention, ReplayWindow: cfg.Retention},
			Clock:         skewClock{skew: spec.Skew},
			NewToken:      func() string { return w.token(c) },
			ClaimAttempts: cfg.ClaimAttempts,
			WriteAttempts: cfg.WriteAttempts,
		})
		if err != nil {
			return nil, err
		}
		c.guard = g
		w.clients = append(w.clients, c)
	}
	return w, nil
}

// skewClock is an instance's clock: the bubble's time plus its skew. The
// pauses between a guard's attempts take no time: how late each call
// lands is the network's, which the explorer chooses.
type skewClock struct{ skew time.Duration }

func (c skewClock) Now() time.Time { return time.Now().Add(c.skew) }

func (c skewClock) AfterFunc(_ time.Duration, f func()) clock.Timer {
	go f()
	return firedTimer{}
}

type firedTimer struct{}

func (firedTimer) Stop() bool               { return false }
func (firedTimer) Reset(time.Duration) bool { return false }

// token returns the next token client c's guard takes: the attempt
// being started's name is its owner token (the first it takes), and each
// of its writes takes a version of its own ("A1~1", "A1~2"...).
func (w *world) token(c *client) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	a := c.atts[len(c.atts)-1]
	a.tokens++
	if a.tokens == 1 {
		return a.name
	}
	return fmt.Sprintf("%s~%d", a.name, a.tokens-1)
}

// label names version v, first written by actor; the caller holds w.mu.
func (w *world) label(actor, v string) {
	if _, ok := w.labels[v]; ok || v == "" {
		return
	}
	w.written[actor]++
	w.labels[v] = fmt.Sprintf("%s#%d", actor, w.written[actor])
}

// vl returns the label of version v; the caller holds w.mu.
func (w *world) vl(v string) string {
	if l, ok := w.labels[v]; ok {
		return l
	}
	return "?" + v
}

// actor returns the actor named name; the caller holds w.mu.
func (w *world) actor(name string) *actor {
	a := w.actors[name]
	if a == nil {
		a = &actor{name: name}
		w.actors[name] = a
	}
	return a
}

// rel writes t relative to the bubble's now.
func (w *world) rel(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := time.Until(t)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// logf notes what happened in the current action; the caller holds w.mu.
func (w *world) logf(format string, args ...any) {
	if w.logOn {
		w.log = append(w.log, fmt.Sprintf(format, args...))
	}
}

// fail records a violation; the caller holds w.mu.
func (w *world) fail(inv, format string, args ...any) {
	if w.closing {
		return
	}
	w.vios = append(w.vios, &Violation{Invariant: inv, Detail: fmt.Sprintf(format, args...), Step: w.step})
	w.logf("VIOLATION %s: %s", inv, fmt.Sprintf(format, args...))
}

// stored reads the record of K as stored, in any state, nil when there is
// none.
func (w *world) stored() *idemkit.Record {
	rec, err := w.inner.Get(context.Background(), w.id)
	if err != nil {
		return nil
	}
	return rec
}

// record reads the live record of K at t: nil when there is none, or it
// is released or expired at t.
func (w *world) record(t time.Time) *idemkit.Record {
	if rec := w.stored(); rec != nil && rec.State != idemkit.StateReleased && rec.Live(t) {
		return rec
	}
	return nil
}

// start sends client c's next request; the caller holds w.mu.
func (w *world) start(c *client) {
	a := &attempt{c: c, n: len(c.atts) + 1}
	a.actor = w.actor(fmt.Sprintf("%s%d", c.spec.Name, a.n))
	c.atts = append(c.atts, a)
	w.atts[a.name] = a
	a.deadline = time.Now().Add(w.cfg.Deadline)
	ctx := context.WithValue(deadlineCtx{Context: context.Background(), dl: a.deadline}, actorKey{}, a.name)
	req := idemkit.Request{Scope: idemkit.Scope{Tenant: tenant, Operation: operation, Key: key}, Fingerprint: fingerprint(c.spec.Body)}
	w.busy++
	w.logf("%s sends body%d (deadline %s)", a.name, c.spec.Body, w.rel(a.deadline))
	go func() {
		snap, replayed, err := c.guard.Do(ctx, req, w.handler(a))
		w.mu.Lock()
		defer w.mu.Unlock()
		w.busy--
		w.answered(a, snap, replayed, err)
	}()
}

// deadlineCtx is a Lambda invocation's context: it has a deadline, but
// is never done. At the deadline the invocation freezes (world.freeze):
// its calls in the network stay there, its handler never returns, its
// client is told the request timed out.
type deadlineCtx struct {
	context.Context
	dl time.Time
}

func (c deadlineCtx) Deadline() (time.Time, bool) { return c.dl, true }

// freeze freezes the invocations whose deadline has passed; the caller
// holds w.mu.
func (w *world) freeze() {
	now := time.Now()
	for _, c := range w.clients {
		for _, a := range c.atts {
			if a.done || now.Before(a.deadline) {
				continue
			}
			a.done, a.frozen = true, true
			a.class, a.answer = "timeout", "504 (the invocation froze at its deadline)"
			w.logf("%s froze at its deadline: its client gets a timeout", a.name)
			for _, m := range w.net {
				if m.sender == a.name && m.waiting {
					m.waiting, m.copies = false, 1
				}
			}
		}
	}
}

// expire takes out of the network every call sent more than
// idemkit.MaxWriteDelay ago by its sender's clock: none lands later (a
// caller still waiting for one is told it failed); the caller holds w.mu.
func (w *world) expire() {
	now := time.Now()
	var keep []*msg
	for _, m := range w.net {
		if now.Add(w.skew(m.sender)).Sub(m.now) <= idemkit.MaxWriteDelay {
			keep = append(keep, m)
			continue
		}
		w.logf("%s expired in the network", m.name())
		if m.waiting {
			m.waiting, m.replied = false, true
			m.reply <- result{err: &idemkit.StoreError{Op: string(m.method), Err: errLost}}
		}
	}
	w.net = keep
}

// skew returns the clock offset of the actor named name.
func (w *world) skew(name string) time.Duration {
	if a := w.atts[name]; a != nil {
		return a.c.spec.Skew
	}
	return 0
}

// handler is the application: it runs until the explorer says how it
// ends, or is frozen at its deadline.
func (w *world) handler(a *attempt) idemkit.Handler {
	return func(ctx context.Context) (*idemkit.Snapshot, error) {
		w.mu.Lock()
		r := &run{n: len(w.runs) + 1, att: a, ch: make(chan string, 1), parked: true}
		w.begin(r)
		w.mu.Unlock()
		how := <-r.ch
		w.mu.Lock()
		r.parked, r.returned = false, how
		w.mu.Unlock()
		switch how {
		case "201":
			return &idemkit.Snapshot{Status: 201, Body: []byte(r.tag())}, nil
		case "error":
			return nil, errHandler
		case "unknown":
			return nil, errUnknown
		}
		return nil, errStop
	}
}

// live reports whether r still runs: it has not returned and its
// invocation is not frozen (its deadline has not passed).
func (r *run) live(now time.Time) bool { return r.parked && now.Before(r.att.deadline) }

// operate runs the operator's tool once: list the indeterminate records,
// resolve the first; the caller holds w.mu.
func (w *world) operate(as idemkit.State) {
	o := &opRun{as: as}
	o.actor = w.actor(fmt.Sprintf("X%d", len(w.ops)+1))
	w.ops = append(w.ops, o)
	w.busy++
	w.logf("operator %s lists and resolves %s", o.name, as)
	go func() {
		ctx := context.WithValue(context.Background(), actorKey{}, o.name)
		now := time.Now()
		answer := func() string {
			// The listing is read at once (it only names the record; the
			// decision reads it again through the network).
			recs, _, err := w.inner.ListIndeterminate(ctx, "", "", 10, now)
			switch {
			case err != nil:
				return "list failed"
			case len(recs) == 0:
				return "nothing listed"
			}
			res := idemkit.Resolution{As: as, Operator: o.name, Reason: "checked"}
			if as == idemkit.StateCompleted {
				res.Snapshot = &idemkit.Snapshot{Status: 201, Body: []byte("op" + o.name)}
			}
			_, _, err = idemkit.Resolve(ctx, w.store, recs[0].ID, res, now)
			w.mu.Lock()
			defer w.mu.Unlock()
			switch {
			case err == nil:
				return "resolved"
			case errors.Is(err, idemkit.ErrMayBeRunning):
				return "may be running"
			case errors.Is(err, idemkit.ErrNotIndeterminate):
				if rec := w.record(now); rec != nil && rec.Resolution != nil && rec.Resolution.Operator == o.name && !w.closing {
					w.fail("own-write", "operator %s was told another writer changed the record first, but the record holds its own resolution", o.name)
				}
				return "changed by another"
			case errors.Is(err, idemkit.ErrStoreUnavailable):
				return "store error"
			}
			return "refused"
		}()
		w.mu.Lock()
		defer w.mu.Unlock()
		w.busy--
		o.done, o.answer = true, answer
		w.logf("operator %s: %s", o.name, answer)
	}()
}

// decidable reports whether the operator's tool lists an indeterminate
// record at now whose decision it would accept (a run that changes
// nothing is not explored); the caller holds w.mu.
func (w *world) decidable(now time.Time) bool {
	rec := w.record(now)
	return rec != nil && rec.State == idemkit.StateIndeterminate && !now.Before(rec.LeaseUntil.Add(time.Minute))
}

// An action the explorer can take in a state.
type action struct {
	label string
	fault bool
	do    func()
}

// enabled returns the actions of the current state, in a canonical order;
// the caller holds w.mu.
func (w *world) enabled() []action {
	var acts []action
	now := time.Now()
	canFault := w.faults < w.cfg.Faults
	for _, c := range w.clients {
		c := c
		switch n := len(c.atts); {
		case n == 0:
			acts = append(acts, action{label: "send " + c.spec.Name + "1", do: func() { w.start(c) }})
		case n <= c.spec.Retries && c.atts[n-1].done && retryable(c.atts[n-1].class):
			acts = append(acts, action{label: fmt.Sprintf("retry %s%d", c.spec.Name, n+1), do: func() { w.start(c) }})
		}
	}
	msgs := append([]*msg(nil), w.net...)
	sort.Slice(msgs, func(i, j int) bool { return msgs[i].id < msgs[j].id })
	for _, m := range msgs {
		m := m
		name := m.name()
		if !m.waiting {
			if m.copies > 0 {
				acts = append(acts, action{label: "land copy " + name, do: func() { w.deliver(m, "copy") }})
			}
			continue
		}
		acts = append(acts, action{label: "deliver " + name, do: func() { w.deliver(m, "deliver") }})
		if !canFault {
			continue
		}
		acts = append(acts, action{label: "lose " + name, fault: true, do: func() { w.deliver(m, "lose") }})
		if m.write {
			for _, how := range []string{"lose-answer", "hold", "duplicate"} {
				how := how
				acts = append(acts, action{label: how + " " + name, fault: true, do: func() { w.deliver(m, how) }})
			}
		}
	}
	for _, r := range w.runs {
		r := r
		if !r.live(now) {
			continue
		}
		for _, how := range []string{"201", "error", "unknown"} {
			how := how
			acts = append(acts, action{label: fmt.Sprintf("%s handler returns %s", r.att.name, how), do: func() {
				r.ch <- how
				w.logf("%s (%s) returns %s", r.tag(), r.att.name, how)
			}})
		}
	}
	if len(w.ops) < w.cfg.Operators && w.decidable(now) {
		for _, as := range []idemkit.State{idemkit.StateCompleted, idemkit.StateFailed} {
			as := as
			if rec := w.record(now); as == idemkit.StateFailed && now.Before(rec.LeaseUntil.Add(time.Minute+idemkit.MaxWriteDelay)) {
				continue
			}
			acts = append(acts, action{label: fmt.Sprintf("operator X%d resolves %s", len(w.ops)+1, as), do: func() { w.operate(as) }})
		}
	}
	if next, why := w.nextInstant(now); !next.IsZero() {
		// A nanosecond past the instant: the bubble fires the timers due
		// at it (deadlines) before the explorer wakes, whatever their order.
		d := next.Sub(now) + time.Nanosecond
		acts = append(acts, action{label: fmt.Sprintf("time +%s (%s)", d.Round(time.Millisecond), why), do: func() {
			w.logf("time passes %s, to %s", d.Round(time.Millisecond), why)
			w.mu.Unlock()
			time.Sleep(d)
			w.mu.Lock()
		}})
	}
	return acts
}

func retryable(class string) bool {
	switch class {
	case "409", "pending", "indeterminate", "store error", "claim unknown", "handler error", "outcome unknown", "timeout":
		return true
	}
	return false
}

// nextInstant returns the next instant at which something can change
// with time alone, and what it is: a lease's end by an instance's clock,
// when the operator's tool accepts a decision, a
// record's expiry, a replay window's end, a deadline; the caller holds
// w.mu.
func (w *world) nextInstant(now time.Time) (time.Time, string) {
	var best time.Time
	var why string
	add := func(t time.Time, what string) {
		if w.cfg.Horizon > 0 && t.After(w.epoch.Add(w.cfg.Horizon)) {
			return
		}
		if t.After(now) && (best.IsZero() || t.Before(best) || t.Equal(best) && what < why) {
			best, why = t, what
		}
	}
	if rec := w.record(now); rec != nil {
		for _, c := range w.clients {
			// Instant T on a clock skewed by s comes at true time T - s.
			if rec.State == idemkit.StateInFlight {
				add(rec.LeaseUntil.Add(-c.spec.Skew), "lease end by "+c.spec.Name)
			}
			add(rec.ReplayUntil.Add(-c.spec.Skew), "replay window end by "+c.spec.Name)
			add(rec.ExpiresAt.Add(-c.spec.Skew), "record expiry by "+c.spec.Name)
		}
		if w.cfg.Operators > 0 && (rec.State == idemkit.StateInFlight || rec.State == idemkit.StateIndeterminate) {
			grace := rec.LeaseUntil.Add(time.Minute)
			add(grace, "completed decision accepted")
			add(grace.Add(idemkit.MaxWriteDelay), "failed decision accepted")
			if rec.State == idemkit.StateInFlight {
				add(rec.LeaseUntil, "lease end by the operator")
			}
		}
	}
	for _, c := range w.clients {
		for _, a := range c.atts {
			if !a.done {
				add(a.deadline, a.name+"'s deadline")
			}
		}
	}
	for _, m := range w.net {
		if m.waiting && !m.deadline.IsZero() {
			add(m.deadline, m.id+" times out")
		}
	}
	return best, why
}

// deliver acts on message m: how is deliver, lose, lose-answer, hold,
// duplicate, or copy (a held or duplicated copy lands); the caller holds
// w.mu.
func (w *world) deliver(m *msg, how string) {
	if how != "deliver" && how != "copy" {
		w.faults++
	}
	var r result
	apply := how == "deliver" || how == "lose-answer" || how == "duplicate" || how == "copy"
	if apply {
		pre := w.record(m.now)
		r.v, r.err = m.apply()
		w.landed(m, pre, r, how == "copy")
	}
	w.logf("%s %s (sent at %s) -> %s", how, m.name(), w.rel(m.now), w.describeResult(m, r, apply))
	switch how {
	case "deliver", "duplicate":
	default:
		r = result{err: &idemkit.StoreError{Op: string(m.method), Err: errLost}}
	}
	if m.waiting {
		m.waiting, m.replied = false, true
		m.reply <- r
	}
	switch how {
	case "hold", "duplicate":
		m.copies = 1
	case "copy":
		m.copies = 0
	}
	if !m.waiting && m.copies == 0 {
		for i, x := range w.net {
			if x == m {
				w.net = append(w.net[:i], w.net[i+1:]...)
				break
			}
		}
	}
}

// describeResult writes the store's answer to m for a trace; the caller
// holds w.mu.
func (w *world) describeResult(m *msg, r result, applied bool) string {
	if !applied {
		return "not applied"
	}
	if r.err != nil {
		return "error: " + r.err.Error()
	}
	v, _ := r.v.(*idemkit.Record)
	switch {
	case m.write && v == nil:
		return "stored " + w.vl(m.rec.Version)
	case m.write && v.Version == m.rec.Version:
		return "met its own " + w.vl(v.Version)
	case m.write:
		return "stored nothing: met the " + describe(v) + " " + w.vl(v.Version)
	case m.method == faultstore.Get && v == nil:
		return "no record"
	case m.method == faultstore.Get:
		return describe(v) + " " + w.vl(v.Version)
	}
	return "ok"
}

// name is the message's name in an action: its id, method and change.
func (m *msg) name() string {
	if m.op != "" {
		return m.id + " " + string(m.method) + " " + m.op
	}
	return m.id + " " + string(m.method)
}

// describe writes a record for a trace.
func describe(rec *idemkit.Record) string {
	if rec == nil {
		return "no record"
	}
	return fmt.Sprintf("%s record of %s (body %s)", rec.State, rec.Owner, strings.TrimPrefix(rec.Fingerprint, "v1:"))
}

// settle waits until every goroutine of the world is blocked on the
// explorer: an operator's Resolve that pauses between two attempts of a
// write (on the bubble's clock) is let run its next attempt, the pause
// passing. The caller does not hold w.mu.
func (w *world) settle() {
	w.wait()
	for {
		w.mu.Lock()
		pausing := false
		for _, o := range w.ops {
			if !o.done && !w.calling(o.name) {
				pausing = true
			}
		}
		w.mu.Unlock()
		if !pausing {
			return
		}
		time.Sleep(time.Millisecond)
		w.wait()
	}
}

// calling reports whether actor waits for the answer of a call; the
// caller holds w.mu.
func (w *world) calling(actor string) bool {
	for _, m := range w.net {
		if m.sender == actor && m.waiting {
			return true
		}
	}
	return false
}

// teardown ends every goroutine of the world: calls fail, handlers stop,
// nothing is retried. No guarantee is checked any more.
func (w *world) teardown() {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	for i := 0; ; i++ {
		w.wait()
		w.mu.Lock()
		if w.busy == 0 {
			w.mu.Unlock()
			return
		}
		if i > 1000 {
			w.mu.Unlock()
			panic("explore: the world does not end")
		}
		for _, m := range w.all {
			if !m.replied {
				m.replied = true
				m.reply <- result{err: &idemkit.StoreError{Op: string(m.method), Err: errStop}}
			}
		}
		w.net = nil
		for _, r := range w.runs {
			if r.parked && r.returned == "" && len(r.ch) == 0 {
				r.ch <- "stop"
			}
		}
		w.mu.Unlock()
		// Resolve pauses between its attempts on the bubble's clock.
		time.Sleep(time.Millisecond)
	}
}
