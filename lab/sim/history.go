package sim

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/policydefault"
)

// Kind is what a step does.
type Kind uint8

const (
	Send    Kind = iota // a client sends a request (a retry or a reuse of its key)
	Resume              // a handler that runs on returns
	Advance             // time passes, firing the timers due
	Deliver             // a write held in the network lands
	Operate             // an operator lists, inspects, resolves
	Crash               // a running handler's invocation freezes for good
)

// Step is one step of a history. Each carries the seed of the faults
// drawn during it, so that a history with steps removed keeps the
// faults of the others.
type Step struct {
	Kind     Kind
	Client   int
	Variant  int
	Instance int
	Outcome  outcome
	Deadline time.Duration // Send: the Lambda deadline; zero: none (a server)
	N        int           // Resume, Crash: which running handler; Deliver: which copy; Operate: which record
	Op       int           // Operate: list, resolve failed, resolve completed
	D        time.Duration // Advance
	Seed     uint64
}

func (s Step) String() string {
	switch s.Kind {
	case Send:
		dl := "server"
		if s.Deadline > 0 {
			dl = "deadline " + s.Deadline.String()
		}
		return fmt.Sprintf("send c%d %s on i%d, handler %s, %s", s.Client, variantNames[s.Variant%nVariants], s.Instance, s.Outcome%nOutcomes, dl)
	case Resume:
		return fmt.Sprintf("resume handler #%d: %s", s.N, s.Outcome%nOutcomes)
	case Advance:
		return "advance " + s.D.String()
	case Deliver:
		return fmt.Sprintf("deliver late copy #%d", s.N)
	case Operate:
		return fmt.Sprintf("operator on i%d: %s #%d", s.Instance, opNames[s.Op%nOps], s.N)
	case Crash:
		return fmt.Sprintf("crash handler #%d", s.N)
	}
	return regionStepString(s)
}

// Generate returns the world and the history of n steps that seed names.
func Generate(seed uint64, n int) (Params, []Step) {
	rng := rand.New(rand.NewPCG(seed, 0x51e5))
	p := Params{
		Policy:       idemkit.StalePolicy(rng.IntN(2)),
		AccountWide:  rng.IntN(2) == 1,
		ReplayWindow: time.Duration(1+rng.IntN(10)) * time.Minute,
		MaxRenewals:  1 + rng.IntN(6),
		FaultPct:     []int{0, 5, 10, 20}[rng.IntN(4)],
	}
	p.Retention = p.ReplayWindow + time.Duration(rng.IntN(20))*time.Minute
	for i := 0; i < 2+rng.IntN(2); i++ {
		// Skews within the lease margin's tolerance (2 s between any two).
		p.Skews = append(p.Skews, time.Duration(rng.IntN(1200)-600)*time.Millisecond)
	}
	if p.Policy == idemkit.FailClosed && rng.IntN(3) == 0 {
		// A host whose clock runs ahead past the lease margin, within the
		// minute idemkit.Resolve tolerates: its retries mark a lease
		// ended that the owner's clock still runs (under Takeover that is
		// the gap RELIABILITY.md states, so only under FailClosed).
		p.Skews = append(p.Skews, time.Duration(3+rng.IntN(28))*time.Second)
	}
	for i := 0; i < 2+rng.IntN(3); i++ {
		c := Client{Tenant: 1000 + int64(rng.IntN(2)), Order: 1 + rng.IntN(2)}
		if rng.IntN(5) == 0 {
			c.Tenant = 1<<60 + 4*int64(rng.IntN(2))
		}
		if rng.IntN(3) == 0 {
			c.UUIDv7 = true
			// Dated so that the key's age passes the retention (plus
			// the 5 min skew allowed) within the first minutes: records
			// of it may still live then.
			c.KeyAge = p.Retention + policydefault.KeyClockSkew - time.Duration(rng.IntN(15))*time.Minute
			c.keyBits = rng.Uint64()
		} else {
			c.Key = fmt.Sprintf("k%d", rng.IntN(3))
		}
		p.Clients = append(p.Clients, c)
	}
	steps := make([]Step, n)
	for i := range steps {
		s := Step{Seed: rng.Uint64(), Instance: rng.IntN(len(p.Skews)), N: rng.IntN(8)}
		switch x := rng.IntN(100); {
		case x < 40:
			s.Kind, s.Client = Send, rng.IntN(len(p.Clients))
			s.Variant = vRetry
			if rng.IntN(3) == 0 {
				s.Variant = 1 + rng.IntN(nVariants-1)
			}
			s.Outcome = outcome(rng.IntN(int(nOutcomes)))
			if rng.IntN(3) == 0 {
				s.Outcome = oPark
			}
			if rng.IntN(2) == 0 {
				s.Deadline = time.Duration(1+rng.IntN(10)) * time.Second
			}
		case x < 65:
			s.Kind = Advance
			switch y := rng.IntN(10); {
			case y < 6:
				s.D = time.Duration(100+rng.IntN(3000)) * time.Millisecond
			case y < 9:
				s.D = time.Duration(3+rng.IntN(60)) * time.Second
			default:
				s.D = time.Duration(1+rng.IntN(20)) * time.Minute
			}
		case x < 77:
			s.Kind, s.Outcome = Resume, outcome(rng.IntN(int(nOutcomes)))
		case x < 85:
			s.Kind = Deliver
		case x < 97:
			s.Kind, s.Op = Operate, rng.IntN(nOps)
		default:
			s.Kind = Crash
		}
		steps[i] = s
	}
	return p, steps
}

