package idemclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/internal/httpheader"
	"github.com/idemkit/idemkit/internal/uuidv7"
)

// Defaults applied to the zero fields of a [Config].
const (
	DefaultHeader = "Idempotency-Key"
	// DefaultRetention is an idemkit server's default record retention.
	DefaultRetention = 7 * 24 * time.Hour
	// DefaultMargin is an idemkit server's default KeyClockSkew.
	DefaultMargin           = 5 * time.Minute
	DefaultBudget           = time.Minute
	DefaultBaseDelay        = 100 * time.Millisecond
	DefaultMaxDelay         = 10 * time.Second
	DefaultMaxResponseBytes = 10 << 20
)

// PollFloor is the shortest wait before polling a request still in
// flight (409 in-flight) when the backoff is longer: a Retry-After of 0 or
// a date already past shortens the backoff to it, never to no wait. It is
// the unit of Retry-After's delay-seconds: a server saying 0 means "within
// the second".
const PollFloor = time.Second

// ReplayedHeader marks a response the server replayed from its record.
const ReplayedHeader = "Idempotent-Replayed"

// Replayed reports whether resp is a replay of the first answer to its
// key. It reads the header the server sets ([ReplayedHeader]), which the
// Transport returns as the server sent it.
func Replayed(resp *http.Response) bool {
	return resp != nil && resp.Header.Get(ReplayedHeader) == "true"
}

// Config configures New. Its zero value is usable: UUIDv7 keys on POST and
// PATCH, a minute of retries, against a server keeping records 7 days.
type Config struct {
	// Base sends each attempt. Nil: http.DefaultTransport.
	Base http.RoundTripper
	// Methods are the methods the server guards, compared without case.
	// Nil: POST and PATCH. Requests of other methods are sent once,
	// unchanged.
	Methods []string
	// Header is the key's header. Empty: DefaultHeader.
	Header string

	// Retention is the server's record retention for the operations called
	// (its Policy.RecordRetention). Zero: DefaultRetention.
	Retention time.Duration
	// Margin is kept off the retention for the clocks of the client and
	// the server and a request's time in transit. Zero: DefaultMargin. It
	// must be shorter than Retention.
	Margin time.Duration
	// Budget bounds the retries of one request: no attempt starts later
	// than Budget after the first. Zero: DefaultBudget. New refuses a
	// Budget longer than Retention less Margin (ErrBudgetTooLong).
	Budget time.Duration
	// MaxAttempts bounds the attempts of one request. Zero: only Budget
	// does.
	MaxAttempts int
	// AttemptTimeout bounds one attempt, until its whole response is read;
	// one that times out is retried. Zero: none (the request's context
	// and the http.Client's Timeout bound the whole request).
	AttemptTimeout time.Duration
	// BaseDelay is the first retry's backoff, doubled for each further
	// one up to MaxDelay, and jittered: a wait is between half the backoff
	// and all of it. Zero: DefaultBaseDelay and DefaultMaxDelay.
	BaseDelay, MaxDelay time.Duration
	// MaxResponseBytes bounds the response body read before a response is
	// returned, so that a body cut short is retried like a lost response.
	// A longer body is returned streaming, its read unprotected. Zero:
	// DefaultMaxResponseBytes.
	MaxResponseBytes int64

	// NewKey mints a key for a request the caller gave none. Nil: a UUIDv7
	// of Now. For a UUIDv7 key, the retention is checked against the key's
	// age. For any other key, it is checked from the first attempt of the
	// request.
	NewKey func() (string, error)
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx is done, returning ctx's error then. Nil:
	// a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1) for the jitter. Nil: math/rand/v2.
	Rand func() float64
}

// Transport is an http.RoundTripper that retries guarded requests with
// the same Idempotency-Key. It is safe for concurrent use.
type Transport struct {
	base             http.RoundTripper
	methods          []string
	header           string
	retention        time.Duration
	margin           time.Duration
	budget           time.Duration
	maxAttempts      int
	attemptTimeout   time.Duration
	baseDelay        time.Duration
	maxDelay         time.Duration
	maxResponseBytes int64
	newKey           func() (string, error)
	now              func() time.Time
	sleep            func(context.Context, time.Duration) error
	rand             func() float64
}

