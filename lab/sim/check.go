package sim

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/httpproblem"
)

// The invariants, each checked from the data (the store's contents and
// answers, the handlers' own ledger, the answers clients receive), never
// from what the kit says of itself. The caller of each check holds w.mu.
const (
	invOneExecution = "one-execution"       // at most one live execution per scope
	invClaim        = "claim"               // a claim replaces only what the rules let it
	invBinding      = "binding"             // a key stays bound to its first request
	invPhantom      = "phantom-claim"       // no claim lands for a request that has answered
	invAnswer       = "answer"              // every answer is an execution's of the same request, or a true problem
	invRecordLives  = "record-outlives-run" // a record lives while its handler runs
	invResolve      = "resolve-while-running"
	invExecutionID  = "execution-id" // distinct wherever the request's identity differs
	invVisible      = "visible"      // every non-final state is listed for the operator
	invNeverStored  = "never-stored" // nothing the policy never stores is stored
)

// claimed checks a claim that the store applied: rec replaced pre (nil:
// no live record: none, a tombstone or an expired one; prev is the record
// a Replace replaced as the request read it, nil for a Create), a record
// the engine may replace.
func (w *World) claimed(r *request, rec, pre, prev *idemkit.Record, now time.Time, late bool) {
	how := "claim"
	if late {
		how = "late claim copy"
	}
	intent := r.shape.intent()
	w.logf("  %s of r%d (owner %s) won %s over %s", how, r.n, rec.Owner, rec.ID, describe(pre, now))
	w.regionClaimed(r, rec, pre, prev, now, how)
	if pre == nil {
		w.bound[w.life(rec.ID)] = intent
	} else {
		bound := w.bound[w.life(rec.ID)]
		switch {
		case pre.State == idemkit.StateFailed && pre.Owner != rec.Owner,
			pre.State == idemkit.StateInFlight && w.p.Policy == idemkit.Takeover && pre.LeaseExpired(now):
			if bound != intent {
				w.fail(invBinding, "%s of r%d (%s) replaced the %s record of %s bound to %s", how, r.n, intent, pre.State, rec.ID, bound)
			}
		default:
			w.fail(invClaim, "%s of r%d replaced %s", how, r.n, describe(pre, now))
		}
	}
	if !r.done || claimUnknown(r) {
		return
	}
	// A copy of a claim landing after its request answered holds the key
	// for a run nobody makes: a Create stores nothing where a record is
	// (and a store keeps every record past the time a copy can land), a
	// Replace only in place of the version its request read, so none may
	// land.
	w.fail(invPhantom, "%s of r%d, made at %s, landed after r%d was answered (%s): %s is in_flight for a run nobody makes",
		how, r.n, w.since(now), r.n, r.answer(), rec.ID)
}

// claimUnknown reports whether r was told that its claim may be left.
func claimUnknown(r *request) bool {
	p := r.resp.Problem
	return p != nil && p.Type == httpproblem.TypeStoreUnavailable && strings.Contains(p.Detail, "may have been recorded")
}

func describe(rec *idemkit.Record, now time.Time) string {
	if rec == nil {
		return "no record"
	}
	lease := "lease live"
	if rec.LeaseExpired(now) {
		lease = "lease ended"
	}
	return string(rec.State) + " record of owner " + rec.Owner + " (" + lease + ")"
}

// resolved checks a resolution that the store applied over pre: rec, the
// record it stored, holds the decision.
func (w *World) resolved(pre, rec *idemkit.Record, late bool) {
	if pre == nil || rec.Resolution == nil {
		return
	}
	res := rec.Resolution
	w.stats.Resolutions++
	w.logf("  resolution of %s as %s landed", pre.ID, res.As)
	if res.As == idemkit.StateCompleted && rec.Snapshot != nil {
		if n, ok := tagN(string(rec.Snapshot.Body), "op"); ok {
			w.res[n] = &resolution{n: n, recID: pre.ID, as: res.As, intent: w.bound[w.life(pre.ID)]}
		}
	}
	for _, e := range w.execs {
		if e.owner == pre.Owner && e.recID == pre.ID && e.live {
			w.fail(invResolve, "%s resolved %s while e%d (r%d), its execution, still runs", pre.ID, res.As, e.n, e.req.n)
		}
	}
}

