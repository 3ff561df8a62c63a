package idemkit

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/idemkit/idemkit/clock"
	"github.com/idemkit/idemkit/idemkey"
	"github.com/idemkit/idemkit/internal/recordid"
	"github.com/idemkit/idemkit/internal/retryafter"
	"github.com/idemkit/idemkit/internal/setting"
	"github.com/idemkit/idemkit/internal/usage"
	"github.com/idemkit/idemkit/observe"
)

// Config configures a [Guard]. Only Store is required; every other zero
// value is documented and safe.
type Config struct {
	// Store keeps the records. Required.
	Store Store
	// Policy applies to every operation not named in Operations.
	Policy Policy
	// Operations overrides Policy for the named operations. An entry
	// replaces Policy whole; its zero fields take the package defaults.
	Operations map[string]Policy
	// AccountWide makes one key name one request across all operations of a
	// tenant: the operation is left out of the record ID and a reuse of the
	// key for another operation fails with ErrOperationMismatch.
	AccountWide bool
	// Observer receives every outcome. Nil: none, but the adapters still
	// log store failures through slog.Default (see Guard.Observed).
	Observer observe.Observer
	// Clock is the time the guard reads and the timers it sets. Nil: the
	// system clock.
	Clock clock.Clock
	// NewToken returns a fresh owner token. Nil: 128 random bits
	// (crypto/rand.Text: 26 characters, 10 fewer than a UUID's, sent twice
	// in each write of a fresh request). Tokens
	// must never repeat: two requests given the same token both own the
	// key, and both run.
	NewToken func() string
	// WriteAttempts bounds the attempts of each write made after the
	// handler ran: storing its outcome, freeing the key or keeping it
	// (ErrOutcomeUnknown). Zero: 3.
	WriteAttempts int
	// WriteTimeout bounds each attempt of a store write made after the
	// handler ran (completion, release), which run even when the request's
	// context is done. Zero: 5 s.
	WriteTimeout time.Duration
	// ClaimAttempts bounds the attempts of a claim that fails, within the
	// request's deadline. A failed attempt's answer may have been lost.
	// Every attempt uses the same owner token, so an applied one is
	// recognised as ours. Zero: 3.
	ClaimAttempts int
	// ClaimBackoff is the pause before the second claim attempt; the n-th
	// waits n times as long. Zero: 50 ms.
	ClaimBackoff time.Duration
	// ExecutionSecret keys the hash behind ExecutionID. Without it the
	// execution identity can be computed by anyone who knows the tenant,
	// operation and key; with it (at least 16 random bytes, the same in
	// every instance and kept for the record retention) it cannot.
	ExecutionSecret []byte
}

// Handler executes a guarded request and returns the response to send. Its
// Snapshot must hold only what may be replayed (allow-listed headers).
// An error means the request did not reach a deterministic outcome. The
// claim is then released, unless the error wraps [ErrOutcomeUnknown], and
// the error is returned to the caller.
type Handler func(ctx context.Context) (*Snapshot, error)

// Request identifies a guarded request.
type Request struct {
	Scope Scope
	// Fingerprint is the request's versioned fingerprint ("v2:sha256:…").
	Fingerprint string
	// FingerprintAs, when set, computes the request's fingerprint under an
	// older version, for records stored before a version change. Without it
	// a stored fingerprint of another version is a mismatch.
	FingerprintAs func(version string) (string, error)
	// Resource names the concrete resource the request acts on, where the
	// scope may not: an operation named by a route template covers many.
	// The adapters give the concrete path, and the query as the
	// fingerprint reads it. It is part of the request's [ExecutionID]
	// only, not of its record's identity, which the fingerprint guards.
	// Empty: the scope alone names the request.
	Resource string
	// IgnoreKeyTime skips the policy's UUIDv7 key-age check (ErrKeyExpired)
	// for this request. Set it when the key was not minted by the sender
	// for its first attempt: a business id taken from a message body (an
	// order id), whose age says nothing about when the request was first
	// sent. lambda/batch and lambda/event set it unless told otherwise.
	IgnoreKeyTime bool
}

