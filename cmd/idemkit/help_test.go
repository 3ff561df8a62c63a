package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/testkit"
)

// Every command answers --help on stdout with exit 0, naming its flags and
// the exit codes.
func TestHelp(t *testing.T) {
	common := []string{"-table", "-home-region", "-profile", "-output", "-timeout"}
	scope := []string{"-tenant", "-operation", "-key", "-account-wide"}
	cases := []struct {
		name  string
		args  []string
		usage string
		flags []string
	}{
		{"top --help", []string{"--help"}, "idemkit <command> [flags]", []string{"inspect", "list", "resolve", "--state stale", "stale in-flight"}},
		{"top -h", []string{"-h"}, "idemkit <command> [flags]", nil},
		{"top help", []string{"help"}, "idemkit <command> [flags]", nil},
		{"inspect --help", []string{"inspect", "--help"}, "Usage: idemkit inspect", append(append([]string{"-body"}, common...), scope...)},
		{"inspect -h", []string{"inspect", "-h"}, "Usage: idemkit inspect", nil},
		{"help inspect", []string{"help", "inspect"}, "Usage: idemkit inspect", nil},
		{"list --help", []string{"list", "--help"}, "Usage: idemkit list", append([]string{"-state", "-tenant", "-limit", "-all", "-page"}, common...)},
		{"help list", []string{"help", "list"}, "Usage: idemkit list", nil},
		{"resolve --help", []string{"resolve", "--help"}, "Usage: idemkit resolve", append(append([]string{"-as", "-reason", "-operator", "-status", "-body-file", "-body-base64", "-header"}, common...), scope...)},
		{"help resolve", []string{"help", "resolve"}, "Usage: idemkit resolve", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runWith(t, Env{Getenv: func(string) string { return "" }}, tc.args...)
			wantCode(t, code, exitOK, stdout, stderr)
			if stderr != "" {
				t.Errorf("stderr: %q, want none", stderr)
			}
			for _, want := range append([]string{tc.usage, "Exit codes:", "3  not found", "4  conflict", "5  store unavailable"}, tc.flags...) {
				if !strings.Contains(stdout, want) {
					t.Errorf("help lacks %q:\n%s", want, stdout)
				}
			}
		})
	}
}