// New returns a Transport configured by cfg, or an error naming the
// setting that cannot be used.
func New(cfg Config) (*Transport, error) {
	if err := checkSigns(cfg); err != nil {
		return nil, err
	}
	t := &Transport{
		base: cfg.Base, header: cfg.Header, retention: cfg.Retention, margin: cfg.Margin, budget: cfg.Budget,
		maxAttempts: cfg.MaxAttempts, attemptTimeout: cfg.AttemptTimeout, baseDelay: cfg.BaseDelay, maxDelay: cfg.MaxDelay,
		maxResponseBytes: cfg.MaxResponseBytes, newKey: cfg.NewKey, now: cfg.Now, sleep: cfg.Sleep, rand: cfg.Rand,
	}
	t.defaultHooks(cfg.Methods)
	t.defaultBounds()
	if err := t.check(); err != nil {
		return nil, err
	}
	return t, nil
}

// checkSigns returns an error naming the first of cfg's durations and
// bounds that is negative, and nil when none is.
func checkSigns(cfg Config) error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Retention", cfg.Retention}, {"Margin", cfg.Margin}, {"Budget", cfg.Budget}, {"AttemptTimeout", cfg.AttemptTimeout},
		{"BaseDelay", cfg.BaseDelay}, {"MaxDelay", cfg.MaxDelay}} {
		if d.v < 0 {
			return fmt.Errorf("idemclient: %s %s is negative", d.name, d.v)
		}
	}
	if cfg.MaxAttempts < 0 || cfg.MaxResponseBytes < 0 {
		return errors.New("idemclient: MaxAttempts and MaxResponseBytes must not be negative")
	}
	return nil
}

// defaultHooks sets the defaults of t's zero base transport, header,
// clock, key source, sleep and jitter, and t's methods to a copy of
// methods, or POST and PATCH when methods is nil.
func (t *Transport) defaultHooks(methods []string) {
	if t.base == nil {
		t.base = http.DefaultTransport
	}
	t.methods = []string{http.MethodPost, http.MethodPatch}
	if methods != nil {
		t.methods = slices.Clone(methods)
	}
	if t.header == "" {
		t.header = DefaultHeader
	}
	if t.now == nil {
		t.now = time.Now
	}
	if t.newKey == nil {
		t.newKey = func() (string, error) { return uuidv7.At(t.now()), nil }
	}
	if t.sleep == nil {
		t.sleep = sleep
	}
	if t.rand == nil {
		t.rand = rand.Float64
	}
}

// defaultBounds sets the defaults of t's zero retention, margin, budget,
// delays and response bound; a zero MaxDelay is never shorter than
// BaseDelay.
func (t *Transport) defaultBounds() {
	if t.retention == 0 {
		t.retention = DefaultRetention
	}
	if t.margin == 0 {
		t.margin = DefaultMargin
	}
	if t.budget == 0 {
		t.budget = DefaultBudget
	}
	if t.baseDelay == 0 {
		t.baseDelay = DefaultBaseDelay
	}
	if t.maxDelay == 0 {
		t.maxDelay = max(DefaultMaxDelay, t.baseDelay)
	}
	if t.maxResponseBytes == 0 {
		t.maxResponseBytes = DefaultMaxResponseBytes
	}
}

// check returns an error naming the first setting of t, its defaults set,
// that cannot be used (ErrBudgetTooLong for a Budget past the retention
// less the margin), and nil when all can.
func (t *Transport) check() error {
	if !httpheader.ValidName(t.header) {
		return fmt.Errorf("idemclient: Header %q is not an HTTP field name", t.header)
	}
	if t.margin >= t.retention {
		return fmt.Errorf("idemclient: Margin %s is not shorter than Retention %s", t.margin, t.retention)
	}
	if limit := t.retention - t.margin; t.budget > limit {
		return fmt.Errorf("%w: Budget %s is longer than Retention %s less Margin %s: a retry sent after the server forgot the first request would run it a second time; shorten Budget, or set Retention to the server's record retention",
			ErrBudgetTooLong, t.budget, t.retention, t.margin)
	}
	if t.maxDelay < t.baseDelay {
		return fmt.Errorf("idemclient: MaxDelay %s is shorter than BaseDelay %s", t.maxDelay, t.baseDelay)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// RoundTrip implements http.RoundTripper. A guarded request is sent with
// its key until it gets a final answer: a response, returned as it came;
// a *ProblemError; or a *GiveUpError. A request refused before it is sent
// gets ErrKeyNotSendable, ErrBodyNotReplayable or, for a key past the
// retention, a *GiveUpError with no attempts.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.guarded(req.Method) {
		return t.base.RoundTrip(req)
	}
	key, err := t.keyOf(req)
	if err == nil && hasBody(req) && req.GetBody == nil {
		err = ErrBodyNotReplayable
	}
	if err != nil {
		closeBody(req)
		return nil, err
	}
	r := &request{t: t, req: req, key: key, start: t.now()}
	r.forgetAt = r.start.Add(t.retention - t.margin)
	if at, ok := uuidv7.Time(key); ok {
		r.forgetAt = at.Add(t.retention - t.margin)
	}
	return r.run()
}