// Guard runs handlers at most once per scope. It is safe for concurrent use.
type Guard struct {
	cfg               Config
	defaultPolicy     Policy            // Config.Policy, defaults filled in
	operationPolicies map[string]Policy // Config.Operations, defaults filled in
	now               func() time.Time
	newToken          func() string
	observer          observe.Observer // nil: none
	writeAttempts     int              // attempts of each write after the handler ran
	writeTimeout      time.Duration    // timeout of each write after the handler ran
	claimAttempts     int              // attempts of a failing claim
	claimBackoff      time.Duration    // pause before the second claim attempt
	claims            writer           // the request's writes: claims, marks
	writes            writer           // the writes made after the handler ran
	renewals          writer           // lease renewals: one attempt each
}

// Defaults of the zero Config fields.
const (
	defaultClaimAttempts = 3
	defaultClaimBackoff  = 50 * time.Millisecond
	defaultWriteAttempts = 3
	defaultWriteTimeout  = 5 * time.Second
	// writeBackoff is the pause before the second attempt of a write after
	// the handler ran; the n-th waits n times as long.
	writeBackoff = 50 * time.Millisecond
)

// maxRenewalSpan bounds the time a record is kept for the renewals of its
// lease beyond the record retention.
const maxRenewalSpan = 10 * 365 * 24 * time.Hour

// reclaims bounds how many times a lost claim is made again when the
// record that blocked it changed under it (completed, released or marked
// between the claim and a follow-up write). Past it the client is told to
// come back (409).
const reclaims = 2

// New returns a Guard for cfg.
func New(cfg Config) (*Guard, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: Config.Store is nil", ErrInvalidConfig)
	}
	g := &Guard{cfg: cfg, defaultPolicy: cfg.Policy.withDefaults(), now: time.Now, newToken: cfg.NewToken, observer: cfg.Observer,
		writeAttempts: setting.Or(cfg.WriteAttempts, defaultWriteAttempts), writeTimeout: setting.Or(cfg.WriteTimeout, defaultWriteTimeout),
		claimAttempts: setting.Or(cfg.ClaimAttempts, defaultClaimAttempts), claimBackoff: setting.Or(cfg.ClaimBackoff, defaultClaimBackoff)}
	if err := g.defaultPolicy.check(); err != nil {
		return nil, fmt.Errorf("%w: Config.Policy: %v", ErrInvalidConfig, err)
	}
	if len(cfg.Operations) > 0 {
		g.operationPolicies = make(map[string]Policy, len(cfg.Operations))
		for op, p := range cfg.Operations {
			g.operationPolicies[op] = p.withDefaults()
			if err := g.operationPolicies[op].check(); err != nil {
				return nil, fmt.Errorf("%w: Config.Operations[%q]: %v", ErrInvalidConfig, op, err)
			}
		}
	}
	if cfg.Clock != nil {
		g.now = cfg.Clock.Now
	}
	if g.newToken == nil {
		g.newToken = rand.Text
	}
	g.setWriters()
	return g, nil
}

// setWriters sets the writers of g's store calls from its settings.
func (g *Guard) setWriters() {
	now := func() time.Time { return g.now() }
	g.claims = writer{store: g.cfg.Store, now: now, attempts: max(g.claimAttempts, 1), backoff: g.claimBackoff, sleep: g.sleep}
	g.writes = writer{store: g.cfg.Store, now: now, attempts: max(g.writeAttempts, 1), backoff: writeBackoff,
		timeout: g.writeTimeout, span: g.writeSpan(), sleep: g.sleep}
	g.renewals = writer{store: g.cfg.Store, now: now, attempts: 1, sleep: g.sleep}
}

// Policy returns the policy, defaults filled in, that applies to operation.
func (g *Guard) Policy(operation string) Policy {
	if p, ok := g.operationPolicies[operation]; ok {
		return p
	}
	return g.defaultPolicy
}

// Refuse reports to the observer a request refused before Do, for a reason
// such as an invalid key or body, so that every refusal is observed. It
// stores nothing.
func (g *Guard) Refuse(ctx context.Context, scope Scope, err error) {
	if g.observer == nil {
		return
	}
	now := g.now()
	g.observer.Observe(ctx, observe.Event{Kind: observe.EventRefused, Tenant: scope.Tenant, Operation: scope.Operation, Key: scope.Key, Err: err, Started: now})
}