// The exit codes are the documented ones, each for its cause.
func TestExitCodes(t *testing.T) {
	f := newFixture(t)
	missing := scopeArgs(scopeOf("never-stored"))
	done := scopeOf("done")
	f.seedCompleted(done, &idemkit.Snapshot{Status: 201})
	running := scopeOf("running")
	f.seed(running, time.Now().Add(time.Hour))
	failed := scopeOf("failed")
	f.seedIndeterminate(failed, time.Now().Add(-time.Hour))
	if code, out, errs := f.run(append([]string{"resolve", "--as", "failed", "--reason", "r"}, scopeArgs(failed)...)...); code != exitOK {
		t.Fatalf("setup resolve: %d %s %s", code, out, errs)
	}
	indet := scopeOf("indet")
	f.seedIndeterminate(indet, time.Now().Add(-time.Minute))
	body := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(body, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}

	resolveFailed := func(s idemkit.Scope) []string {
		return append([]string{"resolve", "--as", "failed", "--reason", "checked the ledger"}, scopeArgs(s)...)
	}
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no command", nil, exitUsage, "Usage"},
		{"unknown command", []string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"unknown flag", []string{"inspect", "--frob"}, exitUsage, "flag provided but not defined"},
		{"extra argument", append([]string{"inspect", "extra"}, missing...), exitUsage, `unexpected argument "extra"`},
		{"bad output", append([]string{"inspect", "--output", "yaml"}, missing...), exitUsage, "want table or json"},
		{"no tenant", []string{"inspect", "--operation", "POST /orders", "--key", "k"}, exitUsage, "--tenant is required"},
		{"no operation", []string{"inspect", "--tenant", "acme", "--key", "k"}, exitUsage, "--operation is required"},
		{"no key", []string{"inspect", "--tenant", "acme", "--operation", "POST /orders"}, exitUsage, "--key is required"},
		{"invalid key", []string{"inspect", "--tenant", "acme", "--operation", "POST /orders", "--key", "a\x01b"}, exitUsage, "--key"},
		{"two keys", []string{"inspect", "--tenant", "acme", "--operation", "POST /orders", "--key", "a, b"}, exitUsage, "two different values"},
		{"list other state", []string{"list", "--state", "completed"}, exitUsage, "want indeterminate or stale"},
		{"list limit", []string{"list", "--limit", "0"}, exitUsage, "--limit 0"},
		{"list all and page", []string{"list", "--all", "--page", "x"}, exitUsage, "exclude each other"},
		{"list bad page", []string{"list", "--page", "not-a-token"}, exitUsage, "invalid page token"},
		{"resolve no reason", append([]string{"resolve", "--as", "failed"}, scopeArgs(indet)...), exitUsage, "--reason is required"},
		{"resolve blank reason", append([]string{"resolve", "--as", "failed", "--reason", "  "}, scopeArgs(indet)...), exitUsage, "--reason is required"},
		{"resolve no as", append([]string{"resolve", "--reason", "r"}, scopeArgs(indet)...), exitUsage, "--as is required"},
		{"resolve bad as", append([]string{"resolve", "--as", "indeterminate", "--reason", "r"}, scopeArgs(indet)...), exitUsage, "want completed or failed"},
		{"resolve completed no status", append([]string{"resolve", "--as", "completed", "--reason", "r"}, scopeArgs(indet)...), exitUsage, "needs --status"},
		{"resolve failed with status", append(resolveFailed(indet), "--status", "201"), exitUsage, "--as completed only"},
		{"resolve failed with body", append(resolveFailed(indet), "--body-file", body), exitUsage, "--as completed only"},
		{"resolve bad header", append([]string{"resolve", "--as", "completed", "--status", "201", "--reason", "r", "--header", "no colon"}, scopeArgs(indet)...), exitUsage, "want 'Name: value'"},
		{"resolve unreplayed header", append([]string{"resolve", "--as", "completed", "--status", "201", "--reason", "r", "--header", "set-cookie: a=b"}, scopeArgs(indet)...), exitUsage, "Set-Cookie is never replayed"},
		{"resolve missing body file", append([]string{"resolve", "--as", "completed", "--status", "201", "--reason", "r", "--body-file", filepath.Join(t.TempDir(), "none")}, scopeArgs(indet)...), exitUsage, "--body-file"},
		{"resolve body not base64", append([]string{"resolve", "--as", "completed", "--status", "201", "--reason", "r", "--body-file", body, "--body-base64"}, scopeArgs(indet)...), exitUsage, "not base64"},
		{"inspect not found", append([]string{"inspect"}, missing...), exitNotFound, "no live record"},
		{"resolve not found", append([]string{"resolve", "--as", "failed", "--reason", "r"}, missing...), exitNotFound, "no live record"},
		{"resolve completed record", resolveFailed(done), exitConflict, "record is completed, not indeterminate; nothing was changed"},
		{"resolve failed record", resolveFailed(failed), exitConflict, "record is failed, not indeterminate (resolved as failed by " + testOperator},
		{"resolve live lease", resolveFailed(running), exitConflict, "the request may still be running"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if len(args) > 0 && args[0] != "frobnicate" {
				args = append([]string{args[0], "--table", f.table}, args[1:]...)
			}
			code, stdout, stderr := runWith(t, f.env, args...)
			wantCode(t, code, tc.code, stdout, stderr)
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q lacks %q", stderr, tc.stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want none on failure", stdout)
			}
		})
	}
	// Nothing above changed the records it was refused.
	if got := f.get(indet).State; got != idemkit.StateIndeterminate {
		t.Errorf("indeterminate record is %s after refused commands", got)
	}
	if got := f.get(running); got.State != idemkit.StateInFlight || got.Owner != "owner-running" {
		t.Errorf("running record is %s/%s after a refused resolve", got.State, got.Owner)
	}
}

func TestExitCodeTableRequired(t *testing.T) {
	code, stdout, stderr := runWith(t, Env{Getenv: func(string) string { return "" }}, "list")
	wantCode(t, code, exitUsage, stdout, stderr)
	if !strings.Contains(stderr, "--table is required (or set IDEMKIT_TABLE)") {
		t.Errorf("stderr: %q", stderr)
	}
}

