package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/recordid"
)

const listHelp = `Usage: idemkit list --table T [--state indeterminate|stale] [--tenant X] [--limit N] [--all | --page TOKEN]

List indeterminate records (the default), oldest lease first. They are
executions whose lease ended without an outcome under the fail-closed
policy, or whose handler ended with the outcome unknown. Every retry of such
a request is refused until the record is resolved (idemkit resolve).

--state stale lists in-flight records whose lease has ended. They are
executions that crashed or were abandoned, and that no retry has marked
indeterminate yet. A key whose client gave up stays so. The next retry of
such a key marks it indeterminate (fail-closed) or runs it again
(takeover). Only records claimed by a store with
dynamo.Options.IndexInFlight set are indexed, so only they can be listed.
Set it on every store of the table.

The listing reads the table's sparse indexes, one Query per page. It never
scans the table. One page is printed at a time, followed by the token of the
next page, if any. --page TOKEN prints that page, and --all prints every
page. A page may hold fewer than --limit records and still have a next page.
AGE is the time since the lease ended. An operation marked (account-wide)
belongs to a record of account-wide keys ("account_wide": true in --output
json). Pass --account-wide to inspect and resolve it. Index reads are
eventually consistent, so a record marked or resolved a moment ago may be
missing or still listed. inspect reads the record itself.

Without --tenant, every tenant's records are listed from the region the
table is read in (--home-region or the SDK's region), since a global table
holds every tenant's records in every region. With --tenant, give that
tenant's home region.
`

// stateStale is the --state of in_flight records whose lease has ended.
const stateStale = "stale"

// listJSON is the --output json form of a listing.
type listJSON struct {
	Records []recordJSON `json:"records"`
	// NextPage is the token of the following page; empty when the listing
	// is complete.
	NextPage string `json:"next_page"`
}

func runList(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	var (
		o            common
		state        string
		tenant, page string
		limit        int
		all          bool
	)
	c.commonFlags(fs, &o)
	fs.StringVar(&state, "state", string(idemkit.StateIndeterminate), "`state` to list: indeterminate, or stale (in flight, lease ended)")
	fs.StringVar(&tenant, "tenant", "", "list only this `tenant`'s records")
	fs.IntVar(&limit, "limit", 50, "at most `N` records per page (1-1000)")
	fs.BoolVar(&all, "all", false, "print every page")
	fs.StringVar(&page, "page", "", "print the page with this `token` (from a previous listing)")
	if err := c.parse(fs, args, helpFor(fs, listHelp)); err != nil {
		return err
	}
	if err := checkList(&o, state, limit, all, page); err != nil {
		return err
	}
	if err := checkListTenant(fs, tenant); err != nil {
		return err
	}
	return c.withStore(ctx, &o, func(ctx context.Context, store idemkit.OperatorStore) error {
		now := c.env.Now()
		list := store.ListIndeterminate
		if state == stateStale {
			sl, ok := store.(idemkit.StaleLister)
			if !ok || !sl.ListsStale() {
				return errStaleUnlisted
			}
			list = sl.ListStale
		}
		recs, next, err := listPages(ctx, list, tenant, page, limit, all, now)
		if err != nil {
			return explainListError(ctx, store, o.store.Table, err)
		}
		if o.output == "json" {
			return writeListJSON(c, recs, next, now)
		}
		return writeList(c, recs, next, now, state)
	})
}

// checkList checks the flags of list.
func checkList(o *common, state string, limit int, all bool, page string) error {
	if err := o.check(); err != nil {
		return err
	}
	switch {
	case state != string(idemkit.StateIndeterminate) && state != stateStale:
		return usagef("--state %q: want indeterminate or stale (the other states are not indexed)", state)
	case limit < 1 || limit > 1000:
		return usagef("--limit %d: want 1 to 1000", limit)
	case all && page != "":
		return usagef("--all and --page exclude each other")
	}
	return nil
}

// checkListTenant refuses a --tenant given empty, as inspect and resolve
// do, rather than take it for no --tenant and list every tenant's records;
// and one longer than any record's.
func checkListTenant(fs *flag.FlagSet, tenant string) error {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "tenant" })
	switch {
	case given && tenant == "":
		return usagef("--tenant is empty: no record has an empty tenant; leave --tenant out to list every tenant's records")
	case len(tenant) > recordid.MaxTenantLen:
		return usagef("--tenant is %d bytes, at most %d (a longer tenant is refused, so no record has it)", len(tenant), recordid.MaxTenantLen)
	}
	return nil
}

// errStaleUnlisted: the store does not list stale records
// (idemkit.StaleLister).
var errStaleUnlisted = errors.New("the store does not list stale records: they are listed only when the application's stores set dynamo.Options.IndexInFlight")

// listFunc is a listing of a store: ListIndeterminate or ListStale.
type listFunc func(ctx context.Context, tenant, page string, limit int, now time.Time) ([]*idemkit.Record, string, error)

// listPages returns the records of the page with token page, or with all
// of it and every page after it, and the token of the page that follows
// what it returns ("" at the end).
func listPages(ctx context.Context, list listFunc, tenant, page string, limit int, all bool, now time.Time) ([]*idemkit.Record, string, error) {
	var recs []*idemkit.Record
	for {
		got, next, err := list(ctx, tenant, page, limit, now)
		if err != nil {
			return nil, "", err
		}
		recs = append(recs, got...)
		page = next
		if !all || next == "" {
			return recs, page, nil
		}
	}
}

// isAccountWide reports whether a record ID is of account-wide keys:
// readable ("a1|") or hashed ("a1h|", "a1x|"), as idemkit.Scope.ID makes it.
func isAccountWide(id string) bool {
	return strings.HasPrefix(id, "a1|") || strings.HasPrefix(id, "a1h|") || strings.HasPrefix(id, "a1x|")
}

// writeListJSON writes a listing as --output json.
func writeListJSON(c *cli, recs []*idemkit.Record, next string, now time.Time) error {
	out := listJSON{Records: make([]recordJSON, 0, len(recs)), NextPage: next}
	for _, r := range recs {
		out.Records = append(out.Records, toJSON(r, now, false))
	}
	return writeJSON(c.stdout, out)
}

func writeList(c *cli, recs []*idemkit.Record, next string, now time.Time, state string) error {
	if len(recs) == 0 {
		fmt.Fprintf(c.stdout, "No %s records on this page.\n", state)
		if state == stateStale {
			// The command cannot tell whether the service's stores index
			// in_flight records: without them, empty is not an all-clear.
			fmt.Fprintln(c.stdout, "Only records claimed by a store with dynamo.Options.IndexInFlight set are listed.")
		}
	} else {
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TENANT\tOPERATION\tKEY\tAGE\tLEASE ENDED\tCREATED")
		for _, r := range recs {
			op := displayText(r.Scope.Operation)
			if isAccountWide(r.ID) {
				op += " (account-wide)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", displayText(r.Scope.Tenant), op, displayKey(r.Scope.Key),
				age(now.Sub(r.LeaseUntil)), r.LeaseUntil.UTC().Format(time.RFC3339), r.CreatedAt.UTC().Format(time.RFC3339))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if next != "" {
		_, err := fmt.Fprintf(c.stdout, "\nMore records: run again with --page %s\n", next)
		return err
	}
	return nil
}