func (t *Transport) guarded(method string) bool {
	if method == "" {
		method = http.MethodGet
	}
	for _, m := range t.methods {
		if strings.EqualFold(m, method) {
			return true
		}
	}
	return false
}

func hasBody(req *http.Request) bool { return req.Body != nil && req.Body != http.NoBody }

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// request is one guarded request and its attempts.
type request struct {
	t        *Transport
	req      *http.Request
	key      string
	start    time.Time
	forgetAt time.Time // no attempt starts at or after it
	attempts int
}

// answer is what one attempt got.
type answer struct {
	resp    *http.Response
	body    []byte // the whole body; nil when longer than MaxResponseBytes
	err     error
	problem *httpproblem.Details
}

func (r *request) run() (*http.Response, error) {
	ctx := r.req.Context()
	for {
		if !r.t.now().Before(r.forgetAt) {
			if r.attempts == 0 {
				closeBody(r.req)
			}
			return nil, r.giveUp(ErrRetentionPassed, answer{})
		}
		a := r.attempt()
		if a.err != nil && ctx.Err() != nil {
			return nil, r.giveUp(ctx.Err(), a)
		}
		p := r.judge(a)
		if !p.retry {
			return p.resp, p.err
		}
		if a.resp != nil {
			a.resp.Body.Close()
		}
		if err := r.wait(ctx, p, a); err != nil {
			return nil, err
		}
	}
}

// attempt sends the request once and reads its response.
func (r *request) attempt() answer {
	ctx := r.req.Context()
	areq := r.req.Clone(ctx)
	if r.attempts > 0 && hasBody(r.req) {
		b, err := r.req.GetBody()
		if err != nil {
			return answer{err: &bodyError{err}}
		}
		areq.Body = b
	}
	r.attempts++
	for k := range areq.Header {
		if strings.EqualFold(k, r.t.header) {
			delete(areq.Header, k)
		}
	}
	areq.Header.Set(r.t.header, r.key)
	cancel := context.CancelFunc(func() {})
	if r.t.attemptTimeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, r.t.attemptTimeout)
		areq = areq.WithContext(ctx)
	}
	resp, err := r.t.base.RoundTrip(areq)
	if err != nil {
		cancel()
		return answer{err: err}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, r.t.maxResponseBytes+1))
	if err != nil {
		resp.Body.Close()
		cancel()
		return answer{err: err}
	}
	if int64(len(body)) > r.t.maxResponseBytes {
		resp.Body = &streamed{Reader: io.MultiReader(bytes.NewReader(body), resp.Body), body: resp.Body, cancel: cancel}
		return answer{resp: resp}
	}
	resp.Body.Close()
	cancel()
	if resp.Body != http.NoBody {
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return answer{resp: resp, body: body, problem: readProblem(resp, body)}
}

// streamed is a response body longer than MaxResponseBytes: what was read,
// then the rest; closing it ends the attempt's timeout.
type streamed struct {
	io.Reader
	body   io.Closer
	cancel context.CancelFunc
}

func (s *streamed) Close() error {
	err := s.body.Close()
	s.cancel()
	return err
}

// bodyError is GetBody's failure: no retry can send the body.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "idemclient: replaying the request body: " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// plan is what follows an attempt: a retry after delay, or the response
// or error to return.
type plan struct {
	retry bool
	delay time.Duration
	// asked is set when the delay is the server's Retry-After.
	asked bool
	resp  *http.Response
	err   error
}

