package explore

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"time"
)

// Result is what a search found.
type Result struct {
	Config      Config
	States      int // distinct abstract states reached
	Transitions int // actions taken from a state (each one a replay)
	Depth       int // the longest history explored
	Elapsed     time.Duration
	Truncated   bool // MaxStates stopped the search
	// Violations holds, for each guarantee broken, a shortest history
	// that breaks it (breadth first: no shorter one exists within the
	// bounds), in the order found.
	Violations []*Violation
}

// Summary is the line a run prints.
func (r *Result) Summary() string {
	s := fmt.Sprintf("%s: explored %d states, %d transitions, depth %d, %.1f s", r.Config.Name, r.States, r.Transitions, r.Depth, r.Elapsed.Seconds())
	if r.Truncated {
		s += " (truncated at MaxStates)"
	}
	return s
}

// replayed is what one replay of a history saw at its end.
type replayed struct {
	hash    [16]byte
	enabled []string
	vios    []*Violation // found after the last action
	log     [][]string   // per action, when logging
}

// Bubble runs f inside a testing/synctest bubble (synctest.Test), and
// Wait is synctest.Wait: the search replays each history in a bubble of
// its own, from the start.
type Bubble func(f func())

// replay runs the history path in a fresh world inside a bubble, and
// returns the state it reaches.
func replay(cfg Config, bubble Bubble, wait func(), path []string, logOn bool) (out replayed, err error) {
	bubble(func() {
		w, nerr := newWorld(cfg, wait, logOn)
		if nerr != nil {
			err = nerr
			return
		}
		defer w.teardown()
		for i, label := range path {
			w.mu.Lock()
			w.step = i + 1
			w.log = nil
			var act *action
			for _, a := range w.enabled() {
				if a.label == label {
					act = &a
					break
				}
			}
			if act == nil {
				w.mu.Unlock()
				err = fmt.Errorf("explore: action %q is not enabled after %q: the world is not deterministic", label, path[:i])
				return
			}
			act.do()
			w.mu.Unlock()
			w.settle()
			w.mu.Lock()
			w.freeze()
			w.expire()
			w.checkState()
			out.log = append(out.log, w.log)
			w.mu.Unlock()
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, v := range w.vios {
			if v.Step == len(path) {
				out.vios = append(out.vios, v)
			}
		}
		sum := sha256.Sum256([]byte(w.state()))
		copy(out.hash[:], sum[:16])
		for _, a := range w.enabled() {
			out.enabled = append(out.enabled, a.label)
		}
	})
	return out, err
}

type node struct {
	parent  *node
	label   string
	depth   int
	enabled []string
}

func (n *node) path() []string {
	p := make([]string, n.depth)
	for x := n; x.parent != nil; x = x.parent {
		p[x.depth-1] = x.label
	}
	return p
}

// Search explores every history of cfg within its bounds, breadth first,
// replaying each from the start, and prunes a state already reached. It
// stops at the first violation, or, with all, records the first of each
// guarantee and explores on (past the violations too).
func Search(cfg Config, bubble Bubble, wait func(), all bool) (*Result, error) {
	cfg = cfg.withDefaults()
	start := time.Now()
	res := &Result{Config: cfg}
	root, err := replay(cfg, bubble, wait, nil, false)
	if err != nil {
		return nil, err
	}
	visited := map[[16]byte]bool{root.hash: true}
	queue := []*node{{enabled: root.enabled}}
	seen := map[string]bool{}
	for len(queue) > 0 {
		n := queue[0]
		queue[0] = nil
		queue = queue[1:]
		if n.depth >= cfg.Depth {
			continue
		}
		for _, label := range n.enabled {
			child := &node{parent: n, label: label, depth: n.depth + 1}
			path := child.path()
			r, err := replay(cfg, bubble, wait, path, false)
			if err != nil {
				return nil, err
			}
			res.Transitions++
			bad := false
			for _, v := range r.vios {
				bad = true
				if seen[v.Invariant] {
					continue
				}
				seen[v.Invariant] = true
				full, err := replay(cfg, bubble, wait, path, true)
				if err != nil {
					return nil, err
				}
				v.Trace = trace(path, full.log)
				res.Violations = append(res.Violations, v)
			}
			if bad && !all {
				res.Elapsed = time.Since(start)
				res.States = len(visited)
				return res, nil
			}
			if visited[r.hash] {
				continue
			}
			visited[r.hash] = true
			res.Depth = max(res.Depth, child.depth)
			child.enabled = r.enabled
			queue = append(queue, child)
			if cfg.MaxStates > 0 && len(visited) >= cfg.MaxStates {
				res.Truncated = true
				queue = nil
				break
			}
		}
		n.enabled = nil
	}
	res.States = len(visited)
	res.Elapsed = time.Since(start)
	return res, nil
}

// trace writes a history: each action and what came of it.
func trace(path []string, log [][]string) []string {
	var out []string
	for i, label := range path {
		out = append(out, fmt.Sprintf("%2d. %s", i+1, label))
		if i < len(log) {
			for _, l := range log[i] {
				out = append(out, "      "+l)
			}
		}
	}
	return out
}

// Report writes the violations of a result, each with its trace.
func (r *Result) Report() string {
	var b strings.Builder
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "%s: VIOLATION %s (after action %d)\n", r.Config.Name, v, v.Step)
		for _, l := range v.Trace {
			b.WriteString("  " + l + "\n")
		}
	}
	return b.String()
}