// Do runs h at most once for req.Scope and returns the response to send.
//
// The first request with a scope claims it, runs h, and stores h's response
// when its status is cacheable; replayed is false. A later request with the
// same scope gets the stored response, replayed true, without running h.
// When h cannot be run or replayed, Do returns an error and h does not run.
// The errors are checked in this order:
//
//   - ErrTenantMissing (ErrTenantTooLong included), a key error: refused
//     before the store.
//   - ErrKeyExpired: the key is a UUIDv7 older than the record retention
//     (plus KeyClockSkew), req.IgnoreKeyTime is not set, and no record of
//     it is live. For such a key the record is read first; a live one wins
//     over the key's age and is answered by the errors below, or replayed.
//     Nothing is stored for a refused key. Other keys are not read before
//     their claim.
//   - ErrStoreUnavailable: the claim, or that read, could not be made. The
//     claim is tried again with the same owner token, so that a claim whose
//     answer was lost is recognised as ours, and then freed. When freeing
//     it fails too, the error is also ErrClaimUnknown, and a claim may hold
//     the key until its lease ends.
//   - ErrRecordInvalid: the store refused the record, and a retry cannot
//     succeed.
//   - ErrOperationMismatch (account-wide keys), then ErrFingerprintMismatch:
//     the key was used for another request, even one still in flight.
//   - *ConflictError (ErrInFlight): another request holds a live lease.
//   - *ConflictError (ErrOutcomePending): a lease ended without an outcome
//     under FailClosed a moment ago, and its run may still complete: its
//     late completion replaces the record, and a retry replays it. The
//     request is told to come back, until the lease's end plus
//     LeaseMargin and the time the run's completion writes may take
//     (WriteAttempts × WriteTimeout and the pauses between them, 17.15 s
//     by default).
//   - ErrIndeterminate: a lease ended without an outcome under FailClosed
//     longer ago than that, or the handler reported ErrOutcomeUnknown: an
//     operator resolves the key.
//   - *OutcomeError: completed, but the response cannot be replayed.
//
// h runs with [ExecutionID] set in its context. Its lease is renewed while
// it runs when the request has no deadline or the policy sets Heartbeat.
// When h returns an error, the claim is released so that a retry can run,
// and Do returns h's error, joined with any release error. When that error
// wraps [ErrOutcomeUnknown], the claim is kept instead, and the record
// becomes indeterminate at once. When h panics or calls runtime.Goexit, the
// claim is released and the panic goes on with its own stack. When the
// outcome cannot be stored after h ran, Do still returns h's response and
// reports observe.EventCompletionFailed. The record is then left to its lease
// policy.
func (g *Guard) Do(ctx context.Context, req Request, h Handler) (snap *Snapshot, replayed bool, err error) {
	c := g.newCall(ctx, req)
	if err = c.refused(); err != nil {
		c.emit(observe.EventRefused, 0, err)
		return nil, false, err
	}
	rec := c.record()
	if expired := c.policy.checkKeyTime(c.req.Scope.Key, c.start); expired != nil && !c.req.IgnoreKeyTime {
		return c.claim(rec, expired, h)
	}
	return c.claim(rec, nil, h)
}

// call is the state of one Do: the request, its policy and its event.
type call struct {
	g      *Guard
	ctx    context.Context
	req    Request
	policy Policy
	start  time.Time
	usage  *usage.Acc
	ev     observe.Event
}

func (g *Guard) newCall(ctx context.Context, req Request) *call {
	start := g.now()
	ctx, acc := withUsage(ctx)
	return &call{g: g, ctx: ctx, req: req, policy: g.Policy(req.Scope.Operation), start: start, usage: acc,
		ev: observe.Event{Tenant: req.Scope.Tenant, Operation: req.Scope.Operation, Key: req.Scope.Key, Started: start}}
}

// emit reports the call's outcome to the observer.
func (c *call) emit(kind observe.EventKind, status int, err error) {
	if c.g.observer == nil {
		return
	}
	c.ev.Kind, c.ev.Status, c.ev.Err = kind, status, err
	c.ev.Duration = c.g.now().Sub(c.start)
	c.ev.Usage = c.usage.Load()
	c.g.observer.Observe(c.ctx, c.ev)
}

// refused checks what is refused before the store.
func (c *call) refused() error {
	switch {
	case c.req.Scope.Tenant == "":
		return ErrTenantMissing
	case len(c.req.Scope.Tenant) > recordid.MaxTenantLen:
		return ErrTenantTooLong
	case c.req.Scope.Key == "":
		return idemkey.ErrEmpty
	}
	return nil
}

