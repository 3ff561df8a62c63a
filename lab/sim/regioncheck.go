package sim

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/httpproblem"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
)

// The invariants a two-region world adds, from the data: both regions'
// items and their versions, the completions that landed in either, the
// answers. The caller of each check holds w.mu.
const (
	// cross-region: a claim that lands in one region replaces only what
	// it could replace had the region received every write of the other.
	invCrossRegion = "cross-region"
	// completed-once: once a completion landed in either region, the key
	// runs again only after that record expired.
	invCompletedOnce = "completed-once"
	// failover-fence: under a failover that fences, a claim of a key not
	// shown to be first used after it stores nothing (it may only renew
	// its own claim), is answered from the live record the region holds
	// or with 503 saying nothing was stored; a key shown new is never
	// refused; a release writes no tombstone over another's record or
	// none.
	invFailoverFence = "failover-fence"
	// failover-window: under AcceptUnreplicated a request runs a second
	// time only as DESIGN.md states: its record was written in the
	// region the tenant left before At and had not replicated.
	invFailoverWindow = "failover-window"
	// completion-kept: replication never drops a completion whose record
	// lives for a write made without it (last writer wins).
	invCompletionKept = "completion-kept"
)

// regionClaimed checks a claim that landed (see claimed) against the
// failover's fence and against the other region's writes.
func (w *World) regionClaimed(r *request, rec, pre, prev *idemkit.Record, now time.Time, how string) {
	g := w.reg
	if g == nil {
		return
	}
	f, region := g.routing(rec.Scope.Tenant)
	if fencing(f) && f.Region == region && !g.shownNew(f, rec.Scope.Key, fenceTime(rec)) {
		w.fail(invFailoverFence, "%s of r%d stored %s in %s over %s, under the failover of tenant %s to %s at %s: its key %s is not shown to be first used after it",
			how, r.n, rec.ID, region, describe(pre, now), rec.Scope.Tenant, f.Region, w.since(f.At), rec.Scope.Key)
	}
	other := otherRegion(region)
	g.mu.Lock()
	mine, theirs := g.items[region][rec.ID], g.items[other][rec.ID]
	g.mu.Unlock()
	var seen uint64
	if mine != nil {
		seen = mine.base[other]
	}
	if theirs == nil || theirs.vc[other] <= seen {
		return // the region had received every write of the other
	}
	cur := w.liveRecord(viewCtx(other), rec.ID, now)
	if mayReplace(cur, prev) {
		return
	}
	if f != nil && f.AcceptUnreplicated && f.Region == region {
		if !theirs.at.Before(f.At) {
			w.fail(invFailoverWindow, "%s of r%d in %s ran over the %s of %s in %s, written at %s, not before the failover's At %s",
				how, r.n, region, describe(cur, now), rec.ID, other, w.since(theirs.at), w.since(f.At))
		}
		g.mu.Lock()
		g.accepted[r] = true
		g.stats.AcceptedRuns++
		for i := range g.completions[rec.ID] {
			g.completions[rec.ID][i].waive(f)
		}
		for _, e := range w.execs {
			if e.live && e.recID == rec.ID && e.owner != rec.Owner {
				g.superseded[e] = true
			}
		}
		g.mu.Unlock()
		w.logf("  (accepted: the %s in %s had not replicated)", describe(cur, now), other)
		return
	}
	w.fail(invCrossRegion, "%s of r%d won %s in %s over %s, but %s holds a later %s (written at %s) that %s never received",
		how, r.n, rec.ID, region, describe(pre, now), other, describe(cur, now), w.since(theirs.at), region)
}

// regionWrite notes what a failover's fence did to a write of r (nil: an
// operator's) that makes the change op (see faultstore.Op): rec in place
// of pre, the record stored before it (nil: none), answered met and err.
// A claim of a key the fence does not show new is refused (the region's
// record met, or a *dynamo.FailoverError); one of a key shown new never
// is. A release the fence routes writes a tombstone only in place of its
// owner's in_flight record.
func (w *World) regionWrite(r *request, op string, rec, pre, met *idemkit.Record, err error, now time.Time) {
	g := w.reg
	if g == nil {
		return
	}
	f, region := g.routing(rec.Scope.Tenant)
	if !fencing(f) || f.Region != region || g.shownNew(f, rec.Scope.Key, fenceTime(rec)) {
		if op == faultstore.OpClaim && r != nil && fencing(f) && f.Region == region {
			g.mu.Lock()
			g.factsOf(r).shownNew = true
			g.mu.Unlock()
		}
		return
	}
	var fe *dynamo.FailoverError
	switch {
	case op == faultstore.OpClaim && r != nil && (met != nil || errors.As(err, &fe)):
		g.mu.Lock()
		g.factsOf(r).fenced = true
		g.stats.Fenced++
		g.mu.Unlock()
	case op == faultstore.OpRelease && err == nil && met == nil:
		own := pre != nil && pre.State == idemkit.StateInFlight && pre.Owner == rec.Owner
		post, _ := w.inner.Get(context.Background(), rec.ID)
		if !own && post != nil && post.Version == rec.Version {
			w.fail(invFailoverFence, "a release of %s by %s in %s, where its tenant is failed over and fenced, wrote a tombstone over %s: it would win over a record not yet replicated from %s",
				rec.ID, rec.Owner, region, describe(pre, now), otherRegion(region))
		}
	}
}

