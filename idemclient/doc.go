// Package idemclient is the client side of idemkit: an http.RoundTripper
// that sends every POST and PATCH with an Idempotency-Key and retries it,
// under that same key, only where a retry cannot run it twice.
//
//	t, err := idemclient.New(idemclient.Config{Retention: 7 * 24 * time.Hour})
//	if err != nil {
//		return err
//	}
//	client := &http.Client{Transport: t}
//	resp, err := client.Post(url, "application/json", strings.NewReader(body))
//
// A guarded request (Config.Methods) gets a new UUIDv7 key, unless the
// caller set the header (under any spelling of its name) or passed a key
// with [WithKey]; every attempt of it carries that key, once. A request of another method is sent once,
// unchanged.
//
// What is retried, with capped, jittered backoff, until Config.Budget has
// passed:
//
//   - a connection error, a response cut short, an attempt's timeout
//     (Config.AttemptTimeout): the first attempt may have run, and the
//     server answers the retry with its stored response;
//   - 409 in-flight: the first request is still running; the client polls,
//     never waiting longer than Retry-After (the end of its lease), nor,
//     when Retry-After has passed, less than [PollFloor]; 409
//     outcome-pending (the first request outlived its lease and may still
//     complete) alike;
//   - 503 store-unavailable and 429, waiting at least Retry-After;
//   - 500 handler-failed (the server freed the key) and any other 5xx that
//     is not a replay.
//
// Every other answer of an idemkit server's own (a problem type under
// https://idemkit.dev/problems/) is returned as a [*ProblemError], which
// says what happened and what a person must check: the key reused for
// another request (422), an outcome nobody knows (409
// indeterminate-operator-required, 503 outcome-unknown), a completed
// request whose answer is no longer replayed (410), a request refused
// before it ran (400, 413), a misconfigured server (500). Any other
// response (the handler's own 201, 402 or 404, a replay) is returned as
// it came, [Replayed] telling whether it was a replay. When the client
// stops with the outcome open (the budget spent, the caller's context
// done, an error no retry can help), it returns a [*GiveUpError] naming
// the key and until when a retry with it is still safe.
//
// Config.Retention is the server's record retention (the operation's
// Policy.RecordRetention). After it a retry is a new request: the server
// has forgotten the first one and would run it again. So New refuses a
// Budget that reaches past it, and the client refuses to send a UUIDv7 key
// whose time is that old ([ErrRetentionPassed]).
//
// docs/CLIENT.md says what to choose and why.
package idemclient
