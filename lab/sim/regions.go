package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/policydefault"
	"github.com/idemkit/idemkit/internal/recordid"
	"github.com/idemkit/idemkit/internal/setting"
	"github.com/idemkit/idemkit/internal/uuidv7"
)

// The regions of a two-region world, and the name under which the
// regional store reaches the caller's own region (its Regions.Local).
const (
	east  = "east"
	west  = "west"
	local = "local"
)

var regionNames = [2]string{east, west}

func otherRegion(r string) string {
	if r == east {
		return west
	}
	return east
}

// The kinds of step of a two-region world (RunRegions).
const (
	Outage    Kind = Crash + 1 + iota // a region is cut off: unreachable from the other, replication both ways halted
	Heal                              // the cut-off region is reachable again
	Replicate                         // replication copies some of one region's writes to the other
	Failover                          // an operator re-homes a tenant, moves it back home, or ends a reconciled move back
	Reconcile                         // an operator marks a tenant's failover Reconciled, when it is
	Accept                            // an operator marks a tenant's failover AcceptUnreplicated
	Mint                              // a client mints a new key: a UUIDv7 on its own clock, or an opaque one
)

// regionStepString names the steps of a two-region world.
func regionStepString(s Step) string {
	switch s.Kind {
	case Outage:
		return fmt.Sprintf("outage of %s", regionNames[s.Instance%2])
	case Heal:
		return "the cut-off region is back"
	case Replicate:
		n := "all"
		if s.N%4 != 0 {
			n = strconv.Itoa(s.N)
		}
		return fmt.Sprintf("replicate %s to %s: %s", regionNames[s.Instance%2], otherRegion(regionNames[s.Instance%2]), n)
	case Failover:
		return fmt.Sprintf("operator re-homes tenant #%d, At +%s", s.Client, s.D)
	case Reconcile:
		return fmt.Sprintf("operator reconciles tenant #%d", s.Client)
	case Accept:
		return fmt.Sprintf("operator accepts the unreplicated for tenant #%d", s.Client)
	case Mint:
		return fmt.Sprintf("c%d mints a new key", s.Client)
	}
	return "?"
}

// RegionParams are a two-region world's fixed settings.
type RegionParams struct {
	Params
	// KeyClockSkew is the failovers' Failover.KeyClockSkew (zero:
	// idemkit.Policy.KeyClockSkew's default); clients mint UUIDv7 keys on clocks
	// within it, ahead or behind.
	KeyClockSkew time.Duration
}

func (p RegionParams) String() string {
	return fmt.Sprintf("%s regions: instances alternate %s, %s; tenants homed by parity; failover key skew=%s",
		p.Params, east, west, p.skew())
}

func (p RegionParams) skew() time.Duration {
	return setting.Or(p.KeyClockSkew, policydefault.KeyClockSkew)
}

// GenerateRegions returns the two-region world and the history of n
// steps that seed names: Generate's, with about a third of its steps
// replaced by outages, replication, failovers and new keys.
func GenerateRegions(seed uint64, n int) (RegionParams, []Step) {
	p, steps := Generate(seed, n)
	rng := rand.New(rand.NewPCG(seed, 0x2e610))
	rp := RegionParams{Params: p, KeyClockSkew: []time.Duration{30 * time.Second, 2 * time.Minute, 0}[rng.IntN(3)]}
	tenants := 0
	for _, c := range p.Clients {
		if exactTenant(c.Tenant) {
			tenants++
		}
	}
	for i := range steps {
		if rng.IntN(100) >= 25 {
			continue
		}
		s := Step{Seed: steps[i].Seed, Instance: rng.IntN(2), Client: rng.IntN(max(tenants, 1)), N: rng.IntN(8)}
		switch x := rng.IntN(100); {
		case x < 33:
			s.Kind = Replicate
		case x < 50:
			s.Kind, s.Client = Mint, rng.IntN(len(p.Clients))
		case x < 62:
			s.Kind, s.D = Failover, time.Duration(rng.IntN(2000))*time.Millisecond
		case x < 77:
			s.Kind = Reconcile
		case x < 85:
			s.Kind = Outage
		case x < 97:
			s.Kind = Heal
		default:
			s.Kind = Accept
		}
		steps[i] = s
	}
	return rp, steps
}

