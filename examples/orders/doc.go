// Package orders is the idemkit example application: an orders and
// payments API on one Lambda function behind an API Gateway HTTP API
// (payload 2.0), its POST routes made safe to retry with the
// Idempotency-Key header. template.yaml deploys it; `make run` serves it
// locally (cmd/local), calling the same handler cmd/lambda gives
// lambda.Start: both build it with FromEnv and Handler.
//
// # Routes
//
//	POST /orders    {"sku", "quantity", "amount_cents", "currency"}
//	                201 + Location: /orders/{id}; 400 invalid body; 415 not JSON (stored)
//	POST /payments  {"order_id", "amount_cents", "card", "delay_ms"?}
//	                201 {"id", "status": "captured", ...}; 400; 404 no such order;
//	                402 card 4000000000000002; 503 card 4000000000000119;
//	                503 outcome-unknown card 4000000000000259 (key kept indeterminate)
//	GET  /orders/{id}  200 with its payments; 404 unknown or another tenant's
//
// The tenant is the caller: the JWT authorizer's sub claim
// (apigw.JWTClaim("sub")). Both POST routes require an Idempotency-Key;
// their records are scoped by (tenant, route, key). Every error of the
// function is an RFC 9457 problem (application/problem+json): the kit's
// under https://idemkit.dev/problems/, the example's under ProblemBase,
// with the same members. What API Gateway answers itself, without
// invoking the function (401 without a valid token, 404 for an unknown
// route, 429), is its own {"message": ...}; the local server answers the
// same.
//
// # What is stored, what is not
//
// The handler's answers are business outcomes and are stored and replayed:
// 201, 400 (a JSON body with invalid values), 402 (declined), 404 (paying
// an order the caller does not have), 415. Transient ones are never
// stored, so a retry with the same key runs again: 503 (processor
// unavailable), and any handler error (a store or repository failure, the
// deadline passing during a slow payment), which the outer layer of
// Handler answers with a 503 problem after the guard released the key
// (one that says the key is held when the release failed);
// a write whose outcome is unknown is the exception (see below). A
// body that is not JSON at all is refused by the kit before the handler
// (400 body-invalid, not stored): it cannot be fingerprinted.
//
// # Writes that never run twice
//
// The order's and the payment's IDs derive from idemkit.ExecutionID: every
// run of one key (same caller, route and resource) computes the same ID, and the
// repository's writes are conditional on it (attribute_not_exists in
// DynamoRepo, the same in MemRepo). A run that finds its item stored, an
// earlier run's write whose answer was lost, returns it instead of
// writing a second one. A write whose outcome stays unknown after
// DynamoRepo's sends (ErrWriteUnknown) ends the handler with an error
// wrapping idemkit.ErrOutcomeUnknown: the guard keeps the key
// (indeterminate) instead of freeing it, the client gets 503
// outcome-unknown, and every retry 409 until an operator resolves it
// (idemkit list, idemkit resolve). The store indexes in-flight records
// (dynamo.Options.IndexInFlight), so a crashed run is listed by
// idemkit list --state stale.
//
// DynamoRepo ends each of its calls DeadlineGap (default 500 ms, twice the
// store's dynamo.DefaultDeadlineGap) before the invocation's deadline, as
// the store does its own: an order written at the deadline would leave the
// guard no time to complete the key, and the key would go indeterminate
// although the order exists.
//
// A payment is looked for before the processor is called: when the
// order already holds the payment this key's ID names, an earlier run
// captured it and its record is gone (expired after the retention, or
// freed by an operator), so the stored payment is answered and nothing is
// captured again; the processor's own idempotency window may be over by
// then. A key whose first run stored another order or payment than the
// request asks for gets 422 key-reused, stored like any outcome.
// The same order under a reused key gets the stored one back (201), and
// nothing is stored for a key-reused answer but the answer itself.
//
// Paying requires the order to exist for the caller: otherwise 404, stored
// like any outcome, so a client that pays before its order exists must
// use a new key once it does. Amounts are not checked against the order's
// balance (the simulated processor captures any positive amount); GET
// shows every captured payment and their sum, which makes a double charge
// visible.
//
// # Shipping
//
// With EnvShippingQueue set (template.yaml sets it), every order created
// sends a ShipRequest to the shipping queue (SQSOutbox), the tenant in the
// TenantAttribute message attribute; a send that fails fails the request
// (503, the key freed), and its retry finds the order and sends again.
// The shipping worker (ShippingHandler, cmd/shipping) is keyed by the
// order id, so each order ships once however often it is sent or
// delivered; it answers SQS with a partial batch response (package
// lambda/batch). Locally (IDEMKIT_STORE=memory) nothing is sent.
//
// # Request ids
//
// Every response of the function, replays and refusals included, carries
// X-Request-Id:
// API Gateway's requestContext.requestId (the local server makes one per
// request). The outer layer of Handler sets it after the guard, and the
// kit never replays it, so a replay has its own id, never the original's.
//
// # Storage
//
// With IDEMKIT_STORE=memory (the default locally), records and orders live
// in the process (memstore, MemRepo). With IDEMKIT_STORE=dynamodb, records
// go to the kit's table (package dynamo) and orders to a table of their
// own (DynamoRepo, OrdersTableDefinition), so that orders never share the
// records' TTL or key space.
package orders
