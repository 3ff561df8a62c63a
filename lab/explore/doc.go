// Package explore checks the kit's guarantees over every history within
// small bounds, not a sample: an explicit-state, breadth-first explorer
// over the real code, the engine (idemkit.Guard, one per instance), the
// operator's tool (idemkit.Resolve) and package memstore.
//
// # The world
//
// Clients send requests with one key K: two with one body, one with
// another, each from an instance whose clock is off by up to a second
// (the lease margin tolerates two), each retrying a
// request refused (409), failed (a store error, the handler's error, an
// unknown outcome, a timeout) a bounded number of times with a new owner
// token. Each request is a Lambda invocation: it has a deadline, and at
// it the invocation freezes (its handler never returns, its calls in the
// network stay there, its client gets a timeout). A handler runs until
// the explorer chooses how it ends: 201 (stored), an error (the key
// released) or an error wrapping idemkit.ErrOutcomeUnknown (the key
// kept). An operator lists the indeterminate records and resolves one,
// completed or failed, concurrently with everything else.
//
// Every store call (a Get, a Create, a Replace: the engine's changes are
// all writes of versioned records) is a message (Net): the explorer
// delivers it, delivers it and loses its answer, loses it, holds it (its
// caller is told it failed; it lands at a later action) or duplicates it
// (a copy lands later). A call lands at most twice, and never later than
// idemkit.MaxWriteDelay after it was sent. A write is named by the change
// it makes (faultstore.Op: claim, complete, release, mark...); each
// instance's guard makes its owner tokens and versions from the attempt's
// name, so that a history replays exactly. Time moves only when the
// explorer steps it, to the next instant at which something changes with
// time alone: a lease's end by an instance's clock, a deadline, the
// operator's decisions becoming acceptable, a replay window's end, a
// record's expiry. An operator's Resolve that pauses between two attempts
// of a write pauses on the bubble's clock.
//
// # The search
//
// Everything runs inside a testing/synctest bubble per history: after
// each action the explorer waits until every goroutine is blocked, so a
// history is replayed exactly from its actions (stateless search). The
// search is breadth first over the actions enabled in each state, up to
// a depth, and prunes a state already reached: the state is the record as
// stored (a tombstone too) with times relative to now and its version
// named by its writer, the calls in the network,
// each actor's phase and the answers so far. The first history found to
// break a guarantee is therefore a shortest one within the bounds.
//
// # The guarantees
//
// After every action (docs/DESIGN.md, section 9): at most one live run;
// another only after a release, a failed decision, a takeover of an
// ended lease or the record's expiry; a claim replaces only what the
// rules let it, for the request the key is bound to; a claim of a request
// refused or otherwise answered without running never holds the key,
// however late a copy of it lands, and no key is held for such a claim; a
// released key runs on its client's next retry; every answer is a run's
// of the same request (or an operator's decision on its record), or a
// problem true of the store; an operator's decision lands only on the run
// it checked, and never while it runs; a late write of an older run never
// changes a newer run's record; a writer recognises its own landed write;
// a running handler's record is its own by every clock.
//
// `cd lab && go test ./explore` fails with a shortest history breaking one;
// `-explore.list` lists one for each guarantee broken and explores on;
// `make model` explores deeper bounds (`-explore.deep`).
package explore
