package idemkit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
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
	Observer Observer
	// Now returns the current time. Nil: time.Now.
	Now func() time.Time
	// NewToken returns a fresh owner token. Nil: a random UUID.
	NewToken func() string
	// CompleteAttempts bounds the attempts of each write made after the
	// handler ran: storing its outcome, or freeing the key. Zero: 3.
	CompleteAttempts int
	// WriteTimeout bounds each store write made after the handler ran
	// (completion, release), which run even when the request's context is
	// done. Zero: 5 s.
	WriteTimeout time.Duration
}

// Handler executes a guarded request and returns the response to send. Its
// Snapshot must hold only what may be replayed (allow-listed headers).
// Returning an error means the request did not reach a deterministic
// outcome: the claim is released and the error is returned to the caller.
type Handler func(ctx context.Context) (*Snapshot, error)

// Request identifies a guarded request.
type Request struct {
	Scope Scope
	// Fingerprint is the request's versioned fingerprint ("v1:sha256:…").
	Fingerprint string
	// FingerprintAs, when set, computes the request's fingerprint under an
	// older version, for records stored before a version change. Without it
	// a stored fingerprint of another version is a mismatch.
	FingerprintAs func(version string) (string, error)
}

// Guard runs handlers at most once per scope. It is safe for concurrent use.
type Guard struct {
	cfg  Config
	pol  Policy
	ops  map[string]Policy
	now  func() time.Time
	tok  func() string
	obs  Observer
	max  int
	wait time.Duration
}

