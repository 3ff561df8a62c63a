package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/idemkit/idemkit/internal/conform"
)

const conformHelp = `Usage: idemkit conform URL --body JSON [--header 'Authorization: Bearer ...'] [flags]

Check, from the outside, that a running endpoint (local or deployed) keeps
the Idempotency-Key contract once every hop between a client and the
function has had its say. Each check prints a verdict:

  fresh                 the sample request with a new key runs, not replayed
  replay                the same request again is the first answer, byte for
                        byte, with Idempotent-Replayed: true (the key reached
                        the handler's guard)
  quoted-key            "K" (a structured-field string) is the same key as K
  changed-body          the used key with another body: 422 problem+json
  concurrent-duplicate  --concurrency copies at once: one runs, the others get
                        409 with Retry-After (or its replay, once it is done)
  long-key              a key one byte over --max-key-len: 400
  malformed-key         a key with non-ASCII bytes: 400
  two-keys              two different keys in one request: 400
  missing-key           no key: 400 (only with --require-key)
  get-ignores-key       GET --get-url with the used key and a malformed one is
                        neither replayed nor refused

A request header dropped on the way in (the second request runs again) or an
answer's Idempotent-Replayed or Retry-After dropped on the way out fails the
check that sees it, saying which; the hops the answers name (Via, Server,
CloudFront's and API Gateway's ids) are listed. When the key does not reach
the guard, the checks that would run the handler again are skipped.

If every duplicate of the race was a replay, the handler answered before they
arrived: the verdict is inconclusive, not failed. Give a slower request with
--race-body, or more copies.

It leaves two records, in the tenant your --header implies, under the keys
it prints (--key-prefix, then a random run id, then -replay and -race), and
the effect of the two executions they stand for: use a test tenant or
account.

Exit codes:
  0  every check passed (inconclusive and skipped ones included)
  1  usage error
  2  a check failed, or the endpoint could not be reached
`

// requestHeaders is a repeatable --header 'Name: value'.
type requestHeaders http.Header

func (h requestHeaders) String() string { return "" }

func (h requestHeaders) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return fmt.Errorf("want 'Name: value', got %q", s)
	}
	http.Header(h).Add(name, strings.TrimSpace(value))
	return nil
}