// Servers are the DynamoDB servers of a two-region world: one client per
// region, straight to its server, and the table, created on both.
type Servers struct {
	East, West dynamo.Client
	Table      string
	// Options are the regional store's (the world sets IndexInFlight).
	Options dynamo.Options
}

// RegionStats count what a two-region world did.
type RegionStats struct {
	Outages, Failovers, Failbacks, Reconciled, Accepted int
	// Replicated counts the items replication copied; Conflicts the items
	// it did not, because the destination held a write made without the
	// source's (last writer wins).
	Replicated, Conflicts int
	// Fenced counts the claims a failover's fence refused; AcceptedRuns
	// the runs the unreplicated window let through (AcceptUnreplicated).
	Fenced, AcceptedRuns int
}

// RunRegions runs steps in the two-region world of p: every instance an
// idemkit.Guard over dynamo.NewRegional, instances alternating between
// the regions east and west, each region a server of srv under a
// replication of last-writer-wins global tables (see regions), and
// checks every invariant after every step. wait is as for Run.
func RunRegions(p RegionParams, steps []Step, srv Servers, wait func()) (*Result, RegionStats, error) {
	g := &regions{p: p, raw: map[string]dynamo.Client{east: srv.East, west: srv.West}, table: srv.Table,
		fo: map[string]dynamo.Failover{}, routes: map[string][]route{}, prev: map[string]string{},
		items:       map[string]map[string]*version{east: {}, west: {}},
		pending:     map[string]map[string]bool{east: {}, west: {}},
		completions: map[string][]completion{}, facts: map[*request]*reqFacts{}, accepted: map[*request]bool{},
		superseded: map[*execution]bool{}}
	opts := srv.Options
	opts.IndexInFlight = true
	store, err := dynamo.NewRegional(dynamo.Regions{
		Clients:  map[string]dynamo.Client{east: &regionClient{g: g, name: east}, west: &regionClient{g: g, name: west}, local: &regionClient{g: g, name: local}},
		Home:     homeOf,
		Override: g.override,
		Local:    local,
	}, srv.Table, opts)
	if err != nil {
		return nil, RegionStats{}, err
	}
	w, err := NewWorld(p.Params, store, wait)
	if err != nil {
		return nil, RegionStats{}, err
	}
	g.w, w.reg = w, g
	res := w.runSteps(steps)
	g.mu.Lock()
	defer g.mu.Unlock()
	return res, g.stats, g.err
}

// homeOf is a tenant's home region: east for an even id, west for an odd.
func homeOf(tenant string) string {
	if n := len(tenant); n > 0 && (tenant[n-1]-'0')%2 == 1 {
		return west
	}
	return east
}

// regions is what a two-region world adds to a world: the routing of
// tenants (their home, an operator's failover), the network between the
// regions (one region may be cut off) and the replication of global
// tables. Every write a process makes in a region is stamped with a
// version, the world's count of writes; replication copies an item, as it
// is then, to the other region unless that holds a later version (last
// writer wins, per item), and only when no region is cut off.
type regions struct {
	p     RegionParams
	w     *World
	raw   map[string]dynamo.Client // each region's server, straight
	table string

	mu          sync.Mutex
	cut         string                         // the region cut off, "" for none
	fo          map[string]dynamo.Failover     // tenant -> the failover routing it
	routes      map[string][]route             // tenant -> every change of its routing, in order
	asOf        time.Time                      // while a late copy lands: the true time it was sent
	prev        map[string]string              // tenant -> the region its failover moved it from
	items       map[string]map[string]*version // region -> record ID -> its item's version
	pending     map[string]map[string]bool     // region -> IDs written there since they last replicated
	seq         uint64
	completions map[string][]completion // record ID -> the completions that landed, in any region
	facts       map[*request]*reqFacts
	accepted    map[*request]bool   // the claims the unreplicated window let through
	superseded  map[*execution]bool // the runs such a claim let another run beside
	stats       RegionStats
	err         error // a replication call that failed: the run is void
}

// version is the version of a region's item: the write it holds (seq,
// the order of last writer wins), made at at in region, and, for each
// region, the latest write made there that the item reflects (vc), and
// that the item the write was made on reflected (base).
type version struct {
	seq      uint64
	at       time.Time
	region   string
	vc, base map[string]uint64
}

// completion is a completed record that landed.
type completion struct {
	owner, region string
	exp           int64 // epoch seconds
	at            time.Time
	waived        bool // the operator accepted that the key may run again (AcceptUnreplicated)
}