// judge decides what follows an attempt's answer.
func (r *request) judge(a answer) plan {
	backoff := r.backoff()
	if a.err != nil {
		if !retryable(a.err) {
			return plan{err: r.giveUp(a.err, a)}
		}
		return plan{retry: true, delay: backoff}
	}
	if Replayed(a.resp) {
		return plan{resp: a.resp}
	}
	ra, hasRA := retryAfter(a.resp.Header.Get("Retry-After"), r.t.now())
	if a.problem != nil {
		if v, ok := verdicts[a.problem.Type]; ok {
			switch {
			case !v.retry:
				a.resp.Body.Close()
				return plan{err: &ProblemError{Key: r.key, Attempts: r.attempts, Problem: *a.problem}}
			case a.problem.Type == httpproblem.TypeInFlight, a.problem.Type == httpproblem.TypeOutcomePending:
				// Retry-After is when the running request's lease ends at
				// the latest (outcome-pending: when its late completion
				// is no longer expected); its answer may come sooner. One that has
				// passed (0, a date in the past: a server's clock ahead
				// of ours) shortens the backoff to PollFloor, no less.
				if hasRA && ra < backoff {
					return plan{retry: true, delay: max(ra, min(PollFloor, backoff)), asked: true}
				}
				return plan{retry: true, delay: backoff}
			}
		}
	}
	switch s := a.resp.StatusCode; {
	case s == http.StatusTooManyRequests, s == http.StatusServiceUnavailable:
		if hasRA && ra > backoff {
			return plan{retry: true, delay: ra, asked: true}
		}
		return plan{retry: true, delay: backoff}
	case s >= 500 && s <= 599:
		return plan{retry: true, delay: backoff}
	}
	return plan{resp: a.resp}
}

// backoff is the jittered wait before the next attempt.
func (r *request) backoff() time.Duration {
	d := r.t.baseDelay
	for i := 1; i < r.attempts && d < r.t.maxDelay; i++ {
		d *= 2
	}
	d = min(d, r.t.maxDelay)
	return d/2 + time.Duration(r.t.rand()*float64(d/2))
}

// wait sleeps p.delay before the next attempt, or returns the *GiveUpError
// that says why no attempt may follow.
func (r *request) wait(ctx context.Context, p plan, a answer) error {
	delay := p.delay
	next := r.t.now().Add(delay)
	switch {
	case r.t.maxAttempts > 0 && r.attempts >= r.t.maxAttempts:
		return r.giveUp(ErrBudgetSpent, a)
	case next.After(r.start.Add(r.t.budget)):
		e := r.giveUp(ErrBudgetSpent, a)
		if p.asked {
			e.asked = delay
		}
		return e
	case !next.Before(r.forgetAt):
		return r.giveUp(ErrRetentionPassed, a)
	}
	if dl, ok := ctx.Deadline(); ok && next.After(dl) {
		return r.giveUp(context.DeadlineExceeded, a)
	}
	if err := r.t.sleep(ctx, delay); err != nil {
		return r.giveUp(err, a)
	}
	return nil
}

func (r *request) giveUp(reason error, a answer) *GiveUpError {
	e := &GiveUpError{Key: r.key, Attempts: r.attempts, Elapsed: r.t.now().Sub(r.start), RetryBefore: r.forgetAt,
		Reason: reason, Problem: a.problem, Err: a.err}
	if a.resp != nil {
		e.Status = a.resp.StatusCode
	}
	return e
}

// retryable reports whether a transport error may be retried: the
// request may not have reached the server, or its answer was lost.
func retryable(err error) bool {
	var (
		be  *bodyError
		cve *tls.CertificateVerificationError
		rhe tls.RecordHeaderError
		ne  net.Error
	)
	switch {
	case errors.As(err, &be), errors.As(err, &cve), errors.As(err, &rhe):
		return false
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE):
		return true
	}
	return errors.As(err, &ne)
}

// retryAfter parses a Retry-After value: seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if digits(v) {
		// Any number of seconds is a wait: one past what a Duration holds
		// (292 years) is the longest Duration, past every budget.
		if s, err := strconv.ParseUint(v, 10, 64); err == nil && s <= math.MaxInt64/uint64(time.Second) {
			return time.Duration(s) * time.Second, true
		}
		return math.MaxInt64, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// digits reports whether v is one or more ASCII digits, the delay-seconds
// of RFC 9110.
func digits(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return v != ""
}