// New returns a Guard for cfg.
func New(cfg Config) (*Guard, error) {
	if cfg.Store == nil {
		return nil, errors.New("idemkit: Config.Store is nil")
	}
	g := &Guard{cfg: cfg, pol: cfg.Policy.withDefaults(), now: cfg.Now, tok: cfg.NewToken, obs: cfg.Observer, max: cfg.CompleteAttempts, wait: cfg.WriteTimeout}
	if len(cfg.Operations) > 0 {
		g.ops = make(map[string]Policy, len(cfg.Operations))
		for op, p := range cfg.Operations {
			g.ops[op] = p.withDefaults()
		}
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.tok == nil {
		g.tok = uuid.NewString
	}
	if g.max <= 0 {
		g.max = 3
	}
	if g.wait <= 0 {
		g.wait = 5 * time.Second
	}
	return g, nil
}

// Policy returns the policy, defaults filled in, that applies to operation.
func (g *Guard) Policy(operation string) Policy {
	if p, ok := g.ops[operation]; ok {
		return p
	}
	return g.pol
}

// Refuse reports to the observer a request refused before Do, for a reason
// such as an invalid key or body, so that every refusal is observed. It
// stores nothing.
func (g *Guard) Refuse(ctx context.Context, scope Scope, err error) {
	if g.obs == nil {
		return
	}
	now := g.now()
	g.obs.Observe(ctx, Event{Kind: EventRefused, Scope: scope, Err: err, Started: now})
}

// Do runs h at most once for req.Scope and returns the response to send.
//
// The first request with a scope claims it, runs h, and stores h's response
// when its status is cacheable; replayed is false. A later request with the
// same scope gets the stored response, replayed true, without running h.
// When h cannot be run or replayed, Do returns an error and h does not run.
// The errors are checked in this order:
//
//   - ErrMissingTenant, a key error, ErrKeyExpired: refused before the store.
//   - ErrStoreUnavailable: the claim could not be made.
//   - ErrOperationMismatch (account-wide keys), then ErrFingerprintMismatch:
//     the key was used for another request, even one still in flight.
//   - *ConflictError (ErrInFlight): another request holds a live lease.
//   - ErrIndeterminate: a lease ended without an outcome under FailClosed.
//   - *OutcomeError: completed, but the response cannot be replayed.
//
// When h returns an error or panics, the claim is released so that a retry
// can run, and Do returns h's error (joined with any release error) or
// panics again. When the outcome cannot be stored after h ran, Do still
// returns h's response and reports EventCompletionFailed; the record is then
// left to its lease policy.
func (g *Guard) Do(ctx context.Context, req Request, h Handler) (snap *Snapshot, replayed bool, err error) {
	start := g.now()
	ctx, usage := withUsage(ctx)
	ev := Event{Scope: req.Scope, Started: start}
	emit := func(kind EventKind, status int, err error) {
		if g.obs == nil {
			return
		}
		ev.Kind, ev.Status, ev.Err = kind, status, err
		ev.Duration = g.now().Sub(start)
		ev.Usage = *usage
		g.obs.Observe(ctx, ev)
	}

	if req.Scope.Tenant == "" {
		emit(EventRefused, 0, ErrMissingTenant)
		return nil, false, ErrMissingTenant
	}
	if req.Scope.Key == "" {
		emit(EventRefused, 0, ErrKeyEmpty)
		return nil, false, ErrKeyEmpty
	}
	pol := g.Policy(req.Scope.Operation)
	if err := pol.checkKeyTime(req.Scope.Key, start); err != nil {
		emit(EventRefused, 0, err)
		return nil, false, err
	}

	rec := &Record{
		ID:          req.Scope.ID(g.cfg.AccountWide),
		Scope:       req.Scope,
		State:       StateInFlight,
		Fingerprint: req.Fingerprint,
		Owner:       g.tok(),
		LeaseUntil:  pol.leaseUntil(ctx, start),
		ReplayUntil: start.Add(pol.ReplayWindow),
		ExpiresAt:   start.Add(pol.RecordRetention),
		CreatedAt:   start,
	}
	if !rec.ExpiresAt.After(rec.LeaseUntil) {
		rec.ExpiresAt = rec.LeaseUntil.Add(time.Second)
	}

	// Claim, or learn who holds the key. A claim that loses to a record that
	// changes under it (completed or released between the claim and a
	// follow-up write) is tried again a bounded number of times.
	var res ClaimResult
	for attempt := 0; ; attempt++ {
		res, err = g.cfg.Store.Claim(ctx, rec, start, ClaimOptions{Takeover: pol.OnStaleLease == Takeover})
		if err != nil {
			// The claim may have been applied with its answer lost. Free the
			// key if it holds our token, so a retry is not kept waiting for
			// a lease no handler holds. One attempt only: the store is
			// failing, and the caller is waiting for its 503.
			err = storeErr("claim", err)
			wctx, cancel := g.writeCtx(ctx)
			relErr := g.cfg.Store.Release(wctx, rec.ID, rec.Owner, g.now())
			cancel()
			if relErr != nil && !errors.Is(relErr, ErrNotOwner) {
				err = errors.Join(err, storeErr("release", relErr))
			}
			emit(EventStoreError, 0, err)
			return nil, false, err
		}
		if res.Won {
			break
		}
		snap, err, again := g.classify(ctx, req, pol, res.Existing, start)
		if again {
			if attempt < 2 {
				continue
			}
			// The record keeps changing under us: let the client come back.
			err = &ConflictError{RetryAfter: time.Second}
		}
		switch {
		case err == nil:
			emit(EventReplayed, snap.Status, nil)
			return snap, true, nil
		case errors.Is(err, ErrFingerprintMismatch), errors.Is(err, ErrOperationMismatch):
			emit(EventMismatch, 0, err)
		case errors.Is(err, ErrInFlight):
			emit(EventConflict, 0, err)
		case errors.Is(err, ErrIndeterminate):
			emit(EventIndeterminate, 0, err)
		case errors.Is(err, ErrStoreUnavailable):
			emit(EventStoreError, 0, err)
		default:
			var oe *OutcomeError
			if errors.As(err, &oe) {
				emit(EventOutcome, oe.Status, err)
			} else {
				emit(EventStoreError, 0, err)
			}
		}
		return nil, false, err
	}
	if p := res.Existing; p != nil && p.State == StateInFlight && p.Owner != rec.Owner && p.Live(start) {
		emit(EventTakeover, 0, nil)
	}

	hstart := g.now()
	snap, panicked, pval, herr := runHandler(ctx, h)
	ev.Handler = g.now().Sub(hstart)
	if panicked {
		relErr := g.release(ctx, rec)
		emit(EventReleased, 0, errors.Join(fmt.Errorf("idemkit: handler panicked: %v", pval), relErr))
		panic(pval)
	}
	if herr == nil && snap == nil {
		herr = errors.New("idemkit: handler returned neither a response nor an error")
	}
	if herr != nil {
		if relErr := g.release(ctx, rec); relErr != nil {
			herr = errors.Join(herr, relErr)
		}
		emit(EventReleased, 0, herr)
		return nil, false, herr
	}
	if !pol.Cacheable(snap.Status) {
		relErr := g.release(ctx, rec)
		emit(EventReleased, snap.Status, relErr)
		return snap, false, nil
	}

	done := *rec
	done.State = StateCompleted
	done.CompletedAt = g.now()
	done.Snapshot = snap
	if cerr := g.complete(ctx, &done); cerr != nil {
		emit(EventCompletionFailed, snap.Status, cerr)
		return snap, false, nil
	}
	emit(EventExecuted, snap.Status, nil)
	return snap, false, nil
}

// classify turns the live record that blocked a claim into a replay or an
// error. again is true when the record changed under us and the claim
// should be tried again.
func (g *Guard) classify(ctx context.Context, req Request, pol Policy, ex *Record, now time.Time) (snap *Snapshot, err error, again bool) {
	if ex == nil {
		return nil, nil, true
	}
	if g.cfg.AccountWide && ex.Scope.Operation != req.Scope.Operation {
		return nil, fmt.Errorf("%w: first used for %q", ErrOperationMismatch, ex.Scope.Operation), false
	}
	if !fingerprintsMatch(ex.Fingerprint, req) {
		return nil, ErrFingerprintMismatch, false
	}
	switch ex.State {
	case StateInFlight:
		if !ex.LeaseExpired(now) {
			wait := ex.LeaseUntil.Sub(now)
			if pol.MaxRetryAfter > 0 && wait > pol.MaxRetryAfter {
				wait = pol.MaxRetryAfter
			}
			return nil, &ConflictError{RetryAfter: retryAfter(wait)}, false
		}
		if pol.OnStaleLease == Takeover {
			// The claim would have taken over; the record changed under us.
			return nil, nil, true
		}
		_, err := g.cfg.Store.MarkIndeterminate(ctx, ex.ID, ex.Owner, now)
		switch {
		case err == nil:
			return nil, ErrIndeterminate, false
		case errors.Is(err, ErrNotOwner):
			// Completed, released or marked meanwhile: look again.
			return nil, nil, true
		default:
			return nil, storeErr("mark indeterminate", err), false
		}
	case StateIndeterminate:
		return nil, ErrIndeterminate, false
	case StateCompleted:
		s := ex.Snapshot
		if s == nil {
			return nil, fmt.Errorf("%w: completed record %q has no snapshot", ErrCorruptRecord, ex.ID), false
		}
		if s.Omitted || !now.Before(ex.ReplayUntil) {
			reason := ErrReplayWindowPassed
			if s.Omitted && now.Before(ex.ReplayUntil) {
				reason = ErrSnapshotOmitted
			}
			return nil, &OutcomeError{Reason: reason, Status: s.Status, Location: s.Header.Get("Location"), CompletedAt: ex.CompletedAt}, false
		}
		return s, nil, false
	case StateFailed:
		return nil, nil, true
	}
	return nil, fmt.Errorf("%w: unknown state %q", ErrCorruptRecord, ex.State), false
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

// retryAfter rounds d up to whole seconds, at least one.
func retryAfter(d time.Duration) time.Duration {
	s := (d + time.Second - 1) / time.Second
	if s < 1 {
		s = 1
	}
	return s * time.Second
}

func runHandler(ctx context.Context, h Handler) (snap *Snapshot, panicked bool, pval any, err error) {
	panicked = true
	defer func() {
		if panicked {
			pval = recover()
		}
	}()
	snap, err = h(ctx)
	panicked = false
	return snap, false, nil, err
}

// writeCtx returns a context for a write made after the handler ran: it
// survives the request's cancellation, bounded by the write timeout.
func (g *Guard) writeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), g.wait)
}