// uuidV7 returns a UUIDv7 key dated t, with the random bits bits.
func uuidV7(bits uint64, t time.Time) string {
	var u uuid.UUID
	binary.BigEndian.PutUint64(u[8:], bits)
	binary.BigEndian.PutUint16(u[6:], uint16(bits>>17))
	ms := uint64(t.UnixMilli())
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = u[6]&0x0f | 0x70
	u[8] = u[8]&0x3f | 0x80
	return u.String()
}

var debugStuck = false

// Result is the outcome of one run of a history.
type Result struct {
	Params    Params
	Steps     []Step
	Lines     []string // one per step run: the step and what happened
	Violation *Violation
	Stats     Stats
}

// History returns the run as text, one line per step.
func (r *Result) History() string {
	var b strings.Builder
	fmt.Fprintf(&b, "world: %s\n", r.Params)
	for _, l := range r.Lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if r.Violation != nil {
		fmt.Fprintf(&b, "VIOLATION %s\n", r.Violation)
	}
	return b.String()
}

// Run runs steps in the world of p over inner (nil: a memstore) and
// checks every invariant after every step. wait must return once every
// goroutine the world started is blocked: synctest.Wait, with the run
// inside a testing/synctest bubble.
func Run(p Params, steps []Step, inner Store, wait func()) (*Result, error) {
	w, err := NewWorld(p, inner, wait)
	if err != nil {
		return nil, err
	}
	return w.runSteps(steps), nil
}

// runSteps runs steps and checks every invariant after every step.
func (w *World) runSteps(steps []Step) *Result {
	res := &Result{Params: w.p, Steps: steps}
	for i, s := range steps {
		w.mu.Lock()
		w.step, w.log = i, nil
		w.rng = rand.New(rand.NewPCG(s.Seed, uint64(s.Kind)))
		w.mu.Unlock()
		switch s.Kind {
		case Send:
			w.send(s)
		case Resume:
			w.resume(s)
		case Advance:
			w.advance(s.D)
		case Deliver:
			w.deliver(s)
		case Operate:
			w.operate(s)
		case Crash:
			w.crash(s)
		default:
			w.regionStep(s)
		}
		w.mu.Lock()
		w.checkRunning()
		w.checkStored()
		w.stats.Steps++
		res.Lines = append(res.Lines, fmt.Sprintf("%3d %s @%s | %s", i, s, w.since(w.tl.Now()), strings.Join(w.log, "; ")))
		stop := w.violation != nil
		w.mu.Unlock()
		if stop {
			break
		}
	}
	w.mu.Lock()
	w.step, w.log = len(steps), nil
	w.mu.Unlock()
	w.drain()
	if debugStuck {
		fmt.Println(strings.Join(res.Lines, "\n"), "\nEND:", strings.Join(w.log, "\n"))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.violation == nil {
		w.checkStored()
	}
	if len(w.log) > 0 {
		res.Lines = append(res.Lines, "end | "+strings.Join(w.log, "; "))
	}
	res.Violation, res.Stats = w.violation, w.stats
	return res
}

// Shrink returns a shorter history that still breaks the invariant the
// failing one broke: delta debugging over its steps, then one step at a
// time. run runs a history.
func Shrink(steps []Step, inv string, run func([]Step) *Violation) []Step {
	fails := func(s []Step) bool {
		v := run(s)
		return v != nil && v.Invariant == inv
	}
	if v := run(steps); v != nil && v.Step < len(steps) {
		steps = steps[:v.Step+1] // nothing after the violation matters
	}
	n := 2
	for len(steps) >= 2 {
		chunk := (len(steps) + n - 1) / n
		reduced := false
		for start := 0; start < len(steps); start += chunk {
			end := min(start+chunk, len(steps))
			cand := append(append([]Step(nil), steps[:start]...), steps[end:]...)
			if len(cand) > 0 && fails(cand) {
				steps, n, reduced = cand, max(n-1, 2), true
				break
			}
		}
		if !reduced {
			if n >= len(steps) {
				break
			}
			n = min(2*n, len(steps))
		}
	}
	for i := len(steps) - 1; i >= 0 && len(steps) > 1; i-- {
		cand := append(append([]Step(nil), steps[:i]...), steps[i+1:]...)
		if fails(cand) {
			steps = cand
		}
	}
	return steps
}
