// Command samlocal runs a SAM template's functions locally without
// Docker: each function's bootstrap, built for this machine, under
// Amazon's Lambda Runtime Interface Emulator, behind an HTTP front with
// the template's routes, payload formats and JWT authorizers, on DynamoDB
// Local (dynalite where java is missing) with the template's tables.
//
//	samlocal start-api -template template.yaml [-addr 127.0.0.1:3000] [-sandboxes 4] [flags]
//	samlocal invoke    -template template.yaml -event event.json FunctionName [flags]
//
// start-api prints the URL, the DynamoDB endpoint, and bearer tokens its
// JWT authorizers accept (signed by a key it generated). invoke runs one
// function with an event file (an SQS batch, a stream batch, any event)
// and prints what it returned, batchItemFailures included; give it
// -endpoint to use the tables of a running start-api. Run it from a
// clone of idemkit (docs/DEPLOY.md, "Your own function"):
//
//	cd idemkit/samlocal && go run ./cmd/samlocal start-api -template /path/to/template.yaml
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/samlocal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "samlocal:", err)
		os.Exit(1)
	}
}

// pairs is a repeatable NAME=VALUE flag.
type pairs map[string]string

func (p pairs) String() string { return "" }

func (p pairs) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	p[k] = v
	return nil
}

type common struct {
	template, rie, endpoint, region, stack, envVars, buildDir string
	bootstraps, params                                        pairs
	skipAuth                                                  bool
}

func (c *common) register(fs *flag.FlagSet) {
	c.bootstraps, c.params = pairs{}, pairs{}
	fs.StringVar(&c.template, "template", "template.yaml", "the SAM template")
	fs.Var(c.bootstraps, "bootstrap", "`Function=path` of a bootstrap built for this machine (repeatable); default: built from the function's CodeUri")
	fs.Var(c.params, "parameter-overrides", "`Name=value` of a template parameter (repeatable)")
	fs.StringVar(&c.envVars, "env-vars", "", "JSON `file` of environment variables, as sam local's: {\"Function\": {\"VAR\": \"value\"}, \"Parameters\": {...}}")
	fs.StringVar(&c.rie, "rie", "", "the aws-lambda-rie `binary`; default: built from this module's pinned version")
	fs.StringVar(&c.endpoint, "endpoint", "", "a running DynamoDB `URL`; default: start DynamoDB Local (java), else dynalite")
	fs.StringVar(&c.region, "region", "us-east-1", "AWS_REGION of the functions")
	fs.StringVar(&c.stack, "stack-name", "local", "AWS::StackName, and the prefix of tables without a TableName")
	fs.StringVar(&c.buildDir, "build-dir", "", "`directory` for the built bootstraps; default: a temporary one")
	fs.BoolVar(&c.skipAuth, "skip-unsupported-auth", false, "serve routes whose authorizer is not JWT (Lambda, IAM, Cognito, API key) without one")
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	usage := `usage:
  samlocal start-api -template template.yaml [-addr 127.0.0.1:3000] [-sandboxes 4] [flags]
  samlocal invoke    -template template.yaml -event event.json [flags] FunctionName
  samlocal <command> -help`
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "start-api":
		return startAPI(ctx, args[1:], stdout, stderr)
	case "invoke":
		return invoke(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

// prepare reads the template, builds what it needs and starts DynamoDB:
// invoke's plan (one) holds the function named only, or the template's
// only one. The returned func releases what it started.
func (c *common) prepare(ctx context.Context, only string, one bool, stderr io.Writer) (*samlocal.Plan, samlocal.Config, func(), error) {
	var cfg samlocal.Config
	var started cleanups
	plan, err := c.plan(only, one)
	if err != nil {
		return nil, cfg, started.run, err
	}
	if cfg.Env, err = c.envFile(); err != nil {
		return nil, cfg, started.run, err
	}
	dir, err := c.workDir(&started)
	if err != nil {
		return nil, cfg, started.run, err
	}
	cfg.Plan, cfg.Region, cfg.Output = plan, c.region, stderr
	if cfg.Bootstraps, err = samlocal.Bootstraps(ctx, plan, c.bootstraps, dir); err != nil {
		return nil, cfg, started.run, err
	}
	if cfg.RIE, err = c.emulator(ctx, dir); err != nil {
		return nil, cfg, started.run, err
	}
	if cfg.Endpoint, err = c.dynamoDB(ctx, &started, stderr); err != nil {
		return nil, cfg, started.run, err
	}
	return plan, cfg, started.run, nil
}

// cleanups release what prepare started, the last first.
type cleanups []func()

// add registers f to run when the cleanups run.
func (cl *cleanups) add(f func()) { *cl = append(*cl, f) }

// run runs the cleanups, the last added first.
func (cl *cleanups) run() {
	for i := len(*cl) - 1; i >= 0; i-- {
		(*cl)[i]()
	}
}

// plan resolves the template; invoke's (one) is cut to the function named
// only (the template's only one when only is empty), and the -bootstrap
// flags of other functions dropped.
func (c *common) plan(only string, one bool) (*samlocal.Plan, error) {
	t, err := samlocal.ReadTemplate(c.template)
	if err != nil {
		return nil, err
	}
	plan, err := samlocal.NewPlan(t, samlocal.PlanConfig{Region: c.region, StackName: c.stack, Parameters: c.params, SkipUnsupportedAuth: c.skipAuth})
	if err != nil || !one {
		return plan, err
	}
	fn := plan.Function(only)
	if only == "" && len(plan.Functions) == 1 {
		fn = plan.Functions[0]
	}
	if fn == nil {
		var names []string
		for _, f := range plan.Functions {
			names = append(names, f.Name)
		}
		return nil, fmt.Errorf("no function %q in the template: name one of %s", only, strings.Join(names, ", "))
	}
	maps.DeleteFunc(c.bootstraps, func(name, _ string) bool { return name != fn.Name })
	return &samlocal.Plan{Functions: []*samlocal.Function{fn}, Tables: plan.Tables, Authorizers: plan.Authorizers}, nil
}

// envFile reads the -env-vars file: variables by function name, or
// "Parameters" for every function; nil without one.
func (c *common) envFile() (map[string]map[string]string, error) {
	if c.envVars == "" {
		return nil, nil
	}
	b, err := os.ReadFile(c.envVars)
	if err != nil {
		return nil, err
	}
	var env map[string]map[string]string
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("-env-vars %s: want {\"Function\": {\"VAR\": \"value\"}}: %w", c.envVars, err)
	}
	return env, nil
}

// workDir returns the absolute -build-dir, or a temporary directory that
// started removes.
func (c *common) workDir(started *cleanups) (string, error) {
	dir := c.buildDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "samlocal-")
		if err != nil {
			return "", err
		}
		started.add(func() { os.RemoveAll(tmp) })
		dir = tmp
	}
	return filepath.Abs(dir)
}