// record returns the in_flight record the call claims, with a fresh owner
// token.
func (c *call) record() *Record {
	rec := &Record{
		ID:          c.req.Scope.ID(c.g.cfg.AccountWide),
		Scope:       c.req.Scope,
		State:       StateInFlight,
		Fingerprint: c.req.Fingerprint,
		Owner:       c.g.newToken(),
		LeaseUntil:  c.policy.leaseUntil(c.ctx, c.start),
		ReplayUntil: c.start.Add(c.policy.ReplayWindow),
		ExpiresAt:   c.start.Add(c.policy.RecordRetention),
		CreatedAt:   c.start,
	}
	// The record outlives every lease it can hold, the renewed ones too, by
	// expiryMargin, the clock skew a record's life tolerates: an in_flight
	// record that expired would free the key while its handler still runs,
	// and an instance whose clock is ahead must still find the record while
	// the owner's run may go on. A renewal span over maxRenewalSpan (a
	// MaxRenewals meant as "no bound") is not added: the renewals then stop
	// short of the record's expiry instead.
	last := rec.LeaseUntil
	if dl, ok := c.ctx.Deadline(); ok && dl.After(last) {
		// A lease set by Policy.Lease may end before the handler's
		// deadline: the record must outlive the handler, not its lease.
		last = dl
	}
	every := c.policy.heartbeat(c.ctx, rec.LeaseUntil.Sub(c.start))
	if every > 0 && int64(c.policy.MaxRenewals) <= int64(maxRenewalSpan/every) {
		last = last.Add(time.Duration(c.policy.MaxRenewals) * every)
	}
	if end := last.Add(c.policy.expiryMargin()); rec.ExpiresAt.Before(end) {
		rec.ExpiresAt = end
	}
	return rec
}

// claim claims rec's key and runs h, or answers from the record that
// holds the key: a replay, a refusal, or a claim in its place (a failed
// record, a stale lease under Takeover), which next allows only in place
// of the version judged here. A key older than the record retention
// (expired, its ErrKeyExpired) is read first, and claimed only in place of
// a live record: with none it is refused and nothing is stored. A record
// that keeps changing under us is judged again at most reclaims times;
// then the client is told to come back.
func (c *call) claim(rec *Record, expired error, h Handler) (*Snapshot, bool, error) {
	version := &versions{owner: rec.Owner}
	ch := change{op: opClaim, rec: rec, takeover: c.policy.OnStaleLease == Takeover, judged: expired != nil, version: version}
	var cur, replaced *Record
	var err error
	if expired != nil {
		// The record is read first, and judged.
		cur, err = read(c.ctx, c.g.cfg.Store, rec.ID)
		if err == nil {
			err = errHeld
		}
	} else {
		cur, replaced, err = c.g.claims.apply(c.ctx, nil, ch)
	}
	for attempt := 0; ; attempt++ {
		if err == nil {
			return c.won(cur, replaced, version, h)
		}
		if !errors.Is(err, errHeld) || free(cur, c.start) {
			return nil, false, c.unclaimed(rec, ch, cur, expired, err)
		}
		snap, again, rerr := c.g.classify(c.ctx, c.req, c.policy, cur, c.start, version)
		if again != nil && attempt >= reclaims {
			// The record keeps changing under us: let the client come back.
			snap, again, rerr = nil, nil, &ConflictError{RetryAfter: time.Second}
		}
		if again == nil {
			c.emitRefusal(snap, rerr)
			if rerr != nil {
				return nil, false, rerr
			}
			return snap, true, nil
		}
		ch.replace = ""
		if again.replace {
			ch.replace = cur.Version
		} else {
			cur = again.cur
		}
		cur, replaced, err = c.g.claims.apply(c.ctx, cur, ch)
	}
}

// won runs h holding the claim cur, reporting first the takeover of the
// live in_flight record it replaced, if any.
func (c *call) won(cur, replaced *Record, version *versions, h Handler) (*Snapshot, bool, error) {
	if p := replaced; p != nil && p.State == StateInFlight && p.Owner != cur.Owner && p.Live(c.start) {
		c.emit(observe.EventTakeover, 0, nil)
	}
	return c.execute(cur, version, h)
}