// answer describes what r received.
func (r *request) answer() string {
	switch {
	case r.panic != nil:
		return "panic"
	case r.err != nil:
		return "error: " + r.err.Error()
	case r.resp.Problem != nil:
		return strconv.Itoa(r.resp.Status) + " " + strings.TrimPrefix(r.resp.Problem.Type, httpproblem.Base)
	case r.resp.Replayed:
		return strconv.Itoa(r.resp.Status) + " replay of " + r.resp.Body
	}
	return strconv.Itoa(r.resp.Status) + " fresh " + r.resp.Body
}

// recordID returns the record r's answer is about: the one its claim
// named, else the one its scope names.
func (w *World) recordID(r *request) string {
	if r.recID != "" {
		return r.recID
	}
	op := r.shape.method + " " + r.shape.template
	return idemkit.Scope{Tenant: strconv.FormatInt(r.shape.tenant, 10), Operation: op, Key: r.shape.key}.ID(w.p.AccountWide)
}

// answered checks the answer r received.
func (w *World) answered(r *request) {
	w.logf("r%d answered: %s", r.n, r.answer())
	now := w.insts[r.inst].clock.Now()
	p := r.resp.Problem
	intent := r.shape.intent()
	if r.exec != nil && r.exec.crashed {
		return // its invocation froze: the client timed out, with no answer
	}
	w.regionAnswered(r)
	switch {
	case r.panic != nil || r.err != nil:
		if r.exec == nil {
			w.fail(invAnswer, "r%d got its handler's failure (%s) without its handler running", r.n, r.answer())
		}
		return
	case p == nil && !r.resp.Replayed:
		if r.exec == nil || r.resp.Body != r.exec.tag() {
			w.fail(invAnswer, "r%d got a fresh answer %q that is not its own execution's", r.n, r.resp.Body)
		}
		return
	case p == nil:
		for _, h := range []string{"Set-Cookie", "Date"} {
			if _, ok := r.resp.Header[h]; ok {
				w.fail(invNeverStored, "r%d was replayed a %s header", r.n, h)
			}
		}
		if n, ok := tagN(r.resp.Body, "e"); ok && n <= len(w.execs) {
			e := w.execs[n-1]
			if e.req.shape.intent() != intent || !e.returned || e.status != r.resp.Status {
				w.fail(invAnswer, "r%d (%s) was replayed %d %s, the answer of e%d for r%d (%s)", r.n, intent, r.resp.Status, e.tag(), e.n, e.req.n, e.req.shape.intent())
			}
			return
		}
		if n, ok := tagN(r.resp.Body, "op"); ok && w.res[n] != nil {
			if res := w.res[n]; res.intent != intent {
				w.fail(invAnswer, "r%d (%s) was replayed op%d, an operator's answer for %s", r.n, intent, n, res.intent)
			}
			return
		}
		w.fail(invAnswer, "r%d was replayed %q, which no execution or operator produced", r.n, r.resp.Body)
		return
	}
	id := w.recordID(r)
	rec := w.liveRecord(context.Background(), id, now)
	bound := w.bound[w.life(id)]
	lie := func(why string) {
		w.fail(invAnswer, "r%d got %s, but %s (record %s: %s)", r.n, r.answer(), why, id, describe(rec, now))
	}
	switch p.Type {
	case httpproblem.TypeTenantMissing:
		if exactTenant(r.shape.tenant) {
			lie("its tenant is exact")
		}
	case httpproblem.TypeFingerprintMismatch, httpproblem.TypeOperationMismatch:
		switch {
		case rec == nil:
			lie("no record holds the key")
		case bound == intent:
			lie("the key is bound to this very request")
		case p.Type == httpproblem.TypeOperationMismatch && opOf(bound) == r.shape.method+" "+r.shape.template:
			lie("the key was first used for this operation")
		}
	case httpproblem.TypeInFlight:
		// True when the answer was made: the key is held now, or a
		// write ended its holder's claim since the request was sent.
		if (rec == nil || rec.State != idemkit.StateInFlight) && w.unheld[id].Before(r.sentTrue) {
			lie("no request holds the key")
		}
	case httpproblem.TypeIndeterminate:
		// True when the answer was made: the record is indeterminate, or
		// a mark landed since the request was sent and the record expired
		// since.
		marked := rec == nil && !w.unheld[id].Before(r.sentTrue)
		if (rec == nil || rec.State != idemkit.StateIndeterminate) && !marked {
			lie("the record is not indeterminate")
		}
	case httpproblem.TypeOutcomePending:
		// True when the answer was made: the record is one whose run may
		// still complete (marked for its ended lease), or a write changed
		// it since the request was sent (the mark, the late completion).
		pending := rec != nil && rec.State == idemkit.StateIndeterminate && rec.Cause == idemkit.CauseLeaseExpired
		if !pending && w.unheld[id].Before(r.sentTrue) {
			lie("no run whose lease ended may still complete it")
		}
	case httpproblem.TypeReplayWindowPassed:
		if rec == nil || rec.State != idemkit.StateCompleted || now.Before(rec.ReplayUntil) {
			lie("no completed record past its replay window holds the key")
		}
	case httpproblem.TypeKeyExpired:
		if rec != nil {
			lie("a live record holds the key")
		}
	case httpproblem.TypeStoreUnavailable:
		if !r.faulted || r.exec != nil {
			lie("its store calls did not fail, or it ran")
		}
	case httpproblem.TypeOutcomeUnknown:
		if r.exec == nil || !(r.exec.unknown || r.exec.lostLease) {
			lie("its handler did not end with an unknown outcome")
		}
	default:
		lie("no rule allows this problem")
	}
}