// waive reports whether the operator accepted that c's key may run again
// and c be lost: under f, the tenant's failover, AcceptUnreplicated and c
// made before At in the region the tenant left (then or since).
func (c *completion) waive(f *dynamo.Failover) bool {
	if f != nil && f.AcceptUnreplicated && c.region != f.Region && c.at.Before(f.At) {
		c.waived = true
	}
	return c.waived
}

// reqFacts are what the network saw of a request's store calls.
type reqFacts struct {
	fenced   bool // a claim was refused in a region whose failover fences its key
	shownNew bool // a claim was routed by a fencing failover that shows its key new
	cut      bool // a call could not reach its region
	failed   bool // a server failed a call
}

// route is a change of a tenant's routing: from at on, by fo (nil: its
// home).
type route struct {
	at time.Time
	fo *dynamo.Failover
}

// override is the Regions.Override of every process: the tenant's
// failover, or, while a late copy lands, the one that routed it when it
// was sent (the copy goes where its original went).
func (g *regions) override(tenant string) (dynamo.Failover, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.asOf.IsZero() {
		var fo *dynamo.Failover
		for _, r := range g.routes[tenant] {
			if r.at.After(g.asOf) {
				break
			}
			fo = r.fo
		}
		if fo == nil {
			return dynamo.Failover{}, false
		}
		return *fo, true
	}
	f, ok := g.fo[tenant]
	return f, ok
}

// setRoute routes tenant by f (nil: its home) from now on; the caller
// holds g.mu.
func (g *regions) setRoute(tenant string, f *dynamo.Failover) {
	if f == nil {
		delete(g.fo, tenant)
	} else {
		g.fo[tenant] = *f
	}
	g.routes[tenant] = append(g.routes[tenant], route{at: g.w.tl.Now(), fo: f})
}

// land delivers a late copy held by the fault layer. In two regions it
// is routed as its tenant was when it was sent: a copy held in the
// network reaches the region its original was sent to.
func (w *World) land(h *heldCall) {
	if w.reg == nil {
		h.apply()
		return
	}
	g := w.reg
	g.mu.Lock()
	g.asOf = h.sent.Add(-h.skew)
	g.mu.Unlock()
	h.apply()
	g.mu.Lock()
	g.asOf = time.Time{}
	g.mu.Unlock()
}

// routing returns the failover routing tenant (nil: none) and the region
// its records are in.
func (g *regions) routing(tenant string) (*dynamo.Failover, string) {
	if f, ok := g.override(tenant); ok {
		return &f, f.Region
	}
	return nil, homeOf(tenant)
}

// fencing reports whether f fences its tenant: neither reconciled nor
// accepted.
func fencing(f *dynamo.Failover) bool { return f != nil && !f.Reconciled && !f.AcceptUnreplicated }

// shownNew is the fence's rule, as DESIGN.md states it: a key is shown
// to be first used after the failover when it is a UUIDv7 whose time is
// after At + KeyClockSkew and not after the claim's time + KeyClockSkew.
func (g *regions) shownNew(f *dynamo.Failover, key string, now time.Time) bool {
	t, ok := uuidv7.Time(key)
	if !ok || f.At.IsZero() {
		return false
	}
	skew := setting.Or(f.KeyClockSkew, policydefault.KeyClockSkew)
	return t.After(f.At.Add(skew)) && !t.After(now.Add(skew))
}

// unreachable reports whether a call from region from cannot reach
// region to.
func (g *regions) unreachable(from, to string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return from != to && g.cut != "" && (g.cut == from || g.cut == to)
}

func (g *regions) factsOf(r *request) *reqFacts {
	f := g.facts[r]
	if f == nil {
		f = &reqFacts{}
		g.facts[r] = f
	}
	return f
}

