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

	"github.com/idemkit/idemkit/internal/dynalite"
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
