package orders

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/observe"
)

// The environment FromEnv reads. template.yaml sets them for the function.
const (
	// EnvStore selects the stores: "memory" (the default; one process
	// only, refused in a deployed Lambda) or "dynamodb".
	EnvStore = "IDEMKIT_STORE"
	// EnvTable names the idempotency table. Default: DefaultTable.
	EnvTable = "IDEMKIT_TABLE"
	// EnvOrdersTable names the orders table. Default: DefaultOrdersTable.
	EnvOrdersTable = "ORDERS_TABLE"
	// EnvCreateTable=1 creates both tables when missing (dynalite,
	// LocalStack, DynamoDB Local).
	EnvCreateTable = "IDEMKIT_CREATE_TABLE"
	// EnvReplayHours is how long responses are replayed. Default: 24.
	EnvReplayHours = "IDEMKIT_REPLAY_HOURS"
	// EnvRetentionHours is how long records are kept (the TTL). Default: 168.
	EnvRetentionHours = "IDEMKIT_RETENTION_HOURS"
	// EnvHomeRegion is the region whose tables every call goes to (with
	// global tables, claims must all go to one region). Default: the SDK's
	// region (AWS_REGION).
	EnvHomeRegion = "IDEMKIT_HOME_REGION"
)

// Table defaults.
const (
	DefaultTable       = "idemkit-records"
	DefaultOrdersTable = "idemkit-orders"
)

// FromEnv returns the Options both entry points use, read from getenv
// (os.Getenv): the stores (memory, or DynamoDB with the SDK's standard
// configuration: AWS_REGION, AWS_ENDPOINT_URL_DYNAMODB, the credential
// chain), the policy, and an observe.Logger observer writing to logger.
// It also returns a description of the store for the startup banner.
func FromEnv(ctx context.Context, getenv func(string) string, logger *slog.Logger) (Options, string, error) {
	o := Options{Logger: logger, Observer: observe.Logger{Logger: logger}}
	var err error
	if o.Policy, err = policyFromEnv(getenv); err != nil {
		return Options{}, "", err
	}
	switch kind := getenv(EnvStore); kind {
	case "", "memory":
		if getenv("AWS_LAMBDA_FUNCTION_NAME") != "" && getenv("AWS_SAM_LOCAL") != "true" {
			return Options{}, "", fmt.Errorf("orders: %s=memory in a deployed Lambda would protect one sandbox only; set %s=dynamodb", EnvStore, EnvStore)
		}
		o.Store, o.Repo = memstore.New(), &MemRepo{}
		return o, "memory (this process only)", nil
	case "dynamodb":
	default:
		return Options{}, "", fmt.Errorf("orders: %s=%q: want memory or dynamodb", EnvStore, kind)
	}
	table, orders := or(getenv(EnvTable), DefaultTable), or(getenv(EnvOrdersTable), DefaultOrdersTable)
	var opts []func(*config.LoadOptions) error
	if home := getenv(EnvHomeRegion); home != "" {
		opts = append(opts, config.WithRegion(home))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return Options{}, "", fmt.Errorf("orders: AWS configuration: %w", err)
	}
	client := dynamodb.NewFromConfig(cfg)
	if getenv(EnvCreateTable) == "1" {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := createTables(cctx, client, table, orders); err != nil {
			return Options{}, "", err
		}
	}
	// IndexInFlight: an execution that crashed is listed by
	// idemkit list --state stale (one index write more per claim).
	store, err := dynamo.New(client, table, dynamo.Options{IndexInFlight: true})
	if err != nil {
		return Options{}, "", err
	}
	if err := checkTable(ctx, store, logger); err != nil {
		return Options{}, "", err
	}
	o.Store = store
	// The orders client has no client-side retry quota: DynamoRepo bounds
	// its retries itself (see ClientOptions).
	o.Repo = &DynamoRepo{Client: dynamodb.NewFromConfig(cfg, ClientOptions), Table: orders}
	if q := getenv(EnvShippingQueue); q != "" {
		o.Outbox = &SQSOutbox{Client: sqs.NewFromConfig(cfg), QueueURL: q}
	}
	desc := fmt.Sprintf("dynamodb (tables %s and %s, region %s", table, orders, cfg.Region)
	if ep := aws.ToString(client.Options().BaseEndpoint); ep != "" {
		desc += ", endpoint " + ep
	}
	return o, desc + ")", nil
}

// checkTable stops the function at its start when the records table is
// missing or laid out otherwise than dynamo.TableDefinition (Store.Check),
// and logs TTL that is off (Store.CheckTTL): it only keeps expired records
// (reads treat them as absent), and a server without the TTL API, such as
// dynalite, has it off on every table.
func checkTable(ctx context.Context, store *dynamo.Store, logger *slog.Logger) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := store.Check(cctx); err != nil {
		return fmt.Errorf("orders: %w", err)
	}
	if err := store.CheckTTL(cctx); err != nil && logger != nil {
		logger.Warn("orders: the records table keeps expired records", "error", err.Error())
	}
	return nil
}

func createTables(ctx context.Context, c *dynamodb.Client, table, orders string) error {
	_, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	var nf *types.ResourceNotFoundException
	switch {
	case err == nil:
	case errors.As(err, &nf):
		if err := dynamo.CreateTable(ctx, c, table, dynamo.Options{}); err != nil {
			return err
		}
	default:
		return fmt.Errorf("orders: describe table %s: %w", table, err)
	}
	return CreateOrdersTable(ctx, c, orders)
}

// maxHours is the most hours a time.Duration holds, whole hours only.
const maxHours = float64(math.MaxInt64 / int64(time.Hour))

func policyFromEnv(getenv func(string) string) (idemkit.Policy, error) {
	var p idemkit.Policy
	for _, f := range []struct {
		env string
		dst *time.Duration
	}{{EnvReplayHours, &p.ReplayWindow}, {EnvRetentionHours, &p.RecordRetention}} {
		v := getenv(f.env)
		if v == "" {
			continue
		}
		// NaN, infinities and overflows are refused here: converting them
		// to a Duration is implementation-defined (it differs between
		// amd64 and arm64), and a result of 0 or less would silently
		// become the default.
		h, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(h) || h <= 0 || h > maxHours {
			return p, fmt.Errorf("orders: %s=%q: want a positive number of hours, at most %d", f.env, v, int64(maxHours))
		}
		d := time.Duration(h * float64(time.Hour))
		if d <= 0 {
			return p, fmt.Errorf("orders: %s=%q: want a positive number of hours, at most %d", f.env, v, int64(maxHours))
		}
		*f.dst = d
	}
	if p.ReplayWindow > 0 && p.RecordRetention > 0 && p.RecordRetention < p.ReplayWindow {
		return p, fmt.Errorf("orders: %s must be at least %s", EnvRetentionHours, EnvReplayHours)
	}
	return p, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
