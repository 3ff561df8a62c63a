package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/samlocal"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

var ledger = filepath.Join(samlocal.ModuleDir(), "internal", "ledger")

// TestInvoke: `samlocal invoke` builds the function named, runs it with
// the event file, and prints its answer, batchItemFailures included.
func TestInvoke(t *testing.T) {
	dynalite.SkipIfDisabled(t)
	ctx, cancel := context.WithTimeout(context.Background(), dynalite.Scale(5*time.Minute))
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"invoke", "SettlementWorker", "-template", filepath.Join(ledger, "template.yaml"),
		"-event", filepath.Join(ledger, "events", "settlements.json"), "-endpoint", dynalite.Endpoint(t),
		"-stack-name", strings.ToLower(dynalite.TableName(t)), "-build-dir", t.TempDir()}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("invoke: %v\n%s", err, stderr.String())
	}
	var resp struct {
		BatchItemFailures []struct{ ItemIdentifier string } `json:"batchItemFailures"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m-2" {
		t.Fatalf("invoke printed %q (%v): want m-2 alone in batchItemFailures", stdout.String(), err)
	}
}

// TestUsage: what the command cannot run is refused, before building
// anything, with the reason.
func TestUsage(t *testing.T) {
	notJSON := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(notJSON, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	tpl := filepath.Join(ledger, "template.yaml")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "usage"},
		{"unknown command", []string{"deploy"}, `unknown command "deploy"`},
		{"no function named", []string{"invoke", "-template", tpl}, "SettlementWorker, TransfersFunction"},
		{"unknown function", []string{"invoke", "Nope", "-template", tpl}, `no function "Nope"`},
		{"event not JSON", []string{"invoke", "SettlementWorker", "-template", tpl, "-event", notJSON}, "not JSON"},
		{"missing template", []string{"start-api", "-template", "/nonexistent/template.yaml"}, "no such file"},
		{"bad override", []string{"start-api", "-template", tpl, "-parameter-overrides", "Nope=1"}, "no such parameter"},
		{"bootstrap of no function", []string{"start-api", "-template", tpl, "-bootstrap", "Nope=/bin/true"}, "no such function"},
		{"env-vars missing", []string{"start-api", "-template", tpl, "-env-vars", "/nonexistent/env.json"}, "no such file"},
		{"env-vars not JSON", []string{"start-api", "-template", tpl, "-env-vars", notJSON}, `-env-vars ` + notJSON + `: want {"Function"`},
		{"bootstrap of another function dropped", []string{"invoke", "SettlementWorker", "-template", tpl,
			"-bootstrap", "TransfersFunction=/nonexistent", "-bootstrap", "SettlementWorker=" + notJSON}, "is not a Linux executable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestInvokeOnlyFunction: invoke without a function's name runs the
// template's only function (here refused after, for its -env-vars file).
func TestInvokeOnlyFunction(t *testing.T) {
	tpl := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(tpl, []byte("Resources:\n  Fn:\n    Type: AWS::Serverless::Function\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"invoke", "-template", tpl, "-env-vars", "/nonexistent/env.json"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/env.json") {
		t.Fatalf("error %v, want one about the -env-vars file", err)
	}
}