// unclaimed answers a claim of rec (made as ch) that neither won nor met a
// record to judge, err saying why: the record kept changing, the store
// failed (the claim is then freed, see claimFailed), or the record read for
// an old key (expired, its ErrKeyExpired) is free, cur: only a claim that
// may replace the record judged alone is refused by a free record.
func (c *call) unclaimed(rec *Record, ch change, cur *Record, expired, err error) error {
	switch {
	case errors.Is(err, errChanging):
		err = &ConflictError{RetryAfter: time.Second}
		c.emitRefusal(nil, err)
	case errors.Is(err, errHeld) && free(cur, c.start):
		err = expired
		c.emit(observe.EventRefused, 0, err)
	case expired != nil && ch.replace == "" && !errors.Is(err, errHeld):
		// The old key's read failed: nothing was written.
		c.emit(c.storeFailure(err), 0, err)
	default:
		err = c.g.claimFailed(c.ctx, rec, ch.replace, ch.version, err)
		c.emit(c.storeFailure(err), 0, err)
	}
	return err
}

// retry is what a claim that a record kept does next: claim in place of
// the record judged (replace), or judge again from cur, the record as it
// is now (nil: none is stored).
type retry struct {
	replace bool
	cur     *Record
}

// classify turns the live record ex that kept a claim into a replay or an
// error, or into what to do next (next not nil): replace ex (a failed
// record, a stale lease under Takeover) or read the record again (it
// changed under us). The operation and the fingerprint are compared before
// the state: a record of another request is a mismatch whatever its
// state, never a key to claim again (failed) or take over (a stale lease).
func (g *Guard) classify(ctx context.Context, req Request, pol Policy, ex *Record, now time.Time, version *versions) (snap *Snapshot, next *retry, err error) {
	if g.cfg.AccountWide && ex.Scope.Operation != req.Scope.Operation {
		return nil, nil, fmt.Errorf("%w: first used for %q", ErrOperationMismatch, ex.Scope.Operation)
	}
	if !fingerprintsMatch(ex.Fingerprint, req) {
		return nil, nil, ErrFingerprintMismatch
	}
	switch ex.State {
	case StateInFlight:
		return g.inFlight(ctx, pol, ex, now, version)
	case StateIndeterminate:
		return nil, nil, g.indeterminate(pol, ex, now)
	case StateCompleted:
		snap, err = completed(ex, now)
		return snap, nil, err
	case StateFailed:
		return nil, &retry{replace: true}, nil
	}
	return nil, nil, fmt.Errorf("%w: unknown state %q", ErrCorruptRecord, ex.State)
}

// inFlight classifies an in_flight record that kept a claim: a live lease
// is a conflict; an ended one is taken over (Takeover) or marked
// indeterminate (FailClosed).
func (g *Guard) inFlight(ctx context.Context, pol Policy, ex *Record, now time.Time, version *versions) (snap *Snapshot, next *retry, err error) {
	if !ex.LeaseExpired(now) {
		wait := retryafter.Duration(ex.LeaseUntil.Sub(now))
		if pol.MaxRetryAfter > 0 {
			// Whole seconds never above the cap, but at least one.
			wait = min(wait, max(pol.MaxRetryAfter.Truncate(time.Second), time.Second))
		}
		return nil, nil, &ConflictError{RetryAfter: wait}
	}
	if pol.OnStaleLease == Takeover {
		return nil, &retry{replace: true}, nil
	}
	cur, _, err := g.claims.apply(ctx, ex, change{op: opMarkStale, owner: ex.Owner, version: version})
	switch {
	case err == nil:
		return nil, nil, g.indeterminate(pol, cur, now)
	case errors.Is(err, ErrNotOwner), errors.Is(err, errChanging):
		// Completed, released or marked meanwhile: judge it again.
		return nil, &retry{cur: cur}, nil
	default:
		return nil, nil, err
	}
}

// indeterminate returns the error of the indeterminate record ex at now: a
// *ConflictError (ErrOutcomePending) while a run whose lease ran out (CauseLeaseExpired) may
// still complete, until pendingUntil; ErrIndeterminate, an operator's
// case, after it and for every other cause.
func (g *Guard) indeterminate(pol Policy, ex *Record, now time.Time) error {
	until := g.pendingUntil(pol, ex)
	if ex.Cause != CauseLeaseExpired || !now.Before(until) {
		return ErrIndeterminate
	}
	wait := retryafter.Duration(until.Sub(now))
	if pol.MaxRetryAfter > 0 {
		wait = min(wait, max(pol.MaxRetryAfter.Truncate(time.Second), time.Second))
	}
	return &ConflictError{Reason: ErrOutcomePending, RetryAfter: wait, Until: until}
}

