package idemkit

import (
	"context"
	"fmt"
	"time"

	"github.com/idemkit/idemkit/internal/policydefault"
	"github.com/idemkit/idemkit/internal/setting"
	"github.com/idemkit/idemkit/internal/uuidv7"
)

// StalePolicy says what happens when an in_flight record's lease has ended
// without an outcome. The execution may or may not have had its effect.
type StalePolicy int

const (
	// FailClosed marks the record indeterminate; requests with the key get
	// ErrIndeterminate until an operator resolves it. Use it for money and
	// shipping. It is the zero value.
	FailClosed StalePolicy = iota
	// Takeover lets the next request claim the key with a new owner token and
	// run the handler again. Use it only when the downstream is itself
	// idempotent. Under either policy, a renewed run whose lease can no
	// longer be held has its context cancelled with the cause ErrLeaseLost
	// before the lease ends, and so before its record can expire.
	Takeover
)

func (p StalePolicy) String() string {
	if p == Takeover {
		return "takeover"
	}
	return "fail_closed"
}

// Policy is how one operation is guarded. The zero value is the default
// policy: lease until the context deadline plus 2 s (30 s without a
// deadline), replay for 24 h, remember the outcome for 7 days, fail closed
// on an expired lease, snapshot the statuses DefaultCacheable accepts, and
// refuse UUIDv7 keys older than the record retention (5 min skew allowed).
type Policy struct {
	// Lease is how long a claim protects the key. Zero: until the context
	// deadline (the Lambda's remaining time) plus LeaseMargin, or 30 s
	// when the context has no deadline. A lease must outlast
	// the execution. When it ends, the outcome is treated as unknown.
	Lease time.Duration
	// LeaseMargin is added to the context deadline. Zero: 2 s.
	LeaseMargin time.Duration
	// ReplayWindow is how long after the first request its response is
	// replayed byte for byte. Zero: 24 h.
	ReplayWindow time.Duration
	// RecordRetention is how long after the first request the record is
	// kept (the TTL). Between ReplayWindow and RecordRetention a retry is
	// not run again; it gets an *OutcomeError naming the first outcome.
	// Zero: 7 days, or ReplayWindow when that is longer.
	// New refuses a value below ReplayWindow, since a record must outlive
	// the replay of its response.
	//
	// A record is also kept a minute (or LeaseMargin, when longer) past
	// the request's deadline and past the last lease its renewals can
	// reach (MaxRenewals intervals after the first lease ends). So it never
	// expires while its handler may still run, by the clock of any host
	// less than a minute ahead, the skew Resolve tolerates too. A renewed handler still running then has its context
	// cancelled with ErrLeaseLost before the record expires.
	RecordRetention time.Duration
	// OnStaleLease chooses FailClosed (zero) or Takeover.
	OnStaleLease StalePolicy
	// Cacheable reports whether a response status is a deterministic
	// outcome to store and replay. Nil: DefaultCacheable. A status outside
	// 100-999 is not an HTTP status and is never stored, whatever
	// Cacheable says. The key is then freed, as for a status Cacheable
	// refuses.
	Cacheable func(status int) bool
	// KeyClockSkew is the clock skew tolerated for a UUIDv7 key. A key whose
	// embedded time is older than RecordRetention plus this skew is refused
	// with ErrKeyExpired. Zero: 5 min.
	KeyClockSkew time.Duration
	// IgnoreKeyTime turns the UUIDv7 age check off.
	IgnoreKeyTime bool
	// MaxRetryAfter caps the Retry-After told to a request that finds the
	// key in flight. Zero: no cap. Without a cap, Retry-After is the time
	// until the lease ends (on Lambda, the function's remaining time),
	// rounded up to whole seconds. Retry-After is always whole seconds and
	// at least one. The cap is rounded down to whole seconds, so that it is
	// never exceeded; a cap below a second gives 1.
	MaxRetryAfter time.Duration
	// Heartbeat is the interval at which the lease is renewed while the
	// handler runs. Each renewal ends the lease the first lease's length
	// after the renewal. Zero: renewals only for requests without a
	// deadline (servers, containers), every third of the lease. A value above half the lease
	// is lowered to it. Each renewal is one store write.
	Heartbeat time.Duration
	// MaxRenewals bounds the renewals of one execution. After the last one
	// the lease runs out, and the outcome counts as unknown. Zero:
	// 120 (with the 30 s default lease, about 20 minutes).
	MaxRenewals int
}

