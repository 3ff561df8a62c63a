package dynamo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// TableDescriber is the part of *dynamodb.Client that Store.Check uses,
// besides Client.
type TableDescriber interface {
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
}

var _ TableDescriber = (*dynamodb.Client)(nil)

// ErrTableMismatch is wrapped by Check's error for a table laid out other
// than TableDefinition says (a *TableMismatchError).
var ErrTableMismatch = errors.New("dynamo: table does not match dynamo.TableDefinition")

// ErrTTLDisabled is wrapped by CheckTTL's error for a table whose TTL is
// not enabled, or a server that has no TTL API.
var ErrTTLDisabled = errors.New("dynamo: TTL is not enabled")

// TableMismatchError says how the store's table, in one region, differs
// from TableDefinition. It is ErrTableMismatch under errors.Is.
type TableMismatchError struct {
	Table  string
	Region string // "" for a store made by New
	// Problems are the differences that break the store or the operator's
	// listings: the key schema, an index that is missing or keyed
	// otherwise, TTL enabled on another attribute than the store's.
	// TTL that is off is none of them: see CheckTTL.
	Problems []string
}

func (e *TableMismatchError) Error() string {
	return fmt.Sprintf("dynamo: table %s does not match dynamo.TableDefinition: %s", e.where(), strings.Join(e.Problems, "; "))
}

func (e *TableMismatchError) where() string {
	if e.Region != "" {
		return e.Table + " in " + e.Region
	}
	return e.Table
}

// Is reports whether target is ErrTableMismatch.
func (e *TableMismatchError) Is(target error) bool { return target == ErrTableMismatch }

// Check reports whether the store's table is one it can use, in every
// region of the store: nil when it exists and its key schema and indexes
// are those of TableDefinition with the store's Options, and its TTL,
// if enabled, is on the store's TTL attribute (Options.TTLAttr). A table
// that does not exist is an error wrapping ErrTableNotFound, one laid out
// otherwise a *TableMismatchError; both name the table. Call it once at
// startup, so that a wrong table name or layout stops the function at its
// start instead of answering every request 503.
//
// Both indexes are required whatever Options.IndexInFlight says: requests
// never read them, but every store marks records indeterminate, and the
// operator lists those through them (idemkit list, ListIndeterminate:
// IndexIndeterminate across tenants, IndexIndeterminateTenant for one);
// IndexInFlight only adds in_flight records to IndexIndeterminate.
//
// TTL that is off is not an error: it only keeps expired records stored
// (every read and condition treats them as absent), and a server without
// the TTL API cannot be told from a table with TTL off (dynalite describes
// every table so), so a function started against one still runs. CheckTTL
// reports it apart. Check makes two reads per region, DescribeTable and
// DescribeTimeToLive (the role needs both actions on the table), through
// clients that implement TableDescriber, as *dynamodb.Client does. A
// server without DescribeTimeToLive is not asked about TTL.
func (s *Store) Check(ctx context.Context) error {
	return s.eachRegion(ctx, s.checkIn)
}

// CheckTTL reports whether TTL is enabled on the store's TTL attribute in
// every region of the store: nil when it is (or is being enabled), an
// error wrapping ErrTTLDisabled, naming the table, when it is off or the
// server has no TTL API (as with dynalite), other errors as Check's. A
// table without TTL keeps every record for good (reads treat expired ones
// as absent: only storage is lost), so log it rather than stop on it.
// TTL on another attribute is Check's error, not this one's. It makes one
// read per region, DescribeTimeToLive.
func (s *Store) CheckTTL(ctx context.Context) error {
	return s.eachRegion(ctx, s.checkTTLIn)
}

// eachRegion runs check in every region of the store, joining the errors.
func (s *Store) eachRegion(ctx context.Context, check func(context.Context, string, Client) error) error {
	if c, ok := s.regions[""]; ok && len(s.regions) == 1 {
		return check(ctx, "", c)
	}
	var errs []error
	for _, region := range slices.Sorted(maps.Keys(s.regions)) {
		errs = append(errs, check(ctx, region, s.regions[region]))
	}
	return errors.Join(errs...)
}

func (s *Store) describer(region string, c Client) (TableDescriber, string, error) {
	where := s.table
	if region != "" {
		where += " in " + region
	}
	d, ok := c.(TableDescriber)
	if !ok {
		return nil, where, fmt.Errorf("dynamo: check table %s: the client (%T) cannot describe tables: it needs DescribeTable and DescribeTimeToLive", where, c)
	}
	return d, where, nil
}

func (s *Store) checkIn(ctx context.Context, region string, c Client) error {
	d, where, err := s.describer(region, c)
	if err != nil {
		return err
	}
	out, err := d.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: s.tableName})
	if err != nil {
		return checkFailed(where, "DescribeTable", err)
	}
	mm := &TableMismatchError{Table: s.table, Region: region, Problems: layoutProblems(TableDefinition(s.table, s.opts), out.Table)}
	on, attr, err := s.describeTTL(ctx, d, where)
	if err != nil {
		return err
	}
	if want := s.ttlAttr(); on && attr != want {
		mm.Problems = append(mm.Problems, fmt.Sprintf("TTL is on %s, want %s (Options.TTLAttr names the store's; a table has one)", attr, want))
	}
	if len(mm.Problems) > 0 {
		return mm
	}
	return nil
}