// pendingUntil is when the run of a record whose lease ran out can no
// longer be expected to complete: a run stops by its lease's end (its
// deadline's, or told ErrLeaseLost, with renewals), then stores its
// outcome within writeSpan; LeaseMargin is the clock skew a lease
// tolerates. A run that outlives its lease longer (a Policy.Lease shorter
// than the handler) still completes the record, but requests meanwhile
// wait for an operator.
func (g *Guard) pendingUntil(pol Policy, ex *Record) time.Time {
	return ex.LeaseUntil.Add(pol.LeaseMargin + g.writeSpan())
}

// writeSpan bounds the writes of a run after its handler: WriteAttempts
// of WriteTimeout each, and the pauses between them.
func (g *Guard) writeSpan() time.Duration {
	n := time.Duration(max(g.writeAttempts, 1))
	return n*g.writeTimeout + n*(n-1)/2*writeBackoff
}

// completed returns the snapshot of a completed record to replay, or the
// *OutcomeError that says why it cannot be replayed.
func completed(ex *Record, now time.Time) (*Snapshot, error) {
	s := ex.Snapshot
	if s == nil {
		return nil, fmt.Errorf("%w: completed record %q has no snapshot", ErrCorruptRecord, ex.ID)
	}
	if !s.Omitted && now.Before(ex.ReplayUntil) {
		return s, nil
	}
	reason := ErrReplayWindowPassed
	if s.Omitted && now.Before(ex.ReplayUntil) {
		reason = ErrSnapshotOmitted
	}
	return nil, &OutcomeError{Reason: reason, Status: s.Status, Location: s.Header.Get("Location"), CompletedAt: ex.CompletedAt}
}

// fingerprintsMatch compares the stored fingerprint with the request's,
// under the stored fingerprint's version when they differ.
func fingerprintsMatch(stored string, req Request) bool {
	if stored == req.Fingerprint {
		return true
	}
	sv, rv := fingerprintVersion(stored), fingerprintVersion(req.Fingerprint)
	if sv == rv || sv == "" || req.FingerprintAs == nil {
		return false
	}
	fp, err := req.FingerprintAs(sv)
	return err == nil && fp == stored
}

func fingerprintVersion(fp string) string {
	v, _, ok := strings.Cut(fp, ":")
	if !ok {
		return ""
	}
	return v
}

// emitRefusal reports a replay (err nil) or the reason a lost claim gives.
func (c *call) emitRefusal(snap *Snapshot, err error) {
	status := 0
	var oe *OutcomeError
	switch {
	case err == nil:
		status = snap.Status
	case errors.As(err, &oe):
		status = oe.Status
	}
	kind := eventFor(err)
	if kind == observe.EventStoreError {
		kind = c.storeFailure(err)
	}
	c.emit(kind, status, err)
}

// storeFailure returns the event kind of a store call that failed before
// the handler ran: observe.EventCancelled when the caller cancelled the request
// and the store's error is that cancellation (nothing of the request is
// left held), else observe.EventStoreError. A claim that could not be freed
// (ErrClaimUnknown) is a store failure even then.
func (c *call) storeFailure(err error) observe.EventKind {
	if callerCancelled(c.ctx, err) {
		return observe.EventCancelled
	}
	return observe.EventStoreError
}

// eventFor returns the event kind of a lost claim's answer: a replay when
// err is nil, else the kind of the refusal.
func eventFor(err error) observe.EventKind {
	var oe *OutcomeError
	switch {
	case err == nil:
		return observe.EventReplayed
	case errors.Is(err, ErrFingerprintMismatch), errors.Is(err, ErrOperationMismatch):
		return observe.EventMismatch
	case errors.Is(err, ErrInFlight), errors.Is(err, ErrOutcomePending):
		return observe.EventConflict
	case errors.Is(err, ErrIndeterminate):
		return observe.EventIndeterminate
	case errors.As(err, &oe):
		return observe.EventOutcome
	}
	return observe.EventStoreError
}