// fenceTime is the time the regional store's fence reads a key's time
// against, as package dynamo reads it from the record written: a claim's
// CreatedAt, a resolution's ResolvedAt, a release's or a mark's
// LeaseUntil.
func fenceTime(rec *idemkit.Record) time.Time {
	switch {
	case rec.Resolution != nil:
		return rec.Resolution.ResolvedAt
	case rec.State == idemkit.StateInFlight:
		return rec.CreatedAt
	case rec.State == idemkit.StateReleased, rec.State == idemkit.StateIndeterminate:
		return rec.LeaseUntil
	}
	return rec.CreatedAt
}

// superseded reports whether e runs on beside a run the unreplicated
// window let through (AcceptUnreplicated): its record may then be that
// run's, or gone, wherever the latest write is.
func (w *World) superseded(e *execution) bool {
	g := w.reg
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.superseded[e]
}

// mayReplace reports whether a claim made in place of prev (nil: a
// Create) may replace the live record cur (nil: none, a tombstone or an
// expired record): a free key, or the very version the claim judged.
func mayReplace(cur, prev *idemkit.Record) bool {
	return cur == nil || prev != nil && cur.Version == prev.Version
}

// regionBegin checks that an execution does not run a key whose
// completion landed in either region and lives, unless the operator
// accepted it: under AcceptUnreplicated, a completion the region the
// tenant left made before At.
func (w *World) regionBegin(e *execution) {
	g := w.reg
	if g == nil {
		return
	}
	tenant := strconv.FormatInt(e.req.shape.tenant, 10)
	f, _ := g.routing(tenant)
	now := w.insts[e.req.inst].clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range g.completions[e.recID] {
		c := &g.completions[e.recID][i]
		if !c.waive(f) && c.owner != e.owner && now.Unix() < c.exp {
			w.fail(invCompletedOnce, "e%d (r%d) runs %s, whose run of owner %s completed in %s at %s: that record lives until %s",
				e.n, e.req.n, e.recID, c.owner, c.region, w.since(c.at), w.since(time.Unix(c.exp, 0)))
		}
	}
}

// regionAnswered checks the answer of a request that a failover's fence
// refused, or would have refused, and nothing else spoiled.
func (w *World) regionAnswered(r *request) {
	g := w.reg
	if g == nil {
		return
	}
	g.mu.Lock()
	f := g.facts[r]
	g.mu.Unlock()
	if f == nil || f.cut || f.failed || r.injected || r.exec != nil || r.panic != nil || r.err != nil {
		return
	}
	p := r.resp.Problem
	if p == nil || p.Type != httpproblem.TypeStoreUnavailable {
		return
	}
	now := w.insts[r.inst].clock.Now()
	id := w.recordID(r)
	switch {
	case f.fenced && claimUnknown(r):
		w.fail(invFailoverFence, "r%d, refused by the failover's fence alone, was told its key may have been recorded: the fence stores nothing", r.n)
	case f.fenced:
		rec := w.liveRecord(context.Background(), id, now)
		if rec != nil && answers(rec, r.shape.intent() == w.bound[w.life(id)], now) {
			w.fail(invFailoverFence, "r%d got 503 from the failover's fence, but the region holds %s, which answers it", r.n, describe(rec, now))
		}
	case f.shownNew:
		w.fail(invFailoverFence, "r%d got 503 (%s), but its key %s is shown to be first used after the failover", r.n, r.answer(), r.shape.key)
	}
}

// answers reports whether the live record rec answers a fenced claim
// (bound: the claim is the request the key is bound to): every record but
// one the claim would replace or mark, a failed record or, under either
// policy, a lease ended.
func answers(rec *idemkit.Record, bound bool, now time.Time) bool {
	switch {
	case rec == nil || !rec.Live(now):
		return false
	case !bound:
		return true
	case rec.State == idemkit.StateFailed, rec.State == idemkit.StateInFlight && rec.LeaseExpired(now):
		return false
	}
	return true
}
