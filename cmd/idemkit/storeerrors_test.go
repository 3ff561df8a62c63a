package main

import (
	"testing"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/testkit"
)

// TestStoreErrorsSayWhatIsWrong: with the real environment, against
// dynalite, a listing of a table without the indexes names the missing
// index, not a refused record; a table that is not there, for a read as
// for a write, is named with the region and the endpoint asked (a wrong
// --home-region looks the same), without "nothing stored".
func TestStoreErrorsSayWhatIsWrong(t *testing.T) {
	var rec regionRecorder
	endpoint := rec.server(t).URL
	awsEnv(t, endpoint, fakeSTS(t).URL)
	env := Env{Getenv: func(string) string { return "" }}
	def := dynamo.TableDefinition("noindex", dynamo.Options{})
	def.GlobalSecondaryIndexes = nil
	def.AttributeDefinitions = def.AttributeDefinitions[:1] // the key's alone
	bare := dynalite.CreateTable(t, dynalite.Client(t), def)
	scope := []string{"--tenant", "acme", "--operation", "POST /orders", "--key", "k1"}

	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"list without indexes", []string{"list", "--table", bare}, exitError,
			[]string{"table " + bare + " in region us-east-1 at endpoint " + endpoint + " cannot be listed", "no index ix-lease"}},
		{"list stale without indexes", []string{"list", "--table", bare, "--state", "stale"}, exitError,
			[]string{"cannot be listed", "no index ix-lease"}},
		{"list, no table", []string{"list", "--table", "no-such-table"}, exitUnavailable,
			[]string{"table no-such-table not found in region us-east-1 at endpoint " + endpoint, "--home-region"}},
		{"inspect, no table", append([]string{"inspect", "--table", "no-such-table"}, scope...), exitUnavailable,
			[]string{"table no-such-table not found in region us-east-1 at endpoint " + endpoint}},
		{"resolve, no table", append([]string{"resolve", "--table", "no-such-table", "--as", "failed", "--reason", "r", "--operator", "me"}, scope...), exitUnavailable,
			[]string{"table no-such-table not found in region us-east-1 at endpoint " + endpoint}},
		{"another region", append([]string{"inspect", "--table", "no-such-table", "--home-region", "eu-west-3"}, scope...), exitUnavailable,
			[]string{"table no-such-table not found in region eu-west-3 at endpoint " + endpoint}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runWith(t, env, tc.args...)
			wantCode(t, code, tc.code, stdout, stderr)
			testkit.Has(t, "stderr", stderr, tc.want, []string{"nothing stored", "refused the idempotency record as invalid"})
		})
	}
}