// emulator returns the -rie binary, or aws-lambda-rie built into dir.
func (c *common) emulator(ctx context.Context, dir string) (string, error) {
	if c.rie != "" {
		return c.rie, nil
	}
	rie := filepath.Join(dir, "aws-lambda-rie")
	return rie, samlocal.BuildRIE(ctx, rie)
}

// dynamoDB returns the -endpoint, or the endpoint of a DynamoDB Local
// (dynalite where java is missing) it starts and started stops.
func (c *common) dynamoDB(ctx context.Context, started *cleanups, stderr io.Writer) (string, error) {
	if c.endpoint != "" {
		return c.endpoint, nil
	}
	// dynalite and DynamoDB Local come from this clone's node_modules.
	if os.Getenv(dynalite.EnvDir) == "" {
		os.Setenv(dynalite.EnvDir, samlocal.RepoRoot())
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	s, err := dynalite.StartDynamoDBLocal(sctx)
	if errors.Is(err, dynalite.ErrNoJava) {
		fmt.Fprintln(stderr, "samlocal: java is not on PATH: dynalite instead of DynamoDB Local")
		s, err = dynalite.Start(sctx)
	}
	if err != nil {
		return "", err
	}
	started.add(func() { _ = s.Stop() })
	return s.Endpoint(), nil
}

// flags returns the flag set of command name, which reports to stderr,
// with the flags every command has, set into the returned common.
func flags(name string, stderr io.Writer) (*flag.FlagSet, *common) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &common{}
	c.register(fs)
	return fs, c
}

