package explore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/faultstore"
	"github.com/idemkit/idemkit/memstore"
)

// errLost is the network's failure: a call whose answer never came back
// (it may or may not have landed), as its caller sees it.
var errLost = errors.New("explore: no answer (lost, or timed out)")

// msg is one store call in the network. Its caller waits for the
// explorer to deliver it, lose it, or lose its answer; a copy of it (held
// or duplicated) may land once more after its caller moved on.
type msg struct {
	id     string // the sender's name and the call's number, "A1.2"
	sender string
	method faultstore.Method // a store method added later is one method of Net and, for a write, one case in world.landed
	write  bool
	key    string    // the record ID
	owner  string    // the owner token it writes for (fenced writes, claims)
	now    time.Time // the time the call was given, on its sender's clock
	arg    string    // further arguments, for traces and the state hash

	apply func() (any, error) // makes the call on the store
	reply chan result         // buffered: the answer, when the caller waits

	waiting  bool // the caller waits for the answer
	replied  bool // the caller was answered
	copies   int  // deliveries still to come after the caller moved on
	deadline time.Time
}

type result struct {
	v   any
	err error
}

// Net is the idemkit.OperatorStore every guard and the operator use: each
// call is a message the explorer delivers, delays, duplicates or loses,
// over a memstore.
type Net struct {
	w     *world
	inner *memstore.Store
}

var _ idemkit.OperatorStore = (*Net)(nil)

// actorKey carries the name of the actor making a store call.
type actorKey struct{}

func actorOf(ctx context.Context) string {
	a, _ := ctx.Value(actorKey{}).(string)
	return a
}

// send puts a call in the network and waits for the explorer's decision,
// or for ctx to be done (the call then stays in the network, to land at
// most once, as a request on the wire whose caller timed out).
func send[T any](n *Net, ctx context.Context, m msg, apply func() (T, error)) (T, error) {
	var zero T
	w := n.w
	m.apply = func() (any, error) { return apply() }
	m.reply = make(chan result, 1)
	m.waiting = true
	m.sender = actorOf(ctx)
	if dl, ok := ctx.Deadline(); ok {
		m.deadline = dl
	}
	w.mu.Lock()
	a := w.actor(m.sender)
	a.calls++
	m.id = fmt.Sprintf("%s.%d", m.sender, a.calls)
	mp := &m
	w.net = append(w.net, mp)
	w.all = append(w.all, mp)
	w.mu.Unlock()
	select {
	case r := <-mp.reply:
		if r.err != nil {
			return zero, r.err
		}
		v, _ := r.v.(T)
		return v, nil
	case <-ctx.Done():
		w.mu.Lock()
		select {
		case r := <-mp.reply:
			// Answered before the timeout was seen.
			w.mu.Unlock()
			if r.err != nil {
				return zero, r.err
			}
			v, _ := r.v.(T)
			return v, nil
		default:
		}
		mp.waiting, mp.replied = false, true
		mp.copies = 1
		w.logf("%s %s: its caller timed out; the call stays in the network", mp.id, mp.method)
		w.mu.Unlock()
		return zero, &idemkit.StoreError{Op: string(m.method), Err: ctx.Err()}
	}
}

// Claim implements idemkit.Store.
func (n *Net) Claim(ctx context.Context, rec *idemkit.Record, now time.Time) (idemkit.ClaimResult, error) {
	c := rec.Clone()
	return send(n, ctx, msg{method: faultstore.Claim, write: true, key: c.ID, owner: c.Owner, now: now,
		arg: fmt.Sprintf("fp=%s lease=%s", c.Fingerprint, n.w.rel(c.LeaseUntil))},
		func() (idemkit.ClaimResult, error) { return n.inner.Claim(context.Background(), c, now) })
}

