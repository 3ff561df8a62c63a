package main

import (
	"context"
	"flag"
	"strings"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/fingerprint"
	"github.com/idemkit/idemkit/internal/adapter"
)

const inspectHelp = `Usage: idemkit inspect --table T --tenant X --operation "POST /orders" --key K [flags]

Show one record: its state; when it was created, its lease ends, its response
stops being replayed, it expires and it completed, each with its age; the
owner token; the request fingerprint; the stored response's status, headers
and body size; and the operator's resolution, if any.

The body is printed only with --body. In the table, a body that is not UTF-8
is printed as base64. Text holding control characters other than tab and
line feed (a carriage return, an escape sequence) is quoted as a Go string.
The table says which was done, and neither can act on the terminal.
--output json --body gives the exact body (body_encoding "text", or
"base64" when it is not printable UTF-8).

The key is parsed as the service parses the Idempotency-Key header: bare
(abc) and quoted ("abc") name the same key. --account-wide is needed when
the service uses account-wide keys; the operation is then not part of the
record ID (it may be left out).

--path gives the request's path and query as the service received it
(/orders/42?currency=EUR). inspect then shows the record's execution ID, the
idemkit.ExecutionID its handler got to key its own writes, so you can look
downstream for the effect it made or would have made. The record does not
store the path: a route template (POST /orders/{id}) covers many. Read the
query as the service's fingerprint reads it: every parameter, unless the
route sets IgnoreQuery (--ignore-query) or a selection (--query a,b). When
the service sets Config.ExecutionSecret, put it in an environment variable
and name that variable with --execution-secret-env.
`

func runInspect(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	var (
		o        common
		sf       scopeFlags
		withBody bool
		ef       execFlags
	)
	c.commonFlags(fs, &o)
	sf.register(fs)
	fs.BoolVar(&withBody, "body", false, "print the stored response body")
	ef.register(fs)
	if err := c.parse(fs, args, helpFor(fs, inspectHelp)); err != nil {
		return err
	}
	if err := o.check(); err != nil {
		return err
	}
	_, id, err := sf.scope()
	if err == nil {
		err = ef.check(c.env.Getenv)
	}
	if err != nil {
		return err
	}
	return c.withStore(ctx, &o, func(ctx context.Context, store idemkit.OperatorStore) error {
		now := c.env.Now()
		rec, err := store.Get(ctx, id)
		if err == nil && (!rec.Live(now) || rec.State == idemkit.StateReleased) {
			// Kept for late writes to find, but no record to an operator:
			// the key is free.
			err = idemkit.ErrNotFound
		}
		if err != nil {
			return notFound(explainStoreError(store, o.store.Table, err), id)
		}
		x := ef.executionID(rec.Scope)
		if o.output == "json" {
			j := toJSON(rec, now, withBody)
			j.ExecutionID = x
			return writeJSON(c.stdout, j)
		}
		return writeRecord(c.stdout, rec, now, withBody, executionRow(x))
	})
}

// execFlags are inspect's flags that compute a record's execution ID: the
// request's path and query, how the service's fingerprint reads the query,
// and the variable holding the service's ExecutionSecret.
type execFlags struct {
	path, query, secretEnv string
	ignoreQuery            bool

	resource string // set by check when path is
	secret   []byte // set by check
}

func (e *execFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&e.path, "path", "", "the request's `path` and query as the service received it (/orders/42?x=1): show the record's execution ID")
	fs.BoolVar(&e.ignoreQuery, "ignore-query", false, "with --path: the service's fingerprint ignores the query (fingerprint.Options.IgnoreQuery)")
	fs.StringVar(&e.query, "query", "", "with --path: the query `parameters` the service's fingerprint reads, comma-separated (fingerprint.Options.Query)")
	fs.StringVar(&e.secretEnv, "execution-secret-env", "", "with --path: the environment `variable` holding the service's Config.ExecutionSecret")
}

// check reads the flags and computes the request's resource as the
// service's adapters do (idemkit.Request.Resource).
func (e *execFlags) check(getenv func(string) string) error {
	if e.path == "" {
		if e.ignoreQuery || e.query != "" || e.secretEnv != "" {
			return usagef("--ignore-query, --query and --execution-secret-env need --path")
		}
		return nil
	}
	if !strings.HasPrefix(e.path, "/") {
		return usagef("--path %q: want the request's path from its leading slash, with its query (/orders/42?x=1)", e.path)
	}
	opts := fingerprint.Options{IgnoreQuery: e.ignoreQuery}
	if e.query != "" {
		opts.Query = strings.Split(e.query, ",")
	}
	f, err := fingerprint.New(opts)
	if err != nil {
		return usagef("--ignore-query and --query: %v", err)
	}
	path, query, _ := strings.Cut(e.path, "?")
	e.resource = f.Resource(fingerprint.Input{Path: adapter.NormalizePath(path), RawQuery: query})
	if e.secretEnv != "" {
		v := getenv(e.secretEnv)
		if v == "" {
			return usagef("--execution-secret-env %s: the variable is unset or empty", e.secretEnv)
		}
		e.secret = []byte(v)
	}
	return nil
}

// executionID returns the execution ID of the record of scope, "" without
// --path.
func (e *execFlags) executionID(scope idemkit.Scope) string {
	if e.resource == "" {
		return ""
	}
	return idemkit.ExecutionIDOf(e.secret, scope, e.resource)
}

// executionRow is the table's Execution ID row.
func executionRow(x string) string {
	if x == "" {
		return "- (give --path, the request's path and query, to compute it)"
	}
	return x
}
