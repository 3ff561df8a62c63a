package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/idemkey"
	"github.com/idemkit/idemkit/internal/recordid"
)

// EnvTable names the table when --table is not given.
const EnvTable = "IDEMKIT_TABLE"

// maxKeyLen is the longest key the commands accept. It is far above any
// service's idemkey.Parse cap: the tool must reach every stored record.
const maxKeyLen = 64 << 10

// common are the flags every command takes.
type common struct {
	store   StoreOptions
	output  string
	timeout time.Duration
}

func (c *cli) commonFlags(fs *flag.FlagSet, o *common) {
	fs.StringVar(&o.store.Table, "table", c.env.Getenv(EnvTable), "DynamoDB `table` of the records (default $"+EnvTable+")")
	fs.StringVar(&o.store.HomeRegion, "home-region", "", "send every read and write to this `region`: the tenant's home region\n(default: the SDK's configured region, AWS_REGION or the profile's)")
	fs.StringVar(&o.store.Profile, "profile", "", "shared AWS config `profile` (default: AWS_PROFILE, else the default profile)")
	fs.StringVar(&o.store.KeyAttr, "key-attr", dynamo.DefaultKeyAttr, "partition key `attribute` of the table, as the application's dynamo.Options.KeyAttr")
	fs.StringVar(&o.store.SortKeyAttr, "sort-key-attr", "", "sort key `attribute` of the table, if it has one (dynamo.Options.SortKeyAttr)")
	fs.StringVar(&o.store.SortKeyValue, "sort-key-value", "", "sort key `value` of every record (dynamo.Options.SortKeyValue)")
	fs.StringVar(&o.store.KeyPrefix, "key-prefix", "", "`prefix` of the record ID in the partition key (dynamo.Options.KeyPrefix)")
	fs.StringVar(&o.store.TTLAttr, "ttl-attr", dynamo.TTLAttr, "TTL `attribute` of the table, holding each record's expiry, as the application's dynamo.Options.TTLAttr")
	fs.StringVar(&o.output, "output", "table", "output `format`: table or json")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "give up after this `duration`; DynamoDB calls are retried within it")
}

func (o *common) check() error {
	if o.store.Table == "" {
		return usagef("--table is required (or set %s)", EnvTable)
	}
	if o.output != "table" && o.output != "json" {
		return usagef("--output %q: want table or json", o.output)
	}
	if o.timeout <= 0 {
		return usagef("--timeout must be positive")
	}
	return nil
}

// scopeFlags name one record.
type scopeFlags struct {
	tenant, operation, key string
	accountWide            bool
}

func (s *scopeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.tenant, "tenant", "", "`tenant` of the record (required)")
	fs.StringVar(&s.operation, "operation", "", "`operation` of the record, e.g. \"POST /orders\" (required unless --account-wide)")
	fs.StringVar(&s.key, "key", "", "Idempotency-Key `value`, bare (abc) or quoted (\"abc\") (required)")
	fs.BoolVar(&s.accountWide, "account-wide", false, "the service uses account-wide keys: the operation is not part of the record ID")
}

// scope returns the parsed scope and its record ID.
func (s *scopeFlags) scope() (idemkit.Scope, string, error) {
	if s.tenant == "" {
		return idemkit.Scope{}, "", usagef("--tenant is required")
	}
	if len(s.tenant) > recordid.MaxTenantLen {
		// The guard refuses such a tenant: no record has it.
		return idemkit.Scope{}, "", usagef("--tenant is %d bytes, at most %d (a longer tenant is refused, so no record has it)", len(s.tenant), recordid.MaxTenantLen)
	}
	if s.operation == "" && !s.accountWide {
		return idemkit.Scope{}, "", usagef("--operation is required (unless --account-wide)")
	}
	if s.key == "" {
		return idemkit.Scope{}, "", usagef("--key is required")
	}
	k, err := idemkey.Parse([]string{s.key}, idemkey.Options{MaxLen: maxKeyLen})
	if err != nil {
		return idemkit.Scope{}, "", usagef("--key: %v", err)
	}
	sc := idemkit.Scope{Tenant: s.tenant, Operation: s.operation, Key: k}
	return sc, sc.ID(s.accountWide), nil
}

// parse parses args with fs. Its error ends the command: quietExit(exitOK)
// when help was asked for (and printed), a usage error when the flags are
// wrong.
func (c *cli) parse(fs *flag.FlagSet, args []string, help func(io.Writer)) error {
	if err := c.parseFlags(fs, args, help); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q; run 'idemkit %s --help'", fs.Arg(0), fs.Name())
	}
	return nil
}

// parseFlags parses args with fs as parse does, leaving the arguments
// after the flags to the caller.
func (c *cli) parseFlags(fs *flag.FlagSet, args []string, help func(io.Writer)) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		help(c.stdout)
		return quietExit(exitOK)
	case err != nil:
		return usagef("%v; run 'idemkit %s --help'", err, fs.Name())
	}
	return nil
}

// helpFor returns a help printer: the text, the flags, the exit codes.
func helpFor(fs *flag.FlagSet, text string) func(io.Writer) {
	return func(w io.Writer) {
		io.WriteString(w, text)
		io.WriteString(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		io.WriteString(w, exitCodesHelp)
	}
}

// withStore runs f with the store o names, under a context that ends
// after o's --timeout.
func (c *cli) withStore(ctx context.Context, o *common, f func(context.Context, idemkit.OperatorStore) error) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	s, err := c.env.OpenStore(ctx, o.store)
	if err != nil {
		return fmt.Errorf("open table %s: %w", o.store.Table, err)
	}
	return f(ctx, s)
}

// usageError is an error in the command line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// conflictError is a record in a state the command does not accept.
type conflictError struct{ msg string }

func (e *conflictError) Error() string { return e.msg }

func conflictf(format string, args ...any) error {
	return &conflictError{msg: fmt.Sprintf(format, args...)}
}

// quietExit ends a command with its exit code when what it has to say is
// written already.
type quietExit int

func (q quietExit) Error() string { return "exit status " + strconv.Itoa(int(q)) }

// exitCode classifies err into the documented exit codes.
func exitCode(err error) int {
	var (
		ue *usageError
		ce *conflictError
		qe quietExit
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &qe):
		return int(qe)
	case errors.As(err, &ue), errors.Is(err, idemkit.ErrInvalidPage):
		return exitUsage
	case errors.Is(err, idemkit.ErrNotFound):
		return exitNotFound
	case errors.As(err, &ce), errors.Is(err, idemkit.ErrNotIndeterminate), errors.Is(err, idemkit.ErrNotOwner),
		errors.Is(err, idemkit.ErrMayBeRunning):
		return exitConflict
	case errors.Is(err, idemkit.ErrStoreUnavailable), errors.Is(err, context.DeadlineExceeded):
		return exitUnavailable
	}
	return exitError
}

// fail reports err on stderr, unless it is a quietExit, and returns its
// exit code.
func (c *cli) fail(cmd string, err error) int {
	var qe quietExit
	if err != nil && !errors.As(err, &qe) {
		c.errorf("idemkit %s: %v", cmd, err)
	}
	return exitCode(err)
}

func (c *cli) errorf(format string, args ...any) {
	fmt.Fprintf(c.stderr, format+"\n", args...)
}

// notFound names the record ID in a not-found error.
func notFound(err error, id string) error {
	if errors.Is(err, idemkit.ErrNotFound) {
		return fmt.Errorf("no live record with ID %q (never stored, expired, or freed): %w", id, err)
	}
	return err
}
