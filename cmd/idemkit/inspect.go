package main

import (
	"context"
	"flag"
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
`

func runInspect(ctx context.Context, c *cli, args []string) int {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	var (
		o        common
		sf       scopeFlags
		withBody bool
	)
	c.commonFlags(fs, &o)
	sf.register(fs)
	fs.BoolVar(&withBody, "body", false, "print the stored response body")
	if code, done := c.parse(fs, args, helpFor(fs, inspectHelp)); done {
		return code
	}
	if err := o.check(); err != nil {
		return c.fail("inspect", err)
	}
	_, id, err := sf.scope()
	if err != nil {
		return c.fail("inspect", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	store, err := c.open(ctx, &o)
	if err != nil {
		return c.fail("inspect", err)
	}
	now := c.env.Now()
	rec, err := store.Get(ctx, id, now)
	if err != nil {
		return c.fail("inspect", notFound(err, id))
	}
	if o.output == "json" {
		err = writeJSON(c.stdout, toJSON(rec, now, withBody))
	} else {
		err = writeRecord(c.stdout, rec, now, withBody)
	}
	if err != nil {
		return c.fail("inspect", err)
	}
	return exitOK
}