// release frees rec's claim and complete stores its outcome. Both are
// fenced writes made after the handler ran: each is tried up to
// CompleteAttempts times, stopping at once when the store says the claim is
// no longer ours.
func (g *Guard) release(ctx context.Context, rec *Record) error {
	return g.write(ctx, "release", func(ctx context.Context) error {
		return g.cfg.Store.Release(ctx, rec.ID, rec.Owner, g.now())
	})
}

func (g *Guard) complete(ctx context.Context, rec *Record) error {
	return g.write(ctx, "complete", func(ctx context.Context) error {
		return g.cfg.Store.Complete(ctx, rec, g.now())
	})
}

func (g *Guard) write(ctx context.Context, op string, try func(context.Context) error) error {
	wctx, cancel := g.writeCtx(ctx)
	defer cancel()
	var err error
	for i := 0; i < g.max; i++ {
		if err = try(wctx); err == nil {
			return nil
		}
		if errors.Is(err, ErrNotOwner) || wctx.Err() != nil {
			break
		}
		t := time.NewTimer(time.Duration(i+1) * 50 * time.Millisecond)
		select {
		case <-wctx.Done():
			t.Stop()
			return storeErr(op, err)
		case <-t.C:
		}
	}
	return storeErr(op, err)
}

// storeErr wraps err so that it is ErrStoreUnavailable under errors.Is,
// unless it is one of the store's sentinel outcomes.
func storeErr(op string, err error) error {
	if errors.Is(err, ErrStoreUnavailable) || errors.Is(err, ErrNotOwner) || errors.Is(err, ErrCorruptRecord) {
		return fmt.Errorf("idemkit: store %s: %w", op, err)
	}
	return &StoreError{Op: op, Err: err}
}

// checkKeyTime refuses a UUIDv7 key whose embedded time is older than the
// record retention (plus the clock skew): its first request may have been
// forgotten, so running it could execute it twice.
func (p Policy) checkKeyTime(key string, now time.Time) error {
	if p.IgnoreKeyTime || len(key) != 36 {
		return nil
	}
	u, err := uuid.Parse(key)
	if err != nil || u.Version() != 7 {
		return nil
	}
	sec, nsec := u.Time().UnixTime()
	t := time.Unix(sec, nsec)
	if t.Before(now.Add(-p.RecordRetention - p.KeyClockSkew)) {
		return fmt.Errorf("%w: key time %s", ErrKeyExpired, t.UTC().Format(time.RFC3339))
	}
	return nil
}