// tenants returns the exact tenants of the world's clients, in order.
func (w *World) tenants() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range w.p.Clients {
		t := strconv.FormatInt(c.Tenant, 10)
		if exactTenant(c.Tenant) && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// regionStep runs a step of a two-region world.
func (w *World) regionStep(s Step) {
	g := w.reg
	if g == nil {
		return
	}
	now := w.tl.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch s.Kind {
	case Outage:
		g.mu.Lock()
		if g.cut == "" {
			g.cut = regionNames[s.Instance%2]
			g.stats.Outages++
			w.logf("%s is cut off: unreachable from %s, replication halted", g.cut, otherRegion(g.cut))
		}
		g.mu.Unlock()
	case Heal:
		g.mu.Lock()
		if g.cut != "" {
			w.logf("%s is back", g.cut)
			g.cut = ""
		}
		g.mu.Unlock()
	case Replicate:
		src := regionNames[s.Instance%2]
		limit := s.N
		if limit%4 == 0 {
			limit = 0
		}
		w.logf("%s", g.flush(src, otherRegion(src), limit))
	case Failover:
		w.failover(s, now)
	case Reconcile, Accept:
		ts := w.tenants()
		if len(ts) == 0 {
			return
		}
		t := ts[s.Client%len(ts)]
		g.mu.Lock()
		f, ok := g.fo[t]
		from := g.prev[t]
		g.mu.Unlock()
		if !ok || !fencing(&f) {
			return
		}
		if s.Kind == Accept {
			f.AcceptUnreplicated = true
			g.mu.Lock()
			g.stats.Accepted++
			g.mu.Unlock()
			w.logf("tenant %s: the operator accepts the unreplicated records of %s in %s", t, from, f.Region)
		} else {
			// The operator's Reconciled is true: replication from the
			// region the tenant left caught up, or every record written
			// there before At has expired.
			bound := w.p.Retention + time.Duration(w.p.MaxRenewals+1)*policydefault.Lease + time.Minute
			switch {
			case !g.unreachable(from, f.Region):
				w.logf("%s", g.flush(from, f.Region, 0))
				f.Reconciled = true
				w.logf("tenant %s: replication from %s caught up; reconciled", t, from)
			case now.After(f.At.Add(bound)):
				f.Reconciled = true
				w.logf("tenant %s: every record %s wrote before At has expired; reconciled", t, from)
			default:
				w.logf("tenant %s: %s is cut off, not reconciled", t, from)
				return
			}
			g.mu.Lock()
			g.stats.Reconciled++
			g.mu.Unlock()
		}
		g.mu.Lock()
		g.setRoute(t, &f)
		g.mu.Unlock()
	case Mint:
		if len(w.p.Clients) == 0 {
			return
		}
		i := s.Client % len(w.p.Clients)
		c := &w.p.Clients[i]
		skew := w.reg.p.skew()
		if w.rng.IntN(2) == 0 {
			d := time.Duration(w.rng.Int64N(int64(2*skew))) - skew
			c.Key, c.UUIDv7 = uuidV7(w.rng.Uint64(), now.Add(d)), true
			w.logf("c%d mints %s on a clock %s off", i, c.Key, d.Round(time.Millisecond))
		} else {
			w.tokens++
			c.Key, c.UUIDv7 = "m"+strconv.Itoa(w.tokens), false
			w.logf("c%d mints %s", i, c.Key)
		}
	}
}

// failover is an operator's re-homing of a tenant: away from its home,
// back home (a failover too, fenced until reconciled), or, once back home
// and reconciled, the end of the override. Every process routes by it at
// once; At is that moment or later.
func (w *World) failover(s Step, now time.Time) {
	g := w.reg
	ts := w.tenants()
	if len(ts) == 0 {
		return
	}
	t := ts[s.Client%len(ts)]
	home := homeOf(t)
	g.mu.Lock()
	defer g.mu.Unlock()
	cur, ok := g.fo[t]
	next := dynamo.Failover{Region: otherRegion(home), At: now.Add(s.D), KeyClockSkew: g.p.KeyClockSkew}
	switch {
	case !ok:
		g.prev[t] = home
		g.stats.Failovers++
	case cur.Region != home:
		next.Region = home
		g.prev[t] = cur.Region
		g.stats.Failbacks++
	case cur.Reconciled:
		g.setRoute(t, nil)
		w.logf("tenant %s is routed by its home (%s) again", t, home)
		return
	default:
		g.prev[t] = home
		g.stats.Failovers++
	}
	g.setRoute(t, &next)
	w.logf("tenant %s fails over from %s to %s, At %s", t, g.prev[t], next.Region, w.since(next.At))
}

// flush copies to dst the items written in src since they last
// replicated (at most limit of them, in order of ID; 0: all), each as it
// is then, unless dst holds a later version; it describes what it did.
// The caller holds w.mu.
func (g *regions) flush(src, dst string, limit int) string {
	if g.unreachable(src, dst) {
		return fmt.Sprintf("replication %s to %s halted", src, dst)
	}
	g.mu.Lock()
	ids := make([]string, 0, len(g.pending[src]))
	for id := range g.pending[src] {
		ids = append(ids, id)
	}
	g.mu.Unlock()
	sort.Strings(ids)
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	copied, kept := 0, 0
	ctx := context.Background()
	for _, id := range ids {
		g.mu.Lock()
		delete(g.pending[src], id)
		sv, dv := g.items[src][id], g.items[dst][id]
		g.mu.Unlock()
		if sv == nil {
			continue
		}
		if dv != nil && dv.seq >= sv.seq {
			if dv.vc[src] < sv.vc[src] {
				kept++ // src's write is lost: dst's, later, was made without it
				g.lost(ctx, src, dst, id)
			}
			continue
		}
		item, err := rawGet(ctx, g.raw[src], g.w, id)
		if err == nil && item != nil {
			err = rawPut(ctx, g.raw[dst], g.w, item)
		}
		if err != nil {
			g.mu.Lock()
			if g.err == nil {
				g.err = fmt.Errorf("sim: replicating %s from %s to %s: %w", id, src, dst, err)
			}
			g.mu.Unlock()
			continue
		}
		g.mu.Lock()
		g.items[dst][id] = &version{seq: sv.seq, at: sv.at, region: sv.region, vc: sv.vc, base: sv.vc}
		g.mu.Unlock()
		if b, ok := g.w.bound[src+" "+id]; ok {
			g.w.bound[dst+" "+id] = b
		}
		copied++
	}
	g.mu.Lock()
	g.stats.Replicated += copied
	g.stats.Conflicts += kept
	left := len(g.pending[src])
	g.mu.Unlock()
	out := fmt.Sprintf("replicated %d items %s to %s, %d left", copied, src, dst, left)
	if kept > 0 {
		out += fmt.Sprintf("; %d kept %s's own later write (last writer wins)", kept, dst)
	}
	return out
}

// lost checks a write of src that replication drops for dst's later one,
// made without it: it must not be a completion whose record lives (the
// request would never again be answered with its response; the caller
// holds w.mu).
func (g *regions) lost(ctx context.Context, src, dst, id string) {
	item, err := rawGet(ctx, g.raw[src], g.w, id)
	if err != nil || attrS(item, attrState) != string(idemkit.StateCompleted) {
		return
	}
	if exp, _ := strconv.ParseInt(attrN(item, attrExpiresAt), 10, 64); exp-int64(dynamo.KeptPast/time.Second) <= g.w.tl.Now().Unix() {
		return
	}
	kept, err := rawGet(ctx, g.raw[dst], g.w, id)
	if err != nil || attrS(kept, attrState) == string(idemkit.StateCompleted) && attrS(kept, attrOwner) == attrS(item, attrOwner) {
		return
	}
	tenant, _ := recordid.Tenant(id)
	f, _ := g.routing(tenant)
	g.mu.Lock()
	waived := false
	for i := range g.completions[id] {
		if c := &g.completions[id][i]; c.owner == attrS(item, attrOwner) && c.region == src && c.waive(f) {
			waived = true
		}
	}
	g.mu.Unlock()
	if waived {
		return // the operator accepted its loss
	}
	g.w.fail(invCompletionKept, "replication from %s to %s drops the completion of %s by %s for %s, written in %s without it: the request is never again answered with its response",
		src, dst, id, attrS(item, attrOwner), describeItem(kept), dst)
}

// life returns the key of w.bound for the record id: the record's life
// the key is bound in; in two regions, each region's (the one the record
// is routed to), which replication copies.
func (w *World) life(id string) string {
	if w.reg == nil {
		return id
	}
	tenant, err := recordid.Tenant(id)
	if err != nil {
		return id
	}
	_, region := w.reg.routing(tenant)
	return region + " " + id
}

// acceptedRun reports whether r's claim was let through by a failover's
// AcceptUnreplicated over a record another region had not replicated:
// the window the operator accepted, in which r may run beside that
// record's run.
func (w *World) acceptedRun(r *request) bool {
	if w.reg == nil {
		return false
	}
	w.reg.mu.Lock()
	defer w.reg.mu.Unlock()
	return w.reg.accepted[r]
}