// opOf returns the operation of an intent ("t1 POST /orders/1 k body").
func opOf(intent string) string {
	f := strings.Fields(intent)
	if len(f) < 3 {
		return ""
	}
	tmpl := f[2]
	if i := strings.LastIndexByte(tmpl, '/'); i > 0 {
		tmpl = tmpl[:i] + "/{id}"
	}
	return f[1] + " " + tmpl
}

func tagN(body, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(body, prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// maxSkew returns the clock furthest ahead: every host's is within the
// minute a record's life and idemkit.Resolve tolerate.
func (w *World) maxSkew() time.Duration {
	m := time.Duration(0)
	for _, in := range w.insts {
		m = max(m, in.clock.skew)
	}
	return m
}

// checkRunning checks that every running handler's record is there,
// still its own, to every instance's clock.
func (w *World) checkRunning() {
	at := w.tl.Now().Add(w.maxSkew())
	for _, e := range w.execs {
		if !e.live || w.superseded(e) {
			continue
		}
		rec := w.liveRecord(w.latestCtx(), e.recID, at)
		switch {
		case rec == nil:
			w.fail(invRecordLives, "e%d (r%d) still runs but its record %s is gone at %s", e.n, e.req.n, e.recID, w.since(at))
		case rec.Owner != e.owner:
			w.fail(invRecordLives, "e%d (r%d) still runs but its record %s is %s", e.n, e.req.n, e.recID, describe(rec, at))
		}
	}
}

// checkVisible checks that every record waiting for an operator is in
// the listing the operator read at now; ctx reads the records listed.
func (w *World) checkVisible(ctx context.Context, listed []*idemkit.Record, now time.Time) {
	in := map[string]bool{}
	for _, r := range listed {
		in[r.ID] = true
	}
	for _, id := range w.sortedIDs() {
		rec := w.liveRecord(ctx, id, now)
		if rec == nil {
			continue
		}
		waiting := rec.State == idemkit.StateIndeterminate || rec.State == idemkit.StateInFlight && rec.LeaseExpired(now)
		if waiting && !in[id] {
			w.fail(invVisible, "%s is %s but the operator tools do not list it", id, describe(rec, now))
		}
	}
}

// checkStored checks every stored record against the policy: a completed
// record holds a cacheable answer of an execution of its own request (or
// an operator's), with no header a replay never carries.
func (w *World) checkStored() {
	now := w.tl.Now()
	for _, id := range w.sortedIDs() {
		rec := w.liveRecord(w.latestCtx(), id, now)
		if rec == nil || rec.State != idemkit.StateCompleted || rec.Snapshot == nil {
			continue
		}
		s := rec.Snapshot
		for _, h := range []string{"Set-Cookie", "Date"} {
			if s.Header.Get(h) != "" {
				w.fail(invNeverStored, "%s stores a %s header", id, h)
			}
		}
		if rec.Resolution != nil {
			continue
		}
		if !idemkit.DefaultCacheable(s.Status) {
			w.fail(invNeverStored, "%s stores status %d, which the policy never stores", id, s.Status)
		}
		n, ok := tagN(string(s.Body), "e")
		if !ok || n > len(w.execs) {
			w.fail(invNeverStored, "%s stores %q, which no execution answered", id, s.Body)
			continue
		}
		e := w.execs[n-1]
		if !e.returned || e.status != s.Status || e.recID != id {
			w.fail(invNeverStored, "%s stores %d %s, which e%d did not answer for it", id, s.Status, s.Body, e.n)
		}
	}
}