// Reclaim implements idemkit.Store.
func (n *Net) Reclaim(ctx context.Context, rec, prev *idemkit.Record, now time.Time) (idemkit.ClaimResult, error) {
	c, p := rec.Clone(), prev.Clone()
	return send(n, ctx, msg{method: faultstore.Reclaim, write: true, key: c.ID, owner: c.Owner, now: now,
		arg: fmt.Sprintf("fp=%s lease=%s over %s", c.Fingerprint, n.w.rel(c.LeaseUntil), describe(p))},
		func() (idemkit.ClaimResult, error) { return n.inner.Reclaim(context.Background(), c, p, now) })
}

// Complete implements idemkit.Store.
func (n *Net) Complete(ctx context.Context, rec *idemkit.Record, now time.Time) error {
	c := rec.Clone()
	_, err := send(n, ctx, msg{method: faultstore.Complete, write: true, key: c.ID, owner: c.Owner, now: now, arg: string(c.Snapshot.Body)},
		func() (struct{}, error) { return struct{}{}, n.inner.Complete(context.Background(), c, now) })
	return err
}

// Release implements idemkit.Store.
func (n *Net) Release(ctx context.Context, id, owner string, now time.Time) error {
	_, err := send(n, ctx, msg{method: faultstore.Release, write: true, key: id, owner: owner, now: now},
		func() (struct{}, error) { return struct{}{}, n.inner.Release(context.Background(), id, owner, now) })
	return err
}

// Extend implements idemkit.Store.
func (n *Net) Extend(ctx context.Context, id, owner string, leaseUntil, now time.Time) error {
	_, err := send(n, ctx, msg{method: faultstore.Extend, write: true, key: id, owner: owner, now: now, arg: "lease=" + n.w.rel(leaseUntil)},
		func() (struct{}, error) {
			return struct{}{}, n.inner.Extend(context.Background(), id, owner, leaseUntil, now)
		})
	return err
}

// MarkUnknown implements idemkit.Store.
func (n *Net) MarkUnknown(ctx context.Context, id, owner string, now time.Time) error {
	_, err := send(n, ctx, msg{method: faultstore.MarkUnknown, write: true, key: id, owner: owner, now: now},
		func() (struct{}, error) { return struct{}{}, n.inner.MarkUnknown(context.Background(), id, owner, now) })
	return err
}

// MarkIndeterminate implements idemkit.Store.
func (n *Net) MarkIndeterminate(ctx context.Context, id, owner string, now time.Time) error {
	_, err := send(n, ctx, msg{method: faultstore.MarkIndeterminate, write: true, key: id, owner: owner, now: now},
		func() (struct{}, error) {
			return struct{}{}, n.inner.MarkIndeterminate(context.Background(), id, owner, now)
		})
	return err
}

// Get implements idemkit.Store.
func (n *Net) Get(ctx context.Context, id string, now time.Time) (*idemkit.Record, error) {
	return send(n, ctx, msg{method: faultstore.Get, key: id, now: now},
		func() (*idemkit.Record, error) { return n.inner.Get(context.Background(), id, now) })
}

// Resolve implements idemkit.OperatorStore.
func (n *Net) Resolve(ctx context.Context, id, owner string, res idemkit.Resolution, now time.Time) (*idemkit.Record, error) {
	kept := res
	kept.Snapshot = res.Snapshot.Clone()
	return send(n, ctx, msg{method: faultstore.Resolve, write: true, key: id, now: now, arg: "as=" + string(res.As) + " by " + res.Operator + " of " + owner},
		func() (*idemkit.Record, error) { return n.inner.Resolve(context.Background(), id, owner, kept, now) })
}

// ListIndeterminate implements idemkit.OperatorStore.
func (n *Net) ListIndeterminate(ctx context.Context, tenant, page string, limit int, now time.Time) ([]*idemkit.Record, string, error) {
	type page2 struct {
		recs []*idemkit.Record
		next string
	}
	p, err := send(n, ctx, msg{method: faultstore.ListIndeterminate, now: now},
		func() (page2, error) {
			recs, next, err := n.inner.ListIndeterminate(context.Background(), tenant, page, limit, now)
			return page2{recs, next}, err
		})
	return p.recs, p.next, err
}
