package dynamo_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

// createdTable makes on c, with CreateTable, a table of opts that t's
// cleanup deletes, and returns its name.
func createdTable(t *testing.T, c *dynamodb.Client, opts dynamo.Options) string {
	t.Helper()
	name := dynalite.TableName(t)
	if err := dynamo.CreateTable(t.Context(), c, name, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.DeleteTable(t.Context(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}) })
	return name
}

// TestCheckTableDefinition: a table made by CreateTable passes Check on
// every server, dynalite included, which has no TTL API and describes
// every table with TTL off; CheckTTL reports that apart, naming the table
// and the attribute, and passes where CreateTable could enable TTL.
func TestCheckTableDefinition(t *testing.T) {
	c := dynalite.Client(t)
	name := createdTable(t, c, dynamo.Options{})
	store := storeOn(t, c, name, dynamo.Options{})
	if err := store.Check(t.Context()); err != nil {
		t.Fatalf("Check: %v", err)
	}
	err := store.CheckTTL(t.Context())
	if dynalite.Has(t, dynalite.UpdateTimeToLive) {
		if err != nil {
			t.Fatalf("CheckTTL: %v", err)
		}
		return
	}
	if !errors.Is(err, dynamo.ErrTTLDisabled) || errors.Is(err, dynamo.ErrTableMismatch) {
		t.Fatalf("CheckTTL: %v, want ErrTTLDisabled only", err)
	}
	if !strings.Contains(err.Error(), "table "+name+": ") || !strings.Contains(err.Error(), "want it on exp") {
		t.Errorf("CheckTTL: %q does not name the table and the TTL attribute", err)
	}
}

// TestCheckTTLDisabled: TTL turned off on a table (where the server can
// turn it off) is CheckTTL's error, never Check's.
func TestCheckTTLDisabled(t *testing.T) {
	dynalite.Require(t, dynalite.UpdateTimeToLive)
	c := dynalite.Client(t)
	def := dynamo.TableDefinition("", dynamo.Options{})
	def.TableName = nil
	name := dynalite.CreateTable(t, c, def) // TTL never enabled
	store := storeOn(t, c, name, dynamo.Options{})
	if err := store.Check(t.Context()); err != nil {
		t.Errorf("Check: %v, want nil: TTL off only keeps expired records", err)
	}
	if err := store.CheckTTL(t.Context()); !errors.Is(err, dynamo.ErrTTLDisabled) {
		t.Errorf("CheckTTL: %v, want ErrTTLDisabled", err)
	}
}

// TestCheckRefusesOtherTables: a table that does not exist, or is keyed
// or indexed otherwise than TableDefinition, fails Check with an error
// naming the table and each difference.
func TestCheckRefusesOtherTables(t *testing.T) {
	c := dynalite.Client(t)
	s := types.ScalarAttributeTypeS
	otherKey := &dynamodb.CreateTableInput{
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: s}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}
	stringLease := dynamo.TableDefinition("", dynamo.Options{})
	stringLease.TableName = nil
	for i, d := range stringLease.AttributeDefinitions {
		if aws.ToString(d.AttributeName) == dynamo.AttrLeaseUntil {
			stringLease.AttributeDefinitions[i].AttributeType = s
		}
	}
	for _, tc := range []struct {
		name     string
		table    func(t *testing.T) string
		sentinel error
		want     []string
	}{
		{"missing", func(t *testing.T) string { return dynalite.TableName(t) }, dynamo.ErrTableNotFound, nil},
		{"other key", func(t *testing.T) string { return dynalite.CreateTable(t, c, otherKey) }, dynamo.ErrTableMismatch, []string{
			"key schema is [id S HASH], want [pk S HASH]",
			"no index ix-lease, want one keyed [ix S HASH, lu N RANGE] (idemkit list reads indeterminate records of every tenant through it, whatever Options.IndexInFlight says",
			"no index it-lease, want one keyed [it S HASH, lu N RANGE] (idemkit list --tenant reads one tenant's indeterminate records through it, whatever Options.IndexInFlight says)",
		}},
		{"lease as a string", func(t *testing.T) string { return dynalite.CreateTable(t, c, stringLease) }, dynamo.ErrTableMismatch, []string{
			"index ix-lease is keyed [ix S HASH, lu S RANGE], want [ix S HASH, lu N RANGE]",
			"index it-lease is keyed [it S HASH, lu S RANGE], want [it S HASH, lu N RANGE]",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.table(t)
			store := storeOn(t, c, name, dynamo.Options{})
			err := store.Check(t.Context())
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), "table "+name) {
				t.Fatalf("Check: %v, want %v naming the table", err, tc.sentinel)
			}
			var mm *dynamo.TableMismatchError
			if tc.want == nil {
				return
			}
			if !errors.As(err, &mm) {
				t.Fatalf("Check: %v, not a *TableMismatchError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Check: %q lacks %q", err, w)
				}
			}
			if len(mm.Problems) != len(tc.want) {
				t.Errorf("problems %q, want %q", mm.Problems, tc.want)
			}
		})
	}
}

// TestCheckTTLAttribute: TTL on another attribute than AttrExpiresAt is a
// difference Check reports.
func TestCheckTTLAttribute(t *testing.T) {
	dynalite.Require(t, dynalite.UpdateTimeToLive)
	c := dynalite.Client(t)
	def := dynamo.TableDefinition("", dynamo.Options{})
	def.TableName = nil
	name := dynalite.CreateTable(t, c, def)
	if _, err := c.UpdateTimeToLive(t.Context(), &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expires"), Enabled: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
	store := storeOn(t, c, name, dynamo.Options{})
	err := store.Check(t.Context())
	var mm *dynamo.TableMismatchError
	if !errors.As(err, &mm) || len(mm.Problems) != 1 || !strings.HasPrefix(mm.Problems[0], "TTL is on expires, want exp ") {
		t.Fatalf("Check: %v, want TTL on the wrong attribute", err)
	}
}

// TestCheckEveryRegion: a regional store checks its table in each region
// and names the region where it is missing.
func TestCheckEveryRegion(t *testing.T) {
	c := dynalite.Client(t)
	name := createdTable(t, c, dynamo.Options{})
	other, err := dynalite.NewClient(t.Context(), dynalite.NewServer(t).Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	store, err := dynamo.NewRegional(dynamo.Regions{
		Clients: map[string]dynamo.Client{"us-east-1": c, "eu-west-1": other},
		Home:    func(string) string { return "us-east-1" },
	}, name, dynamo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = store.Check(t.Context())
	if !errors.Is(err, dynamo.ErrTableNotFound) || !strings.Contains(err.Error(), "table "+name+" in eu-west-1") ||
		strings.Contains(err.Error(), "in us-east-1: dynamo: table not found") {
		t.Errorf("Check: %v, want the table not found in eu-west-1 only", err)
	}
}

// TestCheckNeedsDescribe: a client that cannot describe tables is an
// error saying so, not a pass.
func TestCheckNeedsDescribe(t *testing.T) {
	store := storeOn(t, newCounting(dynalite.Client(t)), "t", dynamo.Options{})
	if err := store.Check(t.Context()); err == nil || !strings.Contains(err.Error(), "cannot describe tables") {
		t.Errorf("Check: %v", err)
	}
}