func (s *Store) checkTTLIn(ctx context.Context, region string, c Client) error {
	d, where, err := s.describer(region, c)
	if err != nil {
		return err
	}
	on, _, err := s.describeTTL(ctx, d, where)
	if err != nil || on {
		return err
	}
	return fmt.Errorf("dynamo: table %s: %w, want it on %s: expired records are never deleted (a server without the TTL API, such as dynalite, describes every table so)", where, ErrTTLDisabled, s.ttlAttr())
}

// describeTTL returns whether TTL is enabled (or being enabled) on the
// table, and on which attribute. A server without DescribeTimeToLive
// answers off.
func (s *Store) describeTTL(ctx context.Context, d TableDescriber, where string) (on bool, attr string, err error) {
	out, err := d.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: s.tableName})
	var ae smithy.APIError
	switch {
	case errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException":
		return false, "", nil
	case err != nil:
		return false, "", checkFailed(where, "DescribeTimeToLive", err)
	case out.TimeToLiveDescription == nil:
		return false, "", nil
	}
	td := out.TimeToLiveDescription
	st := td.TimeToLiveStatus
	return st == types.TimeToLiveStatusEnabled || st == types.TimeToLiveStatusEnabling, aws.ToString(td.AttributeName), nil
}

// checkFailed is Check's error for a describe call that failed.
func checkFailed(where, call string, err error) error {
	var nf *types.ResourceNotFoundException
	var ae smithy.APIError
	switch {
	case errors.As(err, &nf):
		return fmt.Errorf("dynamo: check table %s: %w: %w", where, ErrTableNotFound, err)
	case errors.As(err, &ae) && ae.ErrorCode() == "AccessDeniedException":
		return fmt.Errorf("dynamo: check table %s: %w (the role needs dynamodb:%s on it): %w", where, ErrAccessDenied, call, err)
	}
	return fmt.Errorf("dynamo: check table %s: %s: %w", where, call, err)
}

// layoutProblems lists how got differs from want in what the store
// relies on: the table's key schema and each index's keys and projection,
// with their attribute types.
func layoutProblems(want *dynamodb.CreateTableInput, got *types.TableDescription) []string {
	if got == nil {
		return []string{"DescribeTable returned no table"}
	}
	var problems []string
	wantTypes := attrTypes(want.AttributeDefinitions)
	gotTypes := attrTypes(got.AttributeDefinitions)
	if w, g := keyString(want.KeySchema, wantTypes), keyString(got.KeySchema, gotTypes); w != g {
		problems = append(problems, fmt.Sprintf("key schema is %s, want %s", g, w))
	}
	for _, wi := range want.GlobalSecondaryIndexes {
		name := aws.ToString(wi.IndexName)
		i := slices.IndexFunc(got.GlobalSecondaryIndexes, func(g types.GlobalSecondaryIndexDescription) bool {
			return aws.ToString(g.IndexName) == name
		})
		w := keyString(wi.KeySchema, wantTypes)
		if i < 0 {
			problems = append(problems, fmt.Sprintf("no index %s, want one keyed %s (%s)", name, w, indexUse[name]))
			continue
		}
		gi := got.GlobalSecondaryIndexes[i]
		if g := keyString(gi.KeySchema, gotTypes); g != w {
			problems = append(problems, fmt.Sprintf("index %s is keyed %s, want %s", name, g, w))
		}
		if gi.Projection == nil || gi.Projection.ProjectionType != types.ProjectionTypeAll {
			problems = append(problems, fmt.Sprintf("index %s does not project ALL attributes", name))
		}
	}
	return problems
}

// indexUse says what each index is for, in Check's errors: requests never
// read them, the operator's listings do, whatever Options.IndexInFlight
// says.
var indexUse = map[string]string{
	IndexIndeterminate:       "idemkit list reads indeterminate records of every tenant through it, whatever Options.IndexInFlight says; with IndexInFlight, stale ones too",
	IndexIndeterminateTenant: "idemkit list --tenant reads one tenant's indeterminate records through it, whatever Options.IndexInFlight says",
}

func attrTypes(defs []types.AttributeDefinition) map[string]types.ScalarAttributeType {
	m := make(map[string]types.ScalarAttributeType, len(defs))
	for _, d := range defs {
		m[aws.ToString(d.AttributeName)] = d.AttributeType
	}
	return m
}

// keyString renders a key schema as "[pk S HASH, lu N RANGE]".
func keyString(ks []types.KeySchemaElement, typ map[string]types.ScalarAttributeType) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		name := aws.ToString(k.AttributeName)
		parts[i] = fmt.Sprintf("%s %s %s", name, typ[name], k.KeyType)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// ttlAttr is the attribute the store's TTL must be on.
func (s *Store) ttlAttr() string { return s.lay.ttl }