// errHandlerAborted is reported when the handler neither returned nor
// completed: it panicked or called runtime.Goexit.
var errHandlerAborted = errors.New("idemkit: handler panicked or called runtime.Goexit")

// run is a claim held while its handler runs.
type run struct {
	claim   *Record   // as claimed
	version *versions // the versions of the run's writes
	mu      sync.Mutex
	cur     *Record // as last written by the run: the version its next write replaces
}

func (r *run) get() *Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cur
}

func (r *run) set(rec *Record) {
	r.mu.Lock()
	r.cur = rec
	r.mu.Unlock()
}

// execute runs h holding rec's claim, then stores, releases or keeps the
// claim. Every exit of h frees the key: the release for a panic or
// runtime.Goexit runs in a deferred call that does not recover, so a panic
// goes on with the handler's own stack.
func (c *call) execute(rec *Record, version *versions, h Handler) (*Snapshot, bool, error) {
	r := &run{claim: rec, cur: rec, version: version}
	hctx := withExecution(c.ctx, c.g.cfg.ExecutionSecret, rec.Scope, c.req.Resource)
	var lost func()
	if c.policy.heartbeat(c.ctx, rec.LeaseUntil.Sub(c.start)) > 0 {
		// A renewed run can outlive its lease: under Takeover another
		// request may then take the key over and run it again, under
		// FailClosed an operator may resolve it (failed: a retry runs it
		// again). It is told to stop first.
		var cancel context.CancelCauseFunc
		hctx, cancel = context.WithCancelCause(hctx)
		defer cancel(nil)
		lost = func() { cancel(ErrLeaseLost) }
	}
	stop := c.g.renew(c.ctx, r, c.policy, c.start, lost)
	hstart := c.g.now()
	returned := false
	defer func() {
		stop()
		if !returned {
			c.ev.Handler = c.g.now().Sub(hstart)
			c.emit(observe.EventReleased, 0, errors.Join(errHandlerAborted, c.g.release(c.ctx, r)))
		}
	}()
	snap, herr := h(hctx)
	returned = true
	c.ev.Handler = c.g.now().Sub(hstart)
	stop()
	if herr != nil && lost != nil && errors.Is(context.Cause(hctx), ErrLeaseLost) {
		// A handler that stopped when told returns ctx.Err(), which says
		// cancelled, not why: the caller and the Observer are told why.
		if !errors.Is(herr, ErrLeaseLost) {
			herr = fmt.Errorf("%w (%w)", herr, ErrLeaseLost)
		}
		if c.policy.OnStaleLease == FailClosed && !errors.Is(herr, ErrOutcomeUnknown) {
			// Stopped part way: under FailClosed the key is kept, not
			// freed for a run that could repeat an effect.
			herr = fmt.Errorf("%w (%w)", herr, ErrOutcomeUnknown)
		}
	}
	return c.settle(r, snap, herr)
}

// settle stores the handler's outcome, or frees or keeps the claim.
func (c *call) settle(r *run, snap *Snapshot, herr error) (*Snapshot, bool, error) {
	if herr == nil && snap == nil {
		herr = errors.New("idemkit: handler returned neither a response nor an error")
	}
	switch {
	case herr != nil && errors.Is(herr, ErrOutcomeUnknown):
		if kerr := c.g.keep(c.ctx, r); kerr != nil {
			herr = errors.Join(herr, kerr)
		}
		c.emit(observe.EventOutcomeUnknown, 0, herr)
		return nil, false, herr
	case herr != nil:
		if relErr := c.g.release(c.ctx, r); relErr != nil {
			herr = errors.Join(herr, relErr)
		}
		c.emit(observe.EventReleased, 0, herr)
		return nil, false, herr
	case snap.Status < 100 || snap.Status > 999 || !c.policy.Cacheable(snap.Status):
		relErr := c.g.release(c.ctx, r)
		c.emit(observe.EventReleased, snap.Status, relErr)
		return snap, false, nil
	}
	if cerr := c.g.runWrite(c.ctx, r, change{op: opComplete, snap: snap, completedAt: c.g.now()}); cerr != nil {
		c.emit(observe.EventCompletionFailed, snap.Status, cerr)
		return snap, false, nil
	}
	c.emit(observe.EventExecuted, snap.Status, nil)
	return snap, false, nil
}

