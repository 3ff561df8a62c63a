package dynalite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/logging"
)

// Region is the region clients made by NewClient and Client use.
const Region = "us-east-1"

// shared is the server of this test binary, started on first use by
// Endpoint and stopped by Run.
var shared struct {
	once     sync.Once
	endpoint string
	stop     func() error
	err      error
}

// Endpoint returns the URL of the DynamoDB-compatible server shared by the
// tests of this test binary.
//
// If IDEMKIT_DYNAMODB_ENDPOINT is set, that is returned as is. Otherwise the
// first call starts one dynalite server that Run (or Main) stops when the
// tests are done. Tables outlive tests on it: give each test its own with
// CreateTable.
//
// With IDEMKIT_SKIP_DYNAMODB=1 it skips t. When no server can be had, t
// fails with a one-line reason.
func Endpoint(t testing.TB) string {
	t.Helper()
	SkipIfDisabled(t)
	if ep := os.Getenv(EnvEndpoint); ep != "" {
		return ep
	}
	shared.once.Do(func() {
		shared.endpoint, shared.stop, shared.err = startBackend(context.Background())
	})
	if shared.err != nil {
		failOrSkip(t, shared.err)
	}
	return shared.endpoint
}

// NewServer starts a dynalite server private to t and stops it when t's
// cleanup runs: for tests that need more than one independent server (two
// regions, say). It fails or skips t as Endpoint does.
func NewServer(t testing.TB) *Server {
	t.Helper()
	return private(t, Start, nil)
}

// private starts a server with start for t alone and stops it when t's
// cleanup runs. An error that is skip skips t; any other fails or skips
// it as Endpoint does.
func private(t testing.TB, start func(context.Context) (*Server, error), skip error) *Server {
	t.Helper()
	SkipIfDisabled(t)
	s, err := start(context.Background())
	if skip != nil && errors.Is(err, skip) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		failOrSkip(t, err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return s
}

// SkipIfDisabled skips t when IDEMKIT_SKIP_DYNAMODB=1: for tests that need
// a server but start it otherwise than through Endpoint or NewServer.
func SkipIfDisabled(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvSkip) == "1" {
		t.Skipf("skipping: needs a DynamoDB-compatible server and %s=1", EnvSkip)
	}
}

// NewMoto starts a moto_server private to t (StartMoto) and stops it when
// t's cleanup runs: for tests that measure moto itself. moto_server is an
// optional extra, so without it t skips, saying how to install it.
func NewMoto(t testing.TB) *Server {
	t.Helper()
	return private(t, StartMoto, ErrUnavailable)
}

// NewDynamoDBLocal starts a DynamoDB Local private to t
// (StartDynamoDBLocal) and stops it when t's cleanup runs: for tests that
// measure DynamoDB Local itself. Without java t skips, saying so; without
// the jar (`make deps`) it fails.
func NewDynamoDBLocal(t testing.TB) *Server {
	t.Helper()
	return private(t, StartDynamoDBLocal, ErrNoJava)
}

func failOrSkip(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrUnavailable) {
		t.Fatalf("%v (or set %s=1 to skip DynamoDB tests)", err, EnvSkip)
	}
	t.Fatalf("%v", err)
}

// Scale returns d multiplied by IDEMKIT_TEST_TIMEOUT_SCALE (1 when unset or
// not a positive number): every timeout a test sets for work that only a
// loaded machine slows down goes through it, so that such a machine gives
// slow passes rather than timeouts.
func Scale(d time.Duration) time.Duration {
	f, err := strconv.ParseFloat(os.Getenv(EnvTimeoutScale), 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return d
	}
	return time.Duration(float64(d) * f)
}

