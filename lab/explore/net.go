package explore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
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
	method faultstore.Method // Get, Create, Replace or ListIndeterminate
	op     string            // a write's change, as faultstore.Op names it
	write  bool
	key    string          // the record ID
	owner  string          // a write's record's Owner
	now    time.Time       // when the call was sent, on its sender's clock
	arg    string          // further arguments, for traces and the state hash
	rec    *idemkit.Record // a write's record
	prev   *idemkit.Record // the record a Replace replaces, as its caller knew it

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
	m.now = time.Now().Add(w.skew(m.sender))
	a := w.actor(m.sender)
	a.calls++
	m.id = fmt.Sprintf("%s.%d", m.sender, a.calls)
	if m.write {
		// Name the versions written by who wrote them first, so that the
		// state is the same whatever random versions Resolve makes.
		w.label(m.sender, m.rec.Version)
	}
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
		w.logf("%s: its caller timed out; the call stays in the network", mp.name())
		w.mu.Unlock()
		return zero, &idemkit.StoreError{Op: string(m.method), Err: ctx.Err()}
	}
}

// Get implements idemkit.Store.
func (n *Net) Get(ctx context.Context, id string) (*idemkit.Record, error) {
	return send(n, ctx, msg{method: faultstore.Get, key: id},
		func() (*idemkit.Record, error) { return n.inner.Get(context.Background(), id) })
}

// Create implements idemkit.Store.
func (n *Net) Create(ctx context.Context, rec *idemkit.Record) (*idemkit.Record, error) {
	c := rec.Clone()
	return send(n, ctx, n.write(faultstore.Create, c, nil),
		func() (*idemkit.Record, error) { return n.inner.Create(context.Background(), c) })
}

// Replace implements idemkit.Store.
func (n *Net) Replace(ctx context.Context, rec, prev *idemkit.Record) (*idemkit.Record, error) {
	c, p := rec.Clone(), prev.Clone()
	return send(n, ctx, n.write(faultstore.Replace, c, p),
		func() (*idemkit.Record, error) { return n.inner.Replace(context.Background(), c, p) })
}

// write is the message of a write of rec in place of prev (nil: a
// Create).
func (n *Net) write(m faultstore.Method, rec, prev *idemkit.Record) msg {
	op := faultstore.Op(rec, prev)
	arg := ""
	switch op {
	case faultstore.OpClaim:
		arg = fmt.Sprintf("fp=%s lease=%s", rec.Fingerprint, n.w.rel(rec.LeaseUntil))
	case faultstore.OpComplete:
		arg = string(rec.Snapshot.Body)
	case faultstore.OpResolve:
		arg = "as=" + string(rec.Resolution.As) + " by " + rec.Resolution.Operator
	}
	if prev != nil {
		arg += " over " + describe(prev)
	}
	return msg{method: m, op: op, write: true, key: rec.ID, owner: rec.Owner, rec: rec, prev: prev, arg: arg}
}

// ListIndeterminate implements idemkit.OperatorStore.
func (n *Net) ListIndeterminate(ctx context.Context, tenant, page string, limit int, now time.Time) ([]*idemkit.Record, string, error) {
	type page2 struct {
		recs []*idemkit.Record
		next string
	}
	p, err := send(n, ctx, msg{method: faultstore.ListIndeterminate},
		func() (page2, error) {
			recs, next, err := n.inner.ListIndeterminate(context.Background(), tenant, page, limit, now)
			return page2{recs, next}, err
		})
	return p.recs, p.next, err
}