// startAPI is the start-api command: the template's HTTP routes served
// until ctx ends.
func startAPI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, c := flags("start-api", stderr)
	addr := fs.String("addr", "127.0.0.1:3000", "listen address of the HTTP front")
	sandboxes := fs.Int("sandboxes", 4, "sandboxes running each function with routes, one invocation each at a time")
	subjects := fs.String("subjects", "alice,bob", "comma-separated `subjects` (sub claims) to print tokens for")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("start-api: unexpected argument %q", fs.Arg(0))
	}
	plan, cfg, done, err := c.prepare(ctx, "", false, stderr)
	defer done()
	if err != nil {
		return err
	}
	cfg.Sandboxes = *sandboxes
	st, err := samlocal.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "samlocal: %s on %s (%d sandboxes per function); DynamoDB at %s\n\n", c.template, "http://"+ln.Addr().String(), cfg.Sandboxes, cfg.Endpoint)
	printPlan(stdout, plan, cfg.Endpoint)
	printTokens(stdout, st, *subjects)
	fmt.Fprintln(stdout, "\nCtrl-C stops it.")
	return serve(ctx, ln, st.Front)
}

// printPlan prints the plan's routes, its other events (invoked with
// samlocal invoke on the tables at endpoint) and its tables.
func printPlan(stdout io.Writer, plan *samlocal.Plan, endpoint string) {
	for _, fn := range plan.Functions {
		for _, rt := range fn.Routes {
			auth := "no authorizer"
			if rt.Authorizer != "" {
				auth = "JWT " + rt.Authorizer
			}
			fmt.Fprintf(stdout, "  %-28s -> %s (payload %s, %s)\n", rt.RouteKey(), fn.Name, rt.Payload, auth)
		}
		for name, typ := range fn.Events {
			fmt.Fprintf(stdout, "  %-28s -> %s (samlocal invoke -endpoint %s %s)\n", typ+" "+name, fn.Name, endpoint, fn.Name)
		}
	}
	for _, tb := range plan.Tables {
		fmt.Fprintf(stdout, "  table %s (%s)\n", *tb.Input.TableName, tb.LogicalID)
	}
}

// printTokens prints, for each JWT authorizer of st, a 12-hour token of
// each of the comma-separated subjects.
func printTokens(stdout io.Writer, st *samlocal.Stack, subjects string) {
	for _, key := range slices.Sorted(maps.Keys(st.Issuers)) {
		is := st.Issuers[key]
		fmt.Fprintf(stdout, "\nTokens for %s (12 h; iss %s, aud %s):\n", key, is.URL, is.Audience)
		for _, sub := range strings.Split(subjects, ",") {
			if sub = strings.TrimSpace(sub); sub != "" {
				fmt.Fprintf(stdout, "  %s=%s\n", strings.ToUpper(sub), is.Token(sub, 12*time.Hour, nil))
			}
		}
	}
}

// serve serves front on ln until ctx ends, then shuts down, waiting up to
// 40 s for the requests in flight.
func serve(ctx context.Context, ln net.Listener, front http.Handler) error {
	srv := &http.Server{Handler: front, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// invoke is the invoke command: one function run with an event, its
// answer printed.
func invoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, c := flags("invoke", stderr)
	eventFile := fs.String("event", "", "the event's JSON `file` (- for stdin); default: {}")
	// The function's name may come before the flags or after them.
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return fmt.Errorf("invoke: unexpected argument %q", fs.Arg(0))
	}
	event, err := readEvent(*eventFile)
	if err != nil {
		return err
	}
	plan, cfg, done, err := c.prepare(ctx, name, true, stderr)
	defer done()
	if err != nil {
		return err
	}
	fn := plan.Functions[0]
	cfg.Sandboxes = 1
	st, err := samlocal.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Stop()
	out, err := st.Invoke(ctx, fn.Name, event)
	if len(out) > 0 {
		fmt.Fprintln(stdout, strings.TrimSpace(string(out)))
	}
	return err
}

// readEvent reads the -event file (stdin for -), which must be JSON; {}
// without one.
func readEvent(file string) ([]byte, error) {
	if file == "" {
		return []byte("{}"), nil
	}
	var event []byte
	var err error
	if file == "-" {
		event, err = io.ReadAll(os.Stdin)
	} else {
		event, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, err
	}
	if !json.Valid(event) {
		return nil, fmt.Errorf("invoke: %s is not JSON", file)
	}
	return event, nil
}
