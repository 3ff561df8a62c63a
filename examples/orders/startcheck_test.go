package orders_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/examples/orders"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

// The function checks its records table at its start (dynamo.Store.Check):
// a missing table stops it with an error naming the table; a table whose
// only difference is TTL off (every table of a server without the TTL
// API) starts it with a warning.
func TestFromEnvChecksTheTable(t *testing.T) {
	server := dynalite.Client(t)
	records := dynalite.CreateTable(t, server, dynamo.TableDefinition("records", dynamo.Options{}))
	ordersTable := dynalite.CreateTable(t, server, orders.OrdersTableDefinition("orders"))
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": dynalite.Endpoint(t), "AWS_REGION": dynalite.Region,
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"), "AWS_ENDPOINT_URL": "",
	} {
		t.Setenv(k, v)
	}
	start := func(table string) (string, error) {
		env := map[string]string{orders.EnvStore: "dynamodb", orders.EnvTable: table, orders.EnvOrdersTable: ordersTable}
		var logs bytes.Buffer
		_, _, err := orders.FromEnv(context.Background(), func(k string) string { return env[k] }, slog.New(slog.NewTextHandler(&logs, nil)))
		return logs.String(), err
	}
	missing := records + "-missing"
	if _, err := start(missing); !errors.Is(err, dynamo.ErrTableNotFound) || !strings.Contains(err.Error(), "table "+missing) {
		t.Errorf("missing table: %v, want ErrTableNotFound naming %s", err, missing)
	}
	logs, err := start(records)
	if err != nil {
		t.Fatalf("table of dynamo.TableDefinition: %v", err)
	}
	if dynalite.Has(t, dynalite.UpdateTimeToLive) {
		return
	}
	if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "TTL is not enabled") {
		t.Errorf("TTL off: logged %q, want a warning", logs)
	}
}
