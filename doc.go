// Package idemkit makes POST and PATCH handlers safe to retry.
//
// A client sends an Idempotency-Key header with a request. The first request
// with a key runs the handler; every later request with the same key gets
// the first response back, byte for byte, without running it again. This is
// compatible with the common Idempotency-Key convention (Stripe, Adyen, the
// expired IETF draft); it does not implement an IETF standard, because there
// is none.
//
// # Scope
//
// A key is never remembered alone. The stored identity is the [Scope]: the
// authenticated tenant, the operation (by default the method and concrete
// path) and the key. Two tenants that pick the same key never see each
// other's responses. With [Config.AccountWide], one key names one request
// across all operations of a tenant, and reusing it for another operation
// fails with [ErrOperationMismatch].
//
// # Claim, run, complete
//
// [Guard.Do] claims the scope with one atomic conditional write that either
// creates an in_flight record holding a random owner token and a lease, or
// returns the record that is already there, whatever its state. A claim
// never replaces a stored record unseen: where the record lets the key run
// again (released, expired, resolved failed, or a lease ended under
// [Takeover]), the guard claims in its place with a write conditioned on
// that record's version as read, so that no late copy of a claim can take
// a key. The winner runs the handler and completes the record with a
// [Snapshot] of the response, again in place of the version it wrote last,
// so an execution whose lease was taken over can never overwrite the new
// owner's result. The rules of a record's life are written once, in the
// engine (see [State]); stores only keep versioned records.
// A loser gets the stored response (a replay), or the reason it
// cannot: a different request with the key, another request holding it,
// or an unknown outcome. A loser never waits for the first request to
// finish. [Guard.Do] lists the reasons in their order of precedence.
//
// # What is remembered
//
// Deterministic outcomes are stored: 2xx, and the 4xx and 500 responses the
// handler chose. Transient ones are not; [DefaultCacheable] lists them.
// Handler errors and panics release the claim so that a retry can run.
// [Policy.Cacheable] changes the list per operation.
//
// # Leases and crashes
//
// A claim's lease lasts until the Lambda's deadline plus a margin. When it
// ends without an outcome, nobody knows whether the effect happened. The
// operation's [StalePolicy] decides. [FailClosed], the default, marks the
// record indeterminate for an operator to resolve. [Takeover] lets the next
// request run the handler again, for downstreams that are idempotent. A
// request without a deadline renews its lease while the handler runs
// ([Policy.Heartbeat]). The owner's late completion still replaces an
// indeterminate record no operator has resolved. [StaleLister.ListStale]
// lists leases that ended without an outcome, and [Resolve] records an
// operator's decision, never while the execution may still be running.
//
// # The handler's own writes
//
// [ExecutionID] gives a handler an identity to key its own writes on. It is
// the same for every retry of a request, and differs wherever the request's
// tenant, operation, key or resource does. A handler error wrapping
// [ErrOutcomeUnknown] keeps the key instead of releasing it, so that a
// request whose effect is unknown is never run twice.
//
// # Lifetime
//
// A response is replayed for [Policy.ReplayWindow] (24 h by default) and the
// record is kept for [Policy.RecordRetention] (7 days). In between, a retry
// is not run again; it gets an [*OutcomeError] naming the first outcome. A
// UUIDv7 key older than the retention is refused with [ErrKeyExpired] when
// no record of it is live. A live record answers whatever the key's age.
//
// # Stores
//
// A [Store] is a box of versioned records: it reads one, creates one where
// none is, and replaces one only if it is still the version read. That is
// all a [Guard] calls; stores decide nothing. An [OperatorStore] is a Store
// that operator tools can use: its ListIndeterminate lists the records
// that wait for an operator's decision, which [Resolve] records. The
// method comments are the contract; package storetest checks it.
//
// A store may implement an optional interface, which its caller checks
// with a type assertion:
//
//   - [StaleLister] lists in_flight records whose lease ended without an
//     outcome. Operator tools call ListStale (the idemkit CLI's list
//     --state stale) when ListsStale reports true; a store that indexes
//     in_flight records only when configured to reports false otherwise.
//     The guard never calls it.
//
// Package memstore is an in-memory store for local runs and tests, and
// implements all three; package dynamo is the DynamoDB store for
// production (its ListsStale reports Options.IndexInFlight); package
// warmcache puts an opt-in cache of completed records in front of either,
// for the guard only (it is a Store).
//
// Adapters for API Gateway, Function URLs, ALB and net/http live in
// packages lambda/apigw, lambda/alb and httpmw; lambda/event guards
// non-HTTP events (SQS, EventBridge, Step Functions). Package observe
// holds the [observe.Observer] a Guard reports every outcome to, and
// observers that turn its events into log lines and metrics.
package idemkit
