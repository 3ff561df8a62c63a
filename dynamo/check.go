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

// TableMismatchError says how the store's table, in one region, differs
// from TableDefinition. It is ErrTableMismatch under errors.Is.
type TableMismatchError struct {
	Table  string
	Region string // "" for a store made by New
	// Problems are the differences that break the store or the operator's
	// listings: the key schema, an index that is missing or keyed
	// otherwise, TTL on another attribute.
	Problems []string
	// TTLDisabled: TTL is not enabled on the table. Records are then kept
	// for good (reads treat them as absent once expired: only storage is
	// lost). A server without the TTL API (dynalite) has TTL disabled on
	// every table.
	TTLDisabled bool
}

func (e *TableMismatchError) Error() string {
	where := e.Table
	if e.Region != "" {
		where += " in " + e.Region
	}
	problems := e.Problems
	if e.TTLDisabled {
		problems = append(slices.Clone(problems), "TTL is not enabled, want it on "+attrExpiresAt+" (expired records would never be deleted)")
	}
	return fmt.Sprintf("dynamo: table %s does not match dynamo.TableDefinition: %s", where, strings.Join(problems, "; "))
}

// Is reports whether target is ErrTableMismatch.
func (e *TableMismatchError) Is(target error) bool { return target == ErrTableMismatch }

// Check reports whether the store's table is one it can use, in every
// region of the store: nil when it exists and its key schema, indexes and
// TTL attribute are those of TableDefinitionFor with the store's Options
// (and TimeToLiveSpecification on TTLAttr). A table that does not exist is an error wrapping
// ErrTableNotFound, one laid out otherwise a *TableMismatchError; both
// name the table. Call it once at startup, so that a wrong table name or
// layout stops the function at its start instead of answering every
// request 503. It makes two reads per region, DescribeTable and
// DescribeTimeToLive (the role needs both actions on the table), through
// clients that implement TableDescriber, as *dynamodb.Client does. A
// server without DescribeTimeToLive is not asked about TTL.
func (s *Store) Check(ctx context.Context) error {
	if c, ok := s.regions[""]; ok && len(s.regions) == 1 {
		return s.checkIn(ctx, "", c)
	}
	var errs []error
	for _, region := range slices.Sorted(maps.Keys(s.regions)) {
		errs = append(errs, s.checkIn(ctx, region, s.regions[region]))
	}
	return errors.Join(errs...)
}

func (s *Store) checkIn(ctx context.Context, region string, c Client) error {
	where := s.table
	if region != "" {
		where += " in " + region
	}
	d, ok := c.(TableDescriber)
	if !ok {
		return fmt.Errorf("dynamo: check table %s: the client (%T) cannot describe tables: it needs DescribeTable and DescribeTimeToLive", where, c)
	}
	out, err := d.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: s.tableName})
	if err != nil {
		return checkFailed(where, "DescribeTable", err)
	}
	mm := &TableMismatchError{Table: s.table, Region: region, Problems: layoutProblems(TableDefinitionFor(s.table, s.opts), out.Table)}
	ttl, err := d.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: s.tableName})
	var ae smithy.APIError
	switch {
	case errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException":
	case err != nil:
		return checkFailed(where, "DescribeTimeToLive", err)
	case ttl.TimeToLiveDescription == nil:
		mm.TTLDisabled = true
	default:
		td := ttl.TimeToLiveDescription
		switch st := td.TimeToLiveStatus; {
		case st != types.TimeToLiveStatusEnabled && st != types.TimeToLiveStatusEnabling:
			mm.TTLDisabled = true
		case aws.ToString(td.AttributeName) != attrExpiresAt:
			mm.Problems = append(mm.Problems, fmt.Sprintf("TTL is on %s, want %s", aws.ToString(td.AttributeName), attrExpiresAt))
		}
	}
	if len(mm.Problems) > 0 || mm.TTLDisabled {
		return mm
	}
	return nil
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
			problems = append(problems, fmt.Sprintf("no index %s, want one keyed %s (idemkit list reads it)", name, w))
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
