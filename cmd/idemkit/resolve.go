package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/httpheader"
)

const resolveHelp = `Usage: idemkit resolve --table T --tenant X --operation "POST /orders" --key K
         --as completed|failed --reason "..." [flags]

Record a decision on an indeterminate record, after checking downstream
(the payment processor, the ledger, the warehouse) whether the request had
its effect:

  --as failed     it did not happen: the key is freed, and the client's next
                  retry runs the request again.
  --as completed  it happened: the given response (--status, --header,
                  --body-file) is stored and replayed to every retry.

The write is conditional on the record still being indeterminate. When
another operator or a retry changed it first, nothing is changed and the
exit code is 4. The reason, the operator and the time are kept on the record.

An in_flight record whose lease has ended is accepted too: it is first
marked indeterminate, in place of the version read (exactly what a retry
under the fail-closed policy does), then resolved. If a retry takes the
record over first (the takeover policy), or the execution completes first,
the mark is refused and nothing is changed (exit 4).

While the request may still be running, resolve refuses whatever the
record's state (exit 4). That is until a minute after its lease ended, the
clock skew tolerated between this host and the service's. --as failed waits
15 minutes longer. DynamoDB accepts a request until 15 minutes after it was
signed, so until then a copy of the request's claim can still land and take
the freed key back for the old request. The refusal says from when the
decision is accepted.

The operator is --operator when given, else the ARN of the caller's AWS
identity (STS GetCallerIdentity, 5 s timeout). When neither can be had the
command refuses (exit 2).

Headers that are never replayed are refused, as the adapters refuse them in
ReplayHeaders: cookies; Date, Age, Expires, Retry-After and Server-Timing;
hop-by-hop fields (Connection, Keep-Alive, Proxy-*, TE, Trailer,
Transfer-Encoding, Upgrade, Via) and Content-Length; request and trace ids
(X-Request-Id, Traceparent, B3 and X-B3-*, Cf-Ray, X-Amz-* and X-Amzn-*);
rate limits; Idempotent-Replayed. A value holding a control character is
refused.
`

// stsTimeout bounds the caller identity lookup.
const stsTimeout = 5 * time.Second

// Bounds on what an operator types.
const (
	maxReason   = 4096
	maxOperator = 1024
)

// headerFlags collects repeated --header values.
type headerFlags struct{ h http.Header }

func (f *headerFlags) String() string { return "" }

func (f *headerFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, ":")
	if !ok {
		return fmt.Errorf("want 'Name: value', got %q", v)
	}
	name = strings.TrimSpace(name)
	if !httpheader.ValidName(name) {
		return fmt.Errorf("invalid header name %q", name)
	}
	value = strings.Trim(value, " \t")
	if !httpheader.ValidValue(value) {
		return fmt.Errorf("header %s: value holds a control character", name)
	}
	name = canonical(name)
	if httpheader.NeverReplayed(name) {
		return fmt.Errorf("header %s is never replayed", name)
	}
	if f.h == nil {
		f.h = http.Header{}
	}
	f.h.Add(name, value)
	return nil
}

// resolveJSON is the --output json form of a resolution.
type resolveJSON struct {
	// PreviousState is indeterminate, or in_flight when the command marked
	// an expired lease indeterminate first.
	PreviousState string     `json:"previous_state"`
	Record        recordJSON `json:"record"`
}

// resolveFlags are resolve's flags.
type resolveFlags struct {
	common
	scope      scopeFlags
	as, reason string
	operator   string
	status     int
	bodyFile   string
	bodyBase64 bool
	header     headerFlags
}

func runResolve(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("resolve", flag.ContinueOnError)
	var rf resolveFlags
	o := &rf.common
	c.commonFlags(fs, o)
	rf.scope.register(fs)
	fs.StringVar(&rf.as, "as", "", "the `decision`: completed (it happened; store the response) or failed (it did not; free the key) (required)")
	fs.StringVar(&rf.reason, "reason", "", "`text` saying why, with the evidence (ticket, processor reference) (required)")
	fs.StringVar(&rf.operator, "operator", "", "`name` of who decides (default: the caller's AWS identity ARN, from STS)")
	fs.IntVar(&rf.status, "status", 0, "with --as completed: the response `status` to replay (required)")
	fs.StringVar(&rf.bodyFile, "body-file", "", "with --as completed: the response body, read from `file` (- for stdin)")
	fs.BoolVar(&rf.bodyBase64, "body-base64", false, "with --as completed: the body file holds the base64 text of a binary body,\nreplayed with IsBase64Encoded (Lambda proxy responses)")
	fs.Var(&rf.header, "header", "with --as completed: a response header to replay, 'Name: value' (repeatable)")
	if err := c.parse(fs, args, helpFor(fs, resolveHelp)); err != nil {
		return err
	}
	res, id, err := c.resolution(&rf)
	if err != nil {
		return err
	}
	return c.withStore(ctx, o, func(ctx context.Context, store idemkit.OperatorStore) error {
		return c.resolve(ctx, store, &rf, id, res)
	})
}