// A store that cannot be reached, or a table that does not exist, is exit
// 5 for every command.
func TestExitCodeStoreUnavailable(t *testing.T) {
	f := newFixture(t)
	down := f.env
	down.OpenStore = func(context.Context, StoreOptions) (idemkit.OperatorStore, error) { return failingStore{}, nil }
	// A table that does not exist, through the DynamoDB store.
	noTable := f.env
	noTable.OpenStore = func(context.Context, StoreOptions) (idemkit.OperatorStore, error) {
		return dynamo.New(dynalite.Client(t), "no-such-table-"+f.table, dynamo.Options{})
	}
	missing := scopeArgs(scopeOf("k"))
	for name, env := range map[string]Env{"unreachable": down, "missing table": noTable} {
		for _, args := range [][]string{
			append([]string{"inspect"}, missing...),
			{"list"},
			append([]string{"resolve", "--as", "failed", "--reason", "r"}, missing...),
		} {
			t.Run(name+"/"+args[0], func(t *testing.T) {
				code, stdout, stderr := runWith(t, env, append([]string{args[0], "--table", f.table}, args[1:]...)...)
				wantCode(t, code, exitUnavailable, stdout, stderr)
				if !strings.Contains(stderr, "idemkit "+args[0]+": ") {
					t.Errorf("stderr: %q", stderr)
				}
			})
		}
	}
}

// When neither --operator nor the caller's identity can be had, resolve
// refuses before touching the record (exit 2); --operator alone suffices.
func TestResolveOperatorIdentity(t *testing.T) {
	f := newFixture(t)
	s := scopeOf("who")
	f.seedIndeterminate(s, time.Now().Add(-time.Hour))
	env := f.env
	env.Operator = func(ctx context.Context, _ StoreOptions) (string, error) {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("identity lookup without a deadline")
		}
		return "", errors.New("no credentials")
	}
	args := append([]string{"resolve", "--table", f.table, "--as", "failed", "--reason", "r"}, scopeArgs(s)...)
	code, stdout, stderr := runWith(t, env, args...)
	wantCode(t, code, exitError, stdout, stderr)
	if !strings.Contains(stderr, "pass --operator NAME") || !strings.Contains(stderr, "no credentials") {
		t.Errorf("stderr: %q", stderr)
	}
	if got := f.get(s).State; got != idemkit.StateIndeterminate {
		t.Fatalf("record is %s after a refused resolve", got)
	}
	code, stdout, stderr = runWith(t, env, append(args, "--operator", "bob (on call)")...)
	wantCode(t, code, exitOK, stdout, stderr)
	if got := f.get(s).Resolution; got == nil || got.Operator != "bob (on call)" {
		t.Fatalf("resolution %+v, want operator bob (on call)", got)
	}
}

// opsDoc is the runbook, which documents the command.
var opsDoc = filepath.Join("..", "..", "docs", "OPERATIONS.md")

// The runbook documents the same exit codes as --help.
func TestExitCodesDocumented(t *testing.T) {
	doc := testkit.Doc(t, opsDoc)
	for code, word := range map[int]string{
		exitOK: "success", exitUsage: "usage error", exitError: "any other error",
		exitNotFound: "not found", exitConflict: "conflict", exitUnavailable: "store unavailable",
	} {
		row := fmt.Sprintf("| %d | %s", code, word)
		if !strings.Contains(doc, row) {
			t.Errorf("docs/OPERATIONS.md lacks the row %q", row)
		}
		line := fmt.Sprintf("  %d  %s", code, word)
		if !strings.Contains(exitCodesHelp, line) {
			t.Errorf("--help lacks %q", line)
		}
	}
}

// The runbook's command reference names every flag each command's --help
// lists.
func TestFlagsDocumented(t *testing.T) {
	ref := testkit.Section(t, opsDoc, "## 5. Command reference", "\n## ")
	flagLine := regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)
	for _, cmd := range commands {
		code, stdout, stderr := runWith(t, Env{Getenv: func(string) string { return "" }}, cmd.name, "--help")
		wantCode(t, code, exitOK, stdout, stderr)
		flags := flagLine.FindAllStringSubmatch(stdout, -1)
		if len(flags) == 0 {
			t.Fatalf("%s --help lists no flags:\n%s", cmd.name, stdout)
		}
		for _, f := range flags {
			if !regexp.MustCompile(`--` + regexp.QuoteMeta(f[1]) + `\b`).MatchString(ref) {
				t.Errorf("docs/OPERATIONS.md's command reference does not name %s --%s", cmd.name, f[1])
			}
		}
	}
}

// The runbook names every field of --output json.
func TestJSONFieldsDocumented(t *testing.T) {
	para := testkit.Section(t, opsDoc, "JSON fields:", "\n\n")
	n := 0
	for _, v := range []any{recordJSON{}, snapshotJSON{}, resolutionJSON{}, listJSON{}, resolveJSON{}} {
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			n++
			if !strings.Contains(para, "`"+name+"`") && !strings.Contains(para, `"`+name+`"`) {
				t.Errorf("docs/OPERATIONS.md's JSON fields do not name %s (%s)", name, typ.Name())
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d JSON fields found", n)
	}
}
