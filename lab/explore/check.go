package explore

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
)

// The guarantees (docs/DESIGN.md, section 9), each checked from the data:
// the store's records, read directly; what the network delivered and the
// store answered; the handlers' runs; the answers clients received. The
// names follow lab/sim's where the check is the same.
const (
	invOneExecution = "one-execution"         // at most one live run; another only after a release, a failed decision, a takeover or the record's expiry
	invClaim        = "claim"                 // a claim replaces only what the rules let it
	invBinding      = "binding"               // a key stays bound to its first request's fingerprint
	invPhantom      = "phantom-claim"         // a claim of a request that was answered without running never holds the key
	invHeld         = "held-without-run"      // no key held by a claim nobody runs, unless its request was told so
	invReleased     = "released-key-runs"     // a released key runs on its client's next retry
	invAnswer       = "answer"                // every answer is a run's of the same request, or a true problem
	invDecision     = "decision-scope"        // an operator's decision lands on the run it checked
	invResolve      = "resolve-while-running" // no decision while the run may still run
	invLateWrite    = "late-write"            // an older run's write never changes a newer run's record
	invOwnWrite     = "own-write"             // a writer recognises its own landed write
	invRecordLives  = "record-outlives-run"   // a run's record lives, and is its own, while it runs
)

// begin checks a run that starts; the caller holds w.mu.
func (w *world) begin(r *run) {
	now := time.Now()
	for _, p := range w.runs {
		switch {
		case p.live(now):
			w.fail(invOneExecution, "%s (%s) began while %s (%s) still runs", r.tag(), r.att.name, p.tag(), p.att.name)
		case !p.released && !p.failed && !p.takenOver && now.Add(r.att.c.spec.Skew).Before(p.expires):
			// After its record expired, by the clock of the host that
			// claims (within the minute a record's life tolerates), a key
			// is new again: its retention is the client's retry budget.
			w.fail(invOneExecution, "%s (%s) began though %s (%s) was neither released, resolved failed nor taken over",
				r.tag(), r.att.name, p.tag(), p.att.name)
		}
	}
	if rec := w.record(now); rec != nil {
		r.expires = rec.ExpiresAt
	}
	w.runs = append(w.runs, r)
	r.att.run = r
	w.logf("%s (%s) begins", r.tag(), r.att.name)
}

// runOf returns the run of owner, nil when it never ran; the caller holds
// w.mu.
func (w *world) runOf(owner string) *run {
	if a := w.atts[owner]; a != nil {
		return a.run
	}
	return nil
}

// landed checks a call that reached the store: pre is the live record at
// the call's now before it; the caller holds w.mu.
func (w *world) landed(m *msg, pre *idemkit.Record, r result, late bool) {
	met, _ := r.v.(*idemkit.Record)
	if m.method == faultstore.Get {
		if met != nil && r.err == nil {
			for _, o := range w.ops {
				if o.name == m.sender && o.checked == "" {
					o.checked = met.Owner
				}
			}
		}
		return
	}
	if !m.write || r.err != nil || met != nil {
		// Nothing stored: an error, or the record met (its own write
		// landed before, or another's).
		return
	}
	switch m.op {
	case faultstore.OpClaim:
		w.claimed(m, pre, late)
	case faultstore.OpRelease:
		if pre != nil && pre.Owner == m.owner {
			if run := w.runOf(m.owner); run != nil {
				run.released = true
			}
		}
	case faultstore.OpResolve:
		if pre != nil {
			w.resolved(m, pre)
		}
	}
	if m.op != faultstore.OpClaim && m.op != faultstore.OpResolve {
		// A run's own write, or a mark of the lease of the owner it
		// names: it changes only that owner's record.
		post := w.record(m.now)
		if !reflect.DeepEqual(pre, post) && pre != nil && pre.Owner != m.owner {
			w.fail(invLateWrite, "%s of %s (sent at %s) changed %s into %s", m.op, m.owner, w.rel(m.now), describe(pre), describe(post))
		}
	}
}