func runConform(ctx context.Context, c *cli, args []string) error {
	fs := flag.NewFlagSet("conform", flag.ContinueOnError)
	header := requestHeaders{}
	var (
		cfg                         conform.Config
		body, bodyFile, changedBody string
		raceBody, raceBodyFile      string
		output                      string
		timeout                     time.Duration
	)
	fs.Var(header, "header", "`'Name: value'` sent with every request, e.g. the caller's Authorization (repeatable)")
	fs.StringVar(&body, "body", "", "sample request `body` the route accepts")
	fs.StringVar(&bodyFile, "body-file", "", "read the sample body from `file` (- for stdin)")
	fs.StringVar(&cfg.ContentType, "content-type", "application/json", "Content-Type of the bodies")
	fs.StringVar(&cfg.Method, "method", "POST", "the route's `method` (POST or PATCH)")
	fs.StringVar(&changedBody, "changed-body", "", "`body` sent under the used key to draw a 422 (default: the sample with a member added)")
	fs.StringVar(&raceBody, "race-body", "", "`body` of the concurrent duplicates: a request the handler is slow to answer (default: the sample)")
	fs.StringVar(&raceBodyFile, "race-body-file", "", "read the race body from `file`")
	fs.IntVar(&cfg.Concurrency, "concurrency", conform.DefaultConcurrency, "`copies` of the race request sent at once")
	fs.StringVar(&cfg.GetURL, "get-url", "", "`URL` the GET check is sent to (default: URL)")
	fs.BoolVar(&cfg.RequireKey, "require-key", false, "the route requires a key: check that a request without one gets 400")
	fs.StringVar(&cfg.KeyPrefix, "key-prefix", "conform-", "`prefix` of every key sent (printable ASCII)")
	fs.IntVar(&cfg.MaxKeyLen, "max-key-len", 255, "longest key the route accepts, in `bytes`")
	fs.StringVar(&output, "output", "table", "output `format`: table or json")
	fs.DurationVar(&timeout, "timeout", 2*time.Minute, "give up after this `duration`")
	help := func(w io.Writer) {
		io.WriteString(w, conformHelp+"\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	// The URL may come first (idemkit conform URL --flags) or last.
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cfg.URL, args = args[0], args[1:]
	}
	if err := c.parseFlags(fs, args, help); err != nil {
		return err
	}
	rest := fs.Args()
	if cfg.URL == "" && len(rest) > 0 {
		cfg.URL, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 {
		return usagef("unexpected argument %q; run 'idemkit conform --help'", rest[0])
	}
	if err := conformArgs(c, &cfg, body, bodyFile, changedBody, raceBody, raceBodyFile, output, timeout); err != nil {
		return err
	}
	cfg.Header = http.Header(header)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := conform.Run(ctx, cfg)
	if errors.Is(err, conform.ErrConfig) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	if output == "json" {
		err = writeJSON(c.stdout, res)
	} else {
		err = writeConform(c.stdout, res)
	}
	if err == nil && !res.OK {
		err = quietExit(exitError)
	}
	return err
}

// conformArgs checks the conform command's flags and sets cfg's bodies
// from them; its error is a usage error for flags that cannot be run.
func conformArgs(c *cli, cfg *conform.Config, body, bodyFile, changedBody, raceBody, raceBodyFile, output string, timeout time.Duration) error {
	if err := checkConformFlags(cfg.URL, output, timeout); err != nil {
		return err
	}
	var err error
	if cfg.Body, err = c.flagBody("body", body, bodyFile); err != nil {
		return err
	}
	if len(cfg.Body) == 0 {
		return usagef("a sample body is required: --body or --body-file")
	}
	if cfg.RaceBody, err = c.flagBody("race-body", raceBody, raceBodyFile); err != nil {
		return err
	}
	if changedBody != "" {
		cfg.ChangedBody = []byte(changedBody)
	}
	return nil
}

// checkConformFlags returns a usage error for the first of the endpoint's
// URL, --output and --timeout that is missing or invalid, and nil when all
// are valid.
func checkConformFlags(endpoint, output string, timeout time.Duration) error {
	if endpoint == "" {
		return usagef("the endpoint's URL is required: idemkit conform URL --body ...")
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("URL %q: want an http or https URL", endpoint)
	}
	if output != "table" && output != "json" {
		return usagef("--output %q: want table or json", output)
	}
	if timeout <= 0 {
		return usagef("--timeout must be positive")
	}
	return nil
}

// flagBody returns the body given inline by --flagName or read from the
// file --flagName-file names ("-": standard input); nil when neither is
// given, and a usage error when both are or the file cannot be read.
func (c *cli) flagBody(flagName, inline, file string) ([]byte, error) {
	switch {
	case inline != "" && file != "":
		return nil, usagef("give --%s or --%s-file, not both", flagName, flagName)
	case file == "-":
		return io.ReadAll(c.env.Stdin)
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, usagef("--%s-file: %v", flagName, err)
		}
		return b, nil
	case inline != "":
		return []byte(inline), nil
	}
	return nil, nil
}

func writeConform(w io.Writer, res *conform.Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n\n", res.Method, res.URL)
	for _, ch := range res.Checks {
		fmt.Fprintf(&b, "  %-13s %-21s %s\n", strings.ToUpper(string(ch.Verdict)), ch.Name, ch.Detail)
	}
	hops := "none named"
	if len(res.Hops) > 0 {
		hops = strings.Join(res.Hops, ", ")
	}
	fmt.Fprintf(&b, "\nHops the answers named: %s\n", hops)
	fmt.Fprintf(&b, "Records left, in the tenant your headers imply: keys %s\n", strings.Join(res.Keys, ", "))
	if res.OK {
		b.WriteString("Result: conforms\n")
	} else {
		b.WriteString("Result: FAILED\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
