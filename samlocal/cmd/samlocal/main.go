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

	"github.com/idemkit/idemkit/internal/dynalite"
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

// prepare reads the template, builds what it needs and starts DynamoDB.
// The returned func releases what it started.
func (c *common) prepare(ctx context.Context, only string, one bool, stderr io.Writer) (*samlocal.Plan, samlocal.Config, func(), error) {
	var cfg samlocal.Config
	cleanup := []func(){}
	done := func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	t, err := samlocal.ReadTemplate(c.template)
	if err != nil {
		return nil, cfg, done, err
	}
	plan, err := samlocal.NewPlan(t, samlocal.PlanConfig{Region: c.region, StackName: c.stack, Parameters: c.params, SkipUnsupportedAuth: c.skipAuth})
	if err != nil {
		return nil, cfg, done, err
	}
	if one {
		// invoke: only the function named (or the template's only one) is
		// built and run.
		fn := plan.Function(only)
		if only == "" && len(plan.Functions) == 1 {
			fn = plan.Functions[0]
		}
		if fn == nil {
			var names []string
			for _, f := range plan.Functions {
				names = append(names, f.Name)
			}
			return nil, cfg, done, fmt.Errorf("no function %q in the template: name one of %s", only, strings.Join(names, ", "))
		}
		for name := range c.bootstraps {
			if name != fn.Name {
				delete(c.bootstraps, name)
			}
		}
		plan = &samlocal.Plan{Functions: []*samlocal.Function{fn}, Tables: plan.Tables, Authorizers: plan.Authorizers}
	}
	if c.envVars != "" {
		b, err := os.ReadFile(c.envVars)
		if err != nil {
			return nil, cfg, done, err
		}
		if err := json.Unmarshal(b, &cfg.Env); err != nil {
			return nil, cfg, done, fmt.Errorf("-env-vars %s: want {\"Function\": {\"VAR\": \"value\"}}: %w", c.envVars, err)
		}
	}
	dir := c.buildDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "samlocal-"); err != nil {
			return nil, cfg, done, err
		}
		cleanup = append(cleanup, func() { os.RemoveAll(dir) })
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, cfg, done, err
	}
	cfg.Plan, cfg.Region, cfg.Output = plan, c.region, stderr
	if cfg.Bootstraps, err = samlocal.Bootstraps(ctx, plan, c.bootstraps, dir); err != nil {
		return nil, cfg, done, err
	}
	cfg.RIE = c.rie
	if cfg.RIE == "" {
		cfg.RIE = filepath.Join(dir, "aws-lambda-rie")
		if err := samlocal.BuildRIE(ctx, cfg.RIE); err != nil {
			return nil, cfg, done, err
		}
	}
	cfg.Endpoint = c.endpoint
	if cfg.Endpoint == "" {
		// dynalite and DynamoDB Local come from this clone's node_modules.
		if os.Getenv(dynalite.EnvDir) == "" {
			os.Setenv(dynalite.EnvDir, samlocal.RepoRoot())
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		s, err := dynalite.StartDynamoDBLocal(sctx)
		if errors.Is(err, dynalite.ErrNoJava) {
			fmt.Fprintln(stderr, "samlocal: java is not on PATH: dynalite instead of DynamoDB Local")
			s, err = dynalite.Start(sctx)
		}
		cancel()
		if err != nil {
			return nil, cfg, done, err
		}
		cleanup = append(cleanup, func() { _ = s.Stop() })
		cfg.Endpoint = s.Endpoint()
	}
	return plan, cfg, done, nil
}

func startAPI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("start-api", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
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
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "samlocal: %s on %s (%d sandboxes per function); DynamoDB at %s\n\n", c.template, url, cfg.Sandboxes, cfg.Endpoint)
	for _, fn := range plan.Functions {
		for _, rt := range fn.Routes {
			auth := "no authorizer"
			if rt.Authorizer != "" {
				auth = "JWT " + rt.Authorizer
			}
			fmt.Fprintf(stdout, "  %-28s -> %s (payload %s, %s)\n", rt.RouteKey(), fn.Name, rt.Payload, auth)
		}
		for name, typ := range fn.Events {
			fmt.Fprintf(stdout, "  %-28s -> %s (samlocal invoke -endpoint %s %s)\n", typ+" "+name, fn.Name, cfg.Endpoint, fn.Name)
		}
	}
	for _, tb := range plan.Tables {
		fmt.Fprintf(stdout, "  table %s (%s)\n", *tb.Input.TableName, tb.LogicalID)
	}
	for _, key := range slices.Sorted(maps.Keys(st.Issuers)) {
		is := st.Issuers[key]
		fmt.Fprintf(stdout, "\nTokens for %s (12 h; iss %s, aud %s):\n", key, is.URL, is.Audience)
		for _, sub := range strings.Split(*subjects, ",") {
			if sub = strings.TrimSpace(sub); sub != "" {
				fmt.Fprintf(stdout, "  %s=%s\n", strings.ToUpper(sub), is.Token(sub, 12*time.Hour, nil))
			}
		}
	}
	fmt.Fprintln(stdout, "\nCtrl-C stops it.")
	srv := &http.Server{Handler: st.Front, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
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

func invoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("invoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
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
	event := []byte("{}")
	if *eventFile != "" {
		var err error
		if *eventFile == "-" {
			event, err = io.ReadAll(os.Stdin)
		} else {
			event, err = os.ReadFile(*eventFile)
		}
		if err != nil {
			return err
		}
		if !json.Valid(event) {
			return fmt.Errorf("invoke: %s is not JSON", *eventFile)
		}
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