// Main runs the tests and exits, stopping the shared server first even when
// tests fail. A package's whole TestMain can be:
//
//	func TestMain(m *testing.M) { dynalite.Main(m) }
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run runs the tests, stops the shared server if one was started, and
// returns the exit code, for a TestMain that does more than Main.
// Without it the server still exits with the test binary (it watches its
// stdin), just not as promptly.
func Run(m *testing.M) int {
	code := m.Run()
	if err := StopShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// StopShared stops the server started by Endpoint, if any. Run calls it.
func StopShared() error {
	if shared.stop == nil {
		return nil
	}
	stop := shared.stop
	shared.stop = nil
	return stop()
}

// NewClient returns a DynamoDB client for endpoint with static dummy
// credentials and region us-east-1. The SDK's log (warnings such as
// "failed to close HTTP response body") is discarded.
func NewClient(ctx context.Context, endpoint string) (*dynamodb.Client, error) {
	return NewClientIn(ctx, endpoint, Region)
}

// NewClientIn is NewClient for another region: on a server whose tables
// are region-scoped (RegionScopedTables) it sees that region's tables.
func NewClientIn(ctx context.Context, endpoint, region string) (*dynamodb.Client, error) {
	return newClient(ctx, endpoint, region, nil)
}

// NewClientVia is NewClient with its requests sent through rt (a fault
// injector, a call counter), with the SDK's standard retryer and retry
// quota.
func NewClientVia(ctx context.Context, endpoint string, rt http.RoundTripper) (*dynamodb.Client, error) {
	return newClient(ctx, endpoint, Region, rt)
}

func newClient(ctx context.Context, endpoint, region string, rt http.RoundTripper) (*dynamodb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithRegion(region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")),
		config.WithLogger(logging.Nop{}),
	)
	if err != nil {
		return nil, fmt.Errorf("dynalite: aws config: %w", err)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		if rt != nil {
			o.HTTPClient = &http.Client{Transport: rt}
		}
	}), nil
}

// Client returns a DynamoDB client for Endpoint(t).
func Client(t testing.TB) *dynamodb.Client {
	t.Helper()
	c, err := NewClient(context.Background(), Endpoint(t))
	if err != nil {
		t.Fatalf("%v", err)
	}
	return c
}

var (
	tableCounter atomic.Uint64
	// runToken tells apart the tables of test binaries sharing one server
	// (IDEMKIT_DYNAMODB_ENDPOINT), whose tests may have equal names.
	runToken = func() string {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}()
	invalidTableChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)
)

// TableName returns a table name unique to this call: t's name made valid
// for DynamoDB ([a-zA-Z0-9_.-], 3 to 255 characters), a token of this test
// binary and a counter.
func TableName(t testing.TB) string {
	return tableName("", t.Name())
}

func tableName(prefix, testName string) string {
	suffix := fmt.Sprintf("-%s-%d", runToken, tableCounter.Add(1))
	base := invalidTableChars.ReplaceAllString(testName, "_")
	if prefix != "" {
		base = invalidTableChars.ReplaceAllString(prefix, "_") + "-" + base
	}
	if max := 255 - len(suffix); len(base) > max {
		base = base[:max]
	}
	if base == "" {
		base = "table"
	}
	return base + suffix
}

// KeyTable is the template of a table keyed by the string attribute
// "pk", for CreateTable, whose name begins with prefix.
func KeyTable(prefix string) *dynamodb.CreateTableInput {
	in := &dynamodb.CreateTableInput{
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}
	if prefix != "" {
		in.TableName = aws.String(prefix)
	}
	return in
}

// CreateTable creates a table from template under a name from TableName
// (prefixed with template.TableName when that is set), waits until it and
// its indexes are ACTIVE, and deletes it when t's cleanup runs. template is
// not modified. It returns the table's name.
func CreateTable(t testing.TB, client *dynamodb.Client, template *dynamodb.CreateTableInput) string {
	t.Helper()
	in := *template
	name := tableName(aws.ToString(template.TableName), t.Name())
	in.TableName = aws.String(name)

	ctx, cancel := context.WithTimeout(context.Background(), Scale(2*time.Minute))
	defer cancel()
	// The name is this call's own: a table in use is one a retried
	// CreateTable made, after its first attempt's answer was lost.
	var inUse *types.ResourceInUseException
	if _, err := client.CreateTable(ctx, &in); err != nil && !errors.As(err, &inUse) {
		t.Fatalf("create table %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Scale(30*time.Second))
		defer cancel()
		_, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		var nf *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &nf) {
			t.Errorf("delete table %s: %v", name, err)
		}
	})
	if err := WaitActive(ctx, client, name); err != nil {
		t.Fatalf("%v", err)
	}
	return name
}

// WaitActive polls DescribeTable until the table and all its global
// secondary indexes are ACTIVE, or ctx ends. On dynalite as started here
// tables are ACTIVE at once; LocalStack and DynamoDB take a while.
func WaitActive(ctx context.Context, client *dynamodb.Client, table string) error {
	delay := 10 * time.Millisecond
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		var nf *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &nf) {
			return fmt.Errorf("wait for table %s: %w", table, err)
		}
		if err == nil && active(out.Table) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for table %s to be ACTIVE: %w", table, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}

func active(td *types.TableDescription) bool {
	if td == nil || td.TableStatus != types.TableStatusActive {
		return false
	}
	for _, gsi := range td.GlobalSecondaryIndexes {
		if gsi.IndexStatus != types.IndexStatusActive {
			return false
		}
	}
	return true
}