// claimFailed answers a claim of rec whose writes all failed with err (the
// claim was made in place of the record with Version replace, or created
// when replace is empty): one may have landed, with its answer lost, or
// may still land. The key is freed like a run's release: a tombstone in
// place of our claim, or of no record, which no copy of the claim can
// replace. A record of another stays, and no copy of a Create can replace
// it, nor a copy of a Replace once it is not the version replaced. When
// the key cannot be freed, the error is a *ClaimUnknownError.
func (g *Guard) claimFailed(ctx context.Context, rec *Record, replace string, version *versions, err error) error {
	if final(err) {
		// Nothing was written, and trying again gives the same answer.
		return err
	}
	// The key is freed even when the request is done, as a run's release.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.writeTimeout)
	defer cancel()
	cur, relErr := read(ctx, g.cfg.Store, rec.ID)
	if relErr == nil {
		cur, _, relErr = g.claims.apply(ctx, cur, change{op: opRelease, rec: rec, version: version})
		switch {
		case relErr == nil:
			// Our tombstone is stored: no copy of the claim can land.
			return err
		case errors.Is(relErr, ErrNotOwner) && (replace == "" || cur.Version != replace):
			return err
		case errors.Is(relErr, ErrNotOwner):
			relErr = fmt.Errorf("%w: the record a copy of this claim replaces is still stored", relErr)
		}
	}
	return &ClaimUnknownError{LeaseUntil: rec.LeaseUntil, Err: errors.Join(err, relErr)}
}

// sleep waits d, or less when ctx's deadline comes first; it reports false,
// at once, when ctx is done or its deadline comes before d has passed.
func (g *Guard) sleep(ctx context.Context, d time.Duration) bool {
	if dl, ok := ctx.Deadline(); ok && g.until(dl) < d {
		return false
	}
	done, t := g.after(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-done:
		return true
	}
}

// keep turns r's claim indeterminate at once: the handler reported that
// its outcome is unknown. A refusal (the claim was taken over, or marked by
// a retry meanwhile) leaves the record as it is.
func (g *Guard) keep(ctx context.Context, r *run) error {
	err := g.runWrite(ctx, r, change{op: opMarkUnknown})
	if errors.Is(err, ErrNotOwner) {
		return nil
	}
	return err
}

// release frees r's claim.
func (g *Guard) release(ctx context.Context, r *run) error {
	return g.runWrite(ctx, r, change{op: opRelease})
}

// runWrite makes r's change c after its handler ran (complete, release,
// mark unknown): it is tried up to WriteAttempts times, each bounded by
// WriteTimeout, all within writeSpan, with a context that survives the
// request's cancellation. A refusal (the claim is no longer r's) is an
// error that is ErrNotOwner.
func (g *Guard) runWrite(ctx context.Context, r *run, c change) error {
	c.rec, c.version = r.claim, r.version
	cur, _, err := g.writes.apply(context.WithoutCancel(ctx), r.get(), c)
	switch {
	case err == nil:
		r.set(cur)
		return nil
	case errors.Is(err, ErrNotOwner), errors.Is(err, errChanging):
		return storeErr(c.op.String(), err)
	}
	return err
}

// afterFunc sets a timer on the guard's clock.
func (g *Guard) afterFunc(d time.Duration, f func()) clock.Timer {
	if g.cfg.Clock != nil {
		return g.cfg.Clock.AfterFunc(d, f)
	}
	return time.AfterFunc(d, f)
}

// after returns a channel closed once d has passed on the guard's clock,
// and the timer behind it.
func (g *Guard) after(d time.Duration) (<-chan struct{}, clock.Timer) {
	c := make(chan struct{})
	return c, g.afterFunc(d, func() { close(c) })
}

// until returns the time left before t on the guard's clock. A context
// deadline is on the same clock: the system's, or the Clock's own.
func (g *Guard) until(t time.Time) time.Duration {
	if g.cfg.Clock != nil {
		return t.Sub(g.cfg.Clock.Now())
	}
	return time.Until(t)
}

// withUsage returns ctx carrying the usage of a new guarded request.
func withUsage(ctx context.Context) (context.Context, *usage.Acc) { return usage.With(ctx) }

// Observed reports whether g has an Observer. Without one, the adapters log
// store failures through slog.Default, so that a misconfigured store is
// visible in the logs of the first request.
func (g *Guard) Observed() bool { return g.observer != nil }