// DefaultCacheable stores every status except the transient ones a retry
// may change: 401, 403, 407, 408, 425, 429, 502, 503 and 504. A 500 that the
// handler returned is stored. The handler chose it, and a retry must not
// run again what may have had its effect. Handler errors and panics are never
// stored.
func DefaultCacheable(status int) bool {
	switch status {
	case 401, 403, 407, 408, 425, 429, 502, 503, 504:
		return false
	}
	return status >= 100 && status <= 999
}

// hostSkew is the clock skew between hosts that a record's life and an
// operator's decision tolerate: a record outlives the last lease it can
// hold by at least this much, and Resolve waits this long after a lease
// ends. It is wider than LeaseMargin, the skew a lease tolerates: under
// FailClosed a host whose clock runs further ahead marks a running lease
// indeterminate (the run's completion still wins), but never finds its
// record expired.
const hostSkew = time.Minute

// expiryMargin is how long a record outlives the last lease it can hold:
// hostSkew, or LeaseMargin when that is longer.
func (p Policy) expiryMargin() time.Duration { return max(p.LeaseMargin, hostSkew) }

// withDefaults returns p with its zero fields filled in.
func (p Policy) withDefaults() Policy {
	p.LeaseMargin = setting.Or(p.LeaseMargin, policydefault.LeaseMargin)
	p.ReplayWindow = setting.Or(p.ReplayWindow, policydefault.ReplayWindow)
	p.RecordRetention = setting.Or(p.RecordRetention, max(policydefault.RecordRetention, p.ReplayWindow))
	p.MaxRenewals = setting.Or(p.MaxRenewals, policydefault.MaxRenewals)
	if p.Cacheable == nil {
		p.Cacheable = DefaultCacheable
	}
	p.KeyClockSkew = setting.Or(p.KeyClockSkew, policydefault.KeyClockSkew)
	return p
}

// leaseUntil returns the end of a lease taken at now.
func (p Policy) leaseUntil(ctx context.Context, now time.Time) time.Time {
	if p.Lease > 0 {
		return now.Add(p.Lease)
	}
	if d, ok := ctx.Deadline(); ok && d.After(now) {
		return d.Add(p.LeaseMargin)
	}
	return now.Add(policydefault.Lease)
}

// check refuses a policy that cannot be kept.
func (p Policy) check() error {
	if p.RecordRetention < p.ReplayWindow {
		return fmt.Errorf("RecordRetention %s is shorter than ReplayWindow %s: a record must be kept at least as long as its response is replayed", p.RecordRetention, p.ReplayWindow)
	}
	return nil
}

// heartbeat returns the interval of lease renewals for a lease of length
// d, or zero for none.
func (p Policy) heartbeat(ctx context.Context, d time.Duration) time.Duration {
	every := p.Heartbeat
	if every <= 0 {
		if _, ok := ctx.Deadline(); ok {
			return 0
		}
		every = d / 3
	}
	return min(every, d/2)
}

// checkKeyTime refuses a UUIDv7 key whose embedded time is older than the
// record retention (plus the clock skew): its first request may have been
// forgotten, so running it could execute it twice.
func (p Policy) checkKeyTime(key string, now time.Time) error {
	if p.IgnoreKeyTime {
		return nil
	}
	t, ok := uuidv7.Time(key)
	if !ok {
		return nil
	}
	if t.Before(now.Add(-p.RecordRetention - p.KeyClockSkew)) {
		return fmt.Errorf("%w: key time %s", ErrKeyExpired, t.UTC().Format(time.RFC3339))
	}
	return nil
}