// resolve records res on the record id in store, and prints the record.
func (c *cli) resolve(ctx context.Context, store idemkit.OperatorStore, rf *resolveFlags, id string, res idemkit.Resolution) error {
	o := &rf.common
	if res.Operator == "" {
		var err error
		if res.Operator, err = c.operator(ctx, o.store); err != nil {
			return err
		}
	}
	rec, prev, err := idemkit.Resolve(ctx, store, id, res, c.env.Now())
	if err != nil {
		return resolveErr(explainStoreError(store, o.store.Table, err), id, res.As, c.env.Now())
	}
	// Resolve returns the record as written; the store may have kept less
	// of the answer (a body over its item cap): read what it kept.
	if got, err := store.Get(ctx, id); err == nil && got.Version == rec.Version {
		rec = got
	}
	if w := notStored(res.Snapshot, rec.Snapshot); w != "" {
		c.errorf("idemkit resolve: warning: %s; replays answer with the outcome only", w)
	}
	now := c.env.Now()
	if o.output == "json" {
		err = writeJSON(c.stdout, resolveJSON{PreviousState: string(prev), Record: toJSON(rec, now, false)})
	} else {
		fmt.Fprintf(c.stdout, "Resolved as %s (was %s).\n\n", rec.State, prev)
		err = writeRecord(c.stdout, rec, now, false, "")
	}
	return err
}

// resolution checks the flags and returns the resolution they ask for
// (Operator set only from --operator) and the record ID.
func (c *cli) resolution(rf *resolveFlags) (idemkit.Resolution, string, error) {
	var res idemkit.Resolution
	if err := rf.check(); err != nil {
		return res, "", err
	}
	_, id, err := rf.scope.scope()
	if err != nil {
		return res, "", err
	}
	reason := strings.TrimSpace(rf.reason)
	operator := strings.TrimSpace(rf.operator)
	as, status, bodyFile, bodyBase64, header := rf.as, rf.status, rf.bodyFile, rf.bodyBase64, rf.header.h
	switch {
	case reason == "":
		return res, "", usagef("--reason is required: say why, with the evidence")
	case len(reason) > maxReason:
		return res, "", usagef("--reason is %d bytes, at most %d", len(reason), maxReason)
	case len(operator) > maxOperator:
		return res, "", usagef("--operator is %d bytes, at most %d", len(operator), maxOperator)
	}
	res = idemkit.Resolution{As: idemkit.State(as), Reason: reason, Operator: operator}
	switch res.As {
	case idemkit.StateFailed:
		if status != 0 || bodyFile != "" || bodyBase64 || header != nil {
			return res, "", usagef("--status, --body-file, --body-base64 and --header go with --as completed only")
		}
	case idemkit.StateCompleted:
		if res.Snapshot, err = c.answer(rf); err != nil {
			return res, "", err
		}
	case "":
		return res, "", usagef("--as is required: completed or failed")
	default:
		return res, "", usagef("--as %q: want completed or failed", as)
	}
	return res, id, nil
}

// answer returns the answer that --as completed resolves with, from
// --status, --header, --body-file and --body-base64.
func (c *cli) answer(rf *resolveFlags) (*idemkit.Snapshot, error) {
	status, bodyFile, bodyBase64 := rf.status, rf.bodyFile, rf.bodyBase64
	if status < 100 || status > 599 {
		return nil, usagef("--as completed needs --status, 100 to 599 (got %d)", status)
	}
	snap := &idemkit.Snapshot{Status: status, Header: rf.header.h, Base64: bodyBase64}
	if bodyFile == "" {
		if bodyBase64 {
			return nil, usagef("--body-base64 needs --body-file")
		}
		return snap, nil
	}
	var err error
	if snap.Body, err = c.readBody(bodyFile); err != nil {
		return nil, usagef("--body-file: %v", err)
	}
	if bodyBase64 {
		if _, err := base64.StdEncoding.DecodeString(string(snap.Body)); err != nil {
			return nil, usagef("--body-base64: the body file is not base64: %v", err)
		}
	}
	return snap, nil
}

