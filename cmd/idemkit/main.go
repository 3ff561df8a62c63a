// Command idemkit is the operator's tool for the idempotency records that
// idemkit keeps in DynamoDB. When an execution's lease ends without an
// outcome under the fail-closed policy, the record becomes indeterminate
// and every retry of that request is refused until a person decides what
// happened downstream. idemkit lists those records, shows one, and records
// the decision. With --state stale it also lists in-flight records whose
// lease ended and that no retry has marked yet.
//
//	idemkit list    --table T [--state indeterminate|stale] [--tenant X] [--limit N] [--all | --page TOKEN]
//	idemkit inspect --table T --tenant X --operation "POST /orders" --key K [--body]
//	idemkit resolve --table T --tenant X --operation "POST /orders" --key K \
//	        --as completed|failed --reason "..." [--status 201 --body-file f --header 'Name: value' ...]
//	idemkit conform URL --body JSON [--header 'Authorization: ...'] (checks a running endpoint)
//
// Every command takes --help, --output table|json, --home-region, --profile
// and --timeout. For records kept in a shared (single-table) table, every
// command also takes --key-attr, --sort-key-attr, --sort-key-value,
// --key-prefix and --ttl-attr, set as the application's dynamo.Options are. AWS access
// uses the SDK's standard configuration (AWS_REGION, AWS_PROFILE or
// --profile, AWS_ENDPOINT_URL_DYNAMODB, ...). Listing reads the table's
// sparse indexes. No command scans the table.
//
// Exit codes:
//
//	0  success (an empty listing included)
//	1  usage error: unknown command or flag, missing or invalid value
//	2  any other error (operator identity unavailable, corrupt record, ...)
//	3  not found: no live record for the scope
//	4  conflict: the record is not in a state the command accepts, or
//	   another writer changed it first; nothing was changed
//	5  store unavailable: DynamoDB could not be reached or refused the call
//	   (network, throttling, timeout, missing table or permission)
//
// docs/OPERATIONS.md is the runbook.
package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/idemkit/idemkit"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, Env{}))
}

// Exit codes. They are part of the command's interface: never renumber.
const (
	exitOK          = 0
	exitUsage       = 1
	exitError       = 2
	exitNotFound    = 3
	exitConflict    = 4
	exitUnavailable = 5
)

// StoreOptions name the store a command works on.
type StoreOptions struct {
	// Table is the DynamoDB table.
	Table string
	// HomeRegion is the region every read and write is sent to: the home
	// region of the tenant worked on. Empty: the SDK's configured region.
	HomeRegion string
	// Profile is the shared-config profile. Empty: the SDK's default.
	Profile string
	// KeyAttr, SortKeyAttr, SortKeyValue, KeyPrefix and TTLAttr are the
	// table's layout, as the application's dynamo.Options set them. Empty:
	// a table of its own (partition key pk holding the record ID, TTL on
	// exp).
	KeyAttr, SortKeyAttr, SortKeyValue, KeyPrefix, TTLAttr string
}

// Env is what a command takes from its surroundings. Tests replace it;
// the zero value is the real environment.
type Env struct {
	// OpenStore opens the store. Nil: the DynamoDB store (openDynamo).
	OpenStore func(ctx context.Context, o StoreOptions) (idemkit.OperatorStore, error)
	// Now returns the current time. Nil: time.Now.
	Now func() time.Time
	// Operator returns the caller's identity when --operator is not given.
	// Nil: the ARN from STS GetCallerIdentity (callerARN).
	Operator func(ctx context.Context, o StoreOptions) (string, error)
	// Getenv reads an environment variable. Nil: os.Getenv.
	Getenv func(string) string
	// Stdin is read by --body-file -. Nil: os.Stdin.
	Stdin io.Reader
}

func (e Env) withDefaults() Env {
	if e.OpenStore == nil {
		e.OpenStore = openDynamo
	}
	if e.Now == nil {
		e.Now = time.Now
	}
	if e.Operator == nil {
		e.Operator = callerARN
	}
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	if e.Stdin == nil {
		e.Stdin = os.Stdin
	}
	return e
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, c *cli, args []string) error
}

var commands = []command{
	{"conform", "check a running endpoint from the outside: replays, 409, 422, bad keys, headers lost by a hop", runConform},
	{"inspect", "show one record: state, timings, owner, fingerprint, stored response, resolution", runInspect},
	{"list", "list indeterminate records, or with --state stale in-flight ones whose lease ended; oldest lease first (reads an index)", runList},
	{"resolve", "record an operator's decision on an indeterminate record, or on a stale in-flight one", runResolve},
}

// cli carries a run's writers and environment to the commands.
type cli struct {
	stdout, stderr io.Writer
	env            Env
}

// run executes the command line args (without the program name) and
// returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, env Env) int {
	c := &cli{stdout: stdout, stderr: stderr, env: env.withDefaults()}
	if len(args) == 0 {
		c.usage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help":
		c.usage(stdout)
		return exitOK
	case "help":
		if len(args) == 1 {
			c.usage(stdout)
			return exitOK
		}
		name, args = args[1], []string{args[1], "--help"}
	}
	for _, cmd := range commands {
		if cmd.name == name {
			return c.fail(cmd.name, cmd.run(ctx, c, args[1:]))
		}
	}
	c.errorf("idemkit: unknown command %q; run 'idemkit --help'", name)
	return exitUsage
}

func (c *cli) usage(w io.Writer) {
	io.WriteString(w, `idemkit operates the idempotency records idemkit keeps in a DynamoDB table.

Usage:
  idemkit <command> [flags]
  idemkit help <command>

Commands:
`)
	for _, cmd := range commands {
		io.WriteString(w, "  "+padRight(cmd.name, 9)+cmd.summary+"\n")
	}
	io.WriteString(w, `
Every command takes --help, --output table|json, --home-region REGION,
--profile NAME and --timeout. For records in a shared table, every command
also takes --key-attr, --sort-key-attr, --sort-key-value, --key-prefix and
--ttl-attr, as the application's dynamo.Options set them. AWS access uses the SDK's
standard configuration: AWS_REGION, AWS_PROFILE, AWS_ENDPOINT_URL_DYNAMODB,
and credentials from the environment, shared files, SSO or the instance
role.
`+exitCodesHelp+`
The runbook is docs/OPERATIONS.md.
`)
}

const exitCodesHelp = `
Exit codes:
  0  success (an empty listing included)
  1  usage error: unknown command or flag, missing or invalid value
  2  any other error (operator identity unavailable, corrupt record, ...)
  3  not found: no live record for the scope
  4  conflict: the record is not in a state the command accepts, or another
     writer changed it first; nothing was changed
  5  store unavailable: DynamoDB could not be reached or refused the call
     (network, throttling, timeout, missing table or permission)
`

func padRight(s string, n int) string {
	for len(s) < n {
		s += " "
	}
	return s
}