// claimed checks a claim that won: it replaced pre (nil: no record, or a
// tombstone); the caller holds w.mu.
func (w *world) claimed(m *msg, pre *idemkit.Record, late bool) {
	how := "claim"
	if late {
		how = "late copy of the claim"
	}
	a := w.atts[m.owner]
	w.logf("%s %s of %s won over %s", how, m.id, m.owner, describe(pre))
	fp := fingerprint(a.c.spec.Body)
	switch {
	case pre == nil:
		// No live record: none, a tombstone or an expired one.
	case pre.State == idemkit.StateInFlight && pre.Owner == m.owner:
		// Its own claim, again.
	case pre.State == idemkit.StateIndeterminate && pre.Owner == m.owner && pre.Cause == idemkit.CauseLeaseExpired &&
		pre.Resolution == nil && !pre.LeaseExpired(m.now):
		// Its own claim, marked by a host whose clock runs ahead before the
		// claim's answer came back, taken back within its lease.
	case pre.State == idemkit.StateFailed && pre.Owner != m.owner,
		pre.State == idemkit.StateInFlight && w.cfg.Policy == idemkit.Takeover && pre.LeaseExpired(m.now):
		if pre.Fingerprint != fp {
			w.fail(invBinding, "%s %s (body%d) replaced the %s", how, m.id, a.c.spec.Body, describe(pre))
		}
		if pre.State == idemkit.StateInFlight {
			if run := w.runOf(pre.Owner); run != nil {
				run.takenOver = true
			}
		}
	default:
		w.fail(invClaim, "%s %s replaced the %s", how, m.id, describe(pre))
	}
	own := pre != nil && pre.State == idemkit.StateInFlight && pre.Owner == m.owner
	if a.done && !own && a.class != "claim unknown" && !a.frozen {
		w.fail(invPhantom, "%s %s of %s (sent at %s) landed after %s was answered %q: the key is in_flight for a run nobody makes",
			how, m.id, m.owner, w.rel(m.now), a.name, a.answer)
	}
}

// resolved checks an operator's decision that landed over pre; the
// caller holds w.mu.
func (w *world) resolved(m *msg, pre *idemkit.Record) {
	var o *opRun
	for _, x := range w.ops {
		if x.name == m.sender {
			o = x
		}
	}
	if o == nil {
		return
	}
	w.logf("decision of %s (%s) landed on the %s", o.name, o.as, describe(pre))
	if pre.Owner != o.checked {
		w.fail(invDecision, "the %s decision of %s, who checked the run of %s, landed on the %s", o.as, o.name, o.checked, describe(pre))
	}
	run := w.runOf(pre.Owner)
	if run != nil && run.live(time.Now()) {
		w.fail(invResolve, "%s resolved %s while %s (%s) still runs", o.name, o.as, run.tag(), run.att.name)
	}
	switch o.as {
	case idemkit.StateFailed:
		if run != nil {
			run.failed = true
		}
	case idemkit.StateCompleted:
		w.opFP[o.name] = pre.Fingerprint
	}
}

// classify names the answer a request received.
func classify(snap *idemkit.Snapshot, replayed bool, err error) (class, answer string) {
	var ce *idemkit.ConflictError
	switch {
	case err == nil && replayed:
		return "replay", fmt.Sprintf("%d replay of %s", snap.Status, snap.Body)
	case err == nil:
		return "fresh", fmt.Sprintf("%d fresh %s", snap.Status, snap.Body)
	case errors.Is(err, errUnknown):
		return "outcome unknown", "handler: outcome unknown"
	case errors.Is(err, errHandler):
		return "handler error", "handler error"
	case errors.Is(err, idemkit.ErrFingerprintMismatch):
		return "422", "422 fingerprint mismatch"
	case errors.As(err, &ce):
		return "409", "409 in flight"
	case errors.Is(err, idemkit.ErrIndeterminate):
		return "indeterminate", "indeterminate"
	case errors.Is(err, idemkit.ErrOutcomePending):
		return "pending", "409 outcome pending"
	case errors.Is(err, idemkit.ErrClaimUnknown):
		return "claim unknown", "store error: the claim may be held"
	case errors.Is(err, idemkit.ErrStoreUnavailable):
		return "store error", "store error"
	}
	return "other", "error: " + err.Error()
}

// answered checks the answer attempt a received; the caller holds w.mu.
func (w *world) answered(a *attempt, snap *idemkit.Snapshot, replayed bool, err error) {
	a.done = true
	a.class, a.answer = classify(snap, replayed, err)
	w.logf("%s answered: %s", a.name, a.answer)
	if w.closing {
		return
	}
	now := time.Now().Add(a.c.spec.Skew)
	rec := w.record(now)
	fp := fingerprint(a.c.spec.Body)
	switch a.class {
	case "fresh":
		if a.run == nil || string(snap.Body) != a.run.tag() {
			w.fail(invAnswer, "%s got %s, not the answer of a run of its own", a.name, a.answer)
		}
	case "replay":
		body := string(snap.Body)
		if n, ok := strings.CutPrefix(body, "op"); ok {
			if got := w.opFP[n]; got != fp {
				w.fail(invAnswer, "%s (body%d) was replayed %s, a decision on a record of %q", a.name, a.c.spec.Body, body, got)
			}
			return
		}
		ok := false
		for _, r := range w.runs {
			if r.tag() == body {
				ok = r.returned == "201" && r.att.c.spec.Body == a.c.spec.Body
			}
		}
		if !ok {
			w.fail(invAnswer, "%s (body%d) was replayed %s, which no run of its request answered", a.name, a.c.spec.Body, body)
		}
	case "422":
		if rec == nil || rec.Fingerprint == fp {
			w.fail(invAnswer, "%s got 422 but the record is the %s", a.name, describe(rec))
		}
	case "409", "indeterminate":
		if rec != nil && rec.Owner == a.name {
			w.fail(invOwnWrite, "%s got %s from its own %s", a.name, a.answer, describe(rec))
		}
		if a.class == "indeterminate" && (rec == nil || rec.State != idemkit.StateIndeterminate) {
			w.fail(invAnswer, "%s got indeterminate but the record is the %s", a.name, describe(rec))
		}
		if a.n > 1 {
			prev := a.c.atts[a.n-2]
			if p := prev.run; p != nil && p.released && rec != nil {
				if h := w.atts[rec.Owner]; h != nil && h.done && h.run == nil && h.class != "claim unknown" && !h.frozen {
					w.fail(invReleased, "%s got %s after its %s was released: the key is held by %s, answered %q without running",
						a.name, a.answer, p.tag(), h.name, h.answer)
				}
			}
		}
	}
}