func (c *cli) readBody(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(c.env.Stdin)
	}
	return os.ReadFile(name)
}

// operator returns the caller's identity, bounded by stsTimeout.
func (c *cli) operator(ctx context.Context, o StoreOptions) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, stsTimeout)
	defer cancel()
	op, err := c.env.Operator(ctx, o)
	if err == nil && strings.TrimSpace(op) == "" {
		err = errors.New("empty identity")
	}
	if err != nil {
		return "", fmt.Errorf("cannot tell who is resolving (the caller's AWS identity: %v); pass --operator NAME", err)
	}
	return op, nil
}

// resolveErr turns a refusal of idemkit.Resolve into what the operator
// reads: why, with stored text made safe for a terminal, and from when a
// decision made too early is accepted.
func resolveErr(err error, id string, as idemkit.State, now time.Time) error {
	var re *idemkit.ResolveError
	switch {
	case errors.Is(err, idemkit.ErrNotFound):
		return notFound(err, id)
	case !errors.As(err, &re):
		return unprefixed{err}
	}
	rec := re.Record
	if !errors.Is(re.Reason, idemkit.ErrMayBeRunning) {
		msg := fmt.Sprintf("record is %s, not indeterminate", rec.State)
		if r := rec.Resolution; r != nil {
			msg += fmt.Sprintf(" (resolved as %s by %s at %s)", r.As, displayText(r.Operator), r.ResolvedAt.UTC().Format(time.RFC3339))
		}
		return conflictf("%s; nothing was changed", msg)
	}
	// Until running, the execution may still run; after it, only a write
	// it sent may still land (a failed decision waits for that too).
	running := re.ResolvableAt
	if as == idemkit.StateFailed {
		running = running.Add(-idemkit.MaxWriteDelay)
	}
	var why string
	switch {
	case !rec.LeaseExpired(now):
		why = fmt.Sprintf("its lease runs until %s (in %s): the request may still be running",
			rec.LeaseUntil.UTC().Format(time.RFC3339), age(rec.LeaseUntil.Sub(now)))
	case now.Before(running):
		why = fmt.Sprintf("its lease ended at %s, only %s ago: the request may still be running on a host whose clock is behind this one",
			rec.LeaseUntil.UTC().Format(time.RFC3339), age(now.Sub(rec.LeaseUntil)))
	default:
		why = fmt.Sprintf("its lease ended at %s, only %s ago: a write the request sent may still reach DynamoDB (it accepts a request until %d minutes after it was signed) and take the key back once it is freed"+
			" (--as completed is accepted now because it frees nothing: use it only if you checked that the effect happened; the wait is no sign that it did)",
			rec.LeaseUntil.UTC().Format(time.RFC3339), age(now.Sub(rec.LeaseUntil)), int(idemkit.MaxWriteDelay/time.Minute))
	}
	return conflictf("record is %s and %s; resolve it as %s from %s (in %s); nothing was changed",
		rec.State, why, as, re.ResolvableAt.UTC().Format(time.RFC3339), age(re.ResolvableAt.Sub(now)))
}

// unprefixed is an error of idemkit.Resolve shown without its
// "idemkit: resolve: " prefix, which the command's own prefix repeats.
type unprefixed struct{ error }

func (e unprefixed) Error() string { return strings.TrimPrefix(e.error.Error(), "idemkit: resolve: ") }

func (e unprefixed) Unwrap() error { return e.error }

// notStored says what of the answer given the store left out of the
// snapshot it kept, or "" when it kept it whole. A store keeps an answer
// over its item cap without its body and, if still needed, without every
// header but Location; either way replays answer with the outcome only.
func notStored(given, stored *idemkit.Snapshot) string {
	if given == nil || stored == nil || !stored.Omitted {
		return ""
	}
	var dropped []string
	for name := range given.Header {
		if len(stored.Header.Values(name)) == 0 {
			dropped = append(dropped, displayText(name))
		}
	}
	sort.Strings(dropped)
	switch {
	case len(dropped) > 0:
		msg := "the headers were too large to store: " + strings.Join(dropped, ", ") + " left out (Location is kept)"
		if len(given.Body) > 0 {
			msg += ", and the body with them"
		}
		return msg
	case len(given.Body) > 0:
		return "the body was too large to store"
	}
	return "the answer was too large to store"
}
