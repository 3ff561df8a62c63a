// Package sim is a seeded, deterministic simulation of the kit's
// contract: every guarantee of docs/DESIGN.md, section 9, is an invariant
// checked after every step of every history.
//
// # The world
//
// A world (Params, drawn from a seed) is two or three instances, each an
// idemkit.Guard behind the shared HTTP front (internal/adapter, as the
// Lambda adapters use it, tenants read from an authorizer context as the
// Lambda runtime decodes it), each with a clock of its own skewed from
// the true time, all over one store behind a fault layer: lost answers
// (the write landed), lost requests, throttles, and copies of a write
// held in the network and landing at a later step, while their signature
// (idemkit.MaxWriteDelay) is valid. Clients retry with the same key, or
// reuse it with another body, resource, operation, tenant, a tenant id
// past 2^53 that rounds into another's, or a method in lower case.
// Handlers complete (cached or not), fail, panic, end with
// idemkit.ErrOutcomeUnknown, or run on past their lease until a later
// step resumes them, their context tells them to stop, their Lambda
// deadline freezes them, or they crash; each writes its effect to a
// ledger keyed by idemkit.ExecutionID (the pattern of HANDLER-WRITES.md).
// Operators list, inspect and resolve through idemkit.Resolve. Time
// passes through lease ends, renewals, replay windows and retention, under
// both stale policies and both key scopes.
//
// # Determinism
//
// A history is a list of steps (Generate); each step carries the seed of
// the faults drawn during it, so a history with steps removed keeps the
// others' faults. The guards read time only through their Config.Clock,
// whose timers are the world's: nothing fires until a step advances time,
// and then one timer at a time, in the order of their times. The world is
// run inside a testing/synctest bubble, whose clock stands still: after
// each action (a request sent, a handler resumed, a timer fired, a late
// copy delivered) the world waits (synctest.Wait) until every goroutine
// it started is blocked: answered, parked in its handler, or waiting on
// a timer of the world. So exactly one goroutine runs at a time, in an
// order the history alone decides, and a seed replays exactly.
//
// # The invariants
//
// They are checked from the data (the store's records, read directly;
// what the store applied, as the fault layer saw it; the handlers'
// ledger; the answers clients received), never from what the kit says:
//
//   - one-execution: at most one live execution per scope at any instant,
//     and a handler runs only under a claim of its own that landed;
//   - claim, binding: a claim replaces a live record only when it is a
//     failed resolution or (Takeover) a lease ended, and then only for the
//     request the key is bound to (a write is told a claim, a completion,
//     a release... by what it stores: faultstore.Op);
//   - phantom-claim: no copy of a claim lands after its request was
//     answered (unless the request was told its claim may be left);
//   - answer: every answer is the response of an execution of a request
//     with the same tenant, operation and fingerprint (or an operator's
//     decision on such a record), or a problem whose words were true of
//     the store when it was made (409 in-flight while a claim held the
//     key since the request was sent, indeterminate once a mark landed);
//   - record-outlives-run, resolve-while-running: a record lives, and is
//     its owner's, while its handler runs; no operator decides it then;
//   - execution-id: distinct wherever tenant, operation, resource or key
//     differ;
//   - visible, never-stored: every indeterminate record and stale lease
//     is listed; no completed record holds a status the policy never
//     stores, a header never replayed, or an answer its execution did
//     not give.
//
// A failing seed is shrunk (Shrink: delta debugging over the steps) and
// printed one line per step; `cd lab && go test ./sim -run TestSim -seed N`
// replays it. The integration module runs the same world against the
// DynamoDB store on a real server (not deterministic there).
//
// # Two regions
//
// RunRegions runs the world (GenerateRegions: Generate's, with a quarter
// of its steps region events) over dynamo.NewRegional and two DynamoDB
// servers, the regions east and west; the integration module's
// TestSimRegions runs it on dynalite. Instances alternate between the
// regions, and tenants are homed by the parity of their id. Each region's
// dynamo.Client is the network: an outage cuts a region off until it
// heals, and then calls between it and the other region fail and
// replication halts. Every write a process makes is stamped with a
// version, the world's count of writes; a replication step copies items,
// as they are then, to the other region unless that holds a later version
// (global tables' last writer wins, per item). An operator re-homes a
// tenant with a dynamo.Failover from Regions.Override (every process
// routes by it at once; At is that moment or up to 2 s later), marks it
// Reconciled when it is (replication from the region left caught up, or
// At plus the retention and every renewal has passed), or
// AcceptUnreplicated, moves it back home (a failover too) and, once that
// is reconciled, ends the override. Clients mint new keys: UUIDv7 keys on
// clocks within the failover's KeyClockSkew, ahead or behind, and opaque
// ones. A late copy held by the fault layer lands in the region its
// original was sent to: the store routes it as its tenant was routed then.
//
// The invariants above hold in each region (a check reads the region the
// call is routed to; record-outlives-run and never-stored read each record
// where its latest write is; visible reads the operator's own region,
// which a listing across tenants reads; a run that AcceptUnreplicated let
// another run beside is spared one-execution and record-outlives-run),
// and five more:
//
//   - cross-region: a claim that lands in one region replaces only what it
//     could replace had that region received the other's writes;
//   - completed-once: once a completion landed in either region, no
//     execution of the key begins until that record expired;
//   - failover-fence: under a failover that fences, a claim of a key not
//     shown new (by the rule DESIGN.md states, computed here against the
//     store's clock, which it reads) stores nothing, and, refused by the
//     fence alone,
//     is answered from the record the region holds or with a 503 that
//     does not say the key may be held; a key shown new is never refused;
//     a release writes no tombstone over another's record or none;
//   - failover-window: under AcceptUnreplicated a request runs a second
//     time only as DESIGN.md states: the other region wrote its record
//     before At and had not replicated it;
//   - completion-kept: replication never drops a completion whose record
//     lives for a later write made without it (last writer wins), but one
//     the operator accepted to lose (AcceptUnreplicated).
//
// The servers' timing makes the world not deterministic, though a history
// issues the same calls in the same order, so that a failing seed mostly
// fails again, and shrinks, with `-regions.seed N`.
package sim