// checkState checks the state reached after an action; the caller holds
// w.mu.
func (w *world) checkState() {
	now := time.Now()
	live := 0
	for _, r := range w.runs {
		if r.live(now) {
			live++
		}
	}
	if live > 1 {
		w.fail(invOneExecution, "%d runs are live at once", live)
	}
	if rec := w.record(now); rec != nil && rec.State == idemkit.StateInFlight && !rec.LeaseExpired(now) {
		if h := w.atts[rec.Owner]; h != nil && h.done && h.run == nil && h.class != "claim unknown" && !h.frozen {
			w.fail(invHeld, "the key is in_flight for %s, which was answered %q without running", h.name, h.answer)
		}
	}
	// A running handler's record is there and its own by every clock.
	ahead := time.Duration(0)
	for _, c := range w.clients {
		ahead = max(ahead, c.spec.Skew)
	}
	for _, r := range w.runs {
		if !r.live(now) {
			continue
		}
		if rec := w.record(now.Add(ahead)); rec == nil || rec.Owner != r.att.name {
			w.fail(invRecordLives, "%s (%s) still runs but the key holds the %s", r.tag(), r.att.name, describe(rec))
		}
	}
}

// state returns the abstract state: the record as stored (a tombstone too) with
// times relative to now, the calls in the network, each actor's phase,
// the answers so far and what the checks remember; the caller holds w.mu.
func (w *world) state() string {
	now := time.Now()
	var b strings.Builder
	d := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Sub(now).String()
	}
	if rec := w.stored(); rec != nil {
		// The record as stored, in any state: a tombstone or an expired
		// record still refuses a Create.
		fmt.Fprintf(&b, "rec %s %s %s %s lease=%s replay=%s exp=%s created=%s done=%s cause=%s", rec.State, rec.Owner, w.vl(rec.Version), rec.Fingerprint,
			d(rec.LeaseUntil), d(rec.ReplayUntil), d(rec.ExpiresAt), d(rec.CreatedAt), d(rec.CompletedAt), rec.Cause)
		if rec.Snapshot != nil {
			fmt.Fprintf(&b, " snap=%d:%s", rec.Snapshot.Status, rec.Snapshot.Body)
		}
		if r := rec.Resolution; r != nil {
			fmt.Fprintf(&b, " res=%s:%s:%s", r.As, r.Operator, d(r.ResolvedAt))
		}
		b.WriteByte('\n')
	}
	msgs := append([]*msg(nil), w.net...)
	sort.Slice(msgs, func(i, j int) bool { return msgs[i].id < msgs[j].id })
	for _, m := range msgs {
		fmt.Fprintf(&b, "msg %s %s now=%s dl=%s w=%t c=%d %s", m.name(), m.owner, d(m.now), d(m.deadline), m.waiting, m.copies, m.arg)
		if m.write {
			fmt.Fprintf(&b, " v=%s", w.vl(m.rec.Version))
		}
		if m.prev != nil {
			fmt.Fprintf(&b, " prev=%s", w.vl(m.prev.Version))
		}
		b.WriteByte('\n')
	}
	for _, c := range w.clients {
		fmt.Fprintf(&b, "client %s:", c.spec.Name)
		for _, a := range c.atts {
			fmt.Fprintf(&b, " %s/%d/%t/%s/dl=%s", a.name, a.calls, a.done, a.class, d(a.deadline))
		}
		b.WriteByte('\n')
	}
	for _, r := range w.runs {
		fmt.Fprintf(&b, "run %d %s live=%t ret=%s rel=%t failed=%t taken=%t\n", r.n, r.att.name, r.live(now), r.returned, r.released, r.failed, r.takenOver)
	}
	for _, o := range w.ops {
		fmt.Fprintf(&b, "op %s %s/%d checked=%s done=%t %s fp=%s\n", o.name, o.as, o.calls, o.checked, o.done, o.answer, w.opFP[o.name])
	}
	fmt.Fprintf(&b, "faults %d\n", w.faults)
	return b.String()
}
