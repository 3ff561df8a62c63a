package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// storeOptions are the DynamoDB store's options for the commands: more
// patient than a Lambda's, since a person waits and --timeout bounds all.
// IndexInFlight changes only what a claim writes (the commands never
// claim); it lets list --state stale read the index.
var storeOptions = dynamo.Options{
	CallTimeout:   10 * time.Second,
	MaxAttempts:   5,
	MaxBackoff:    time.Second,
	IndexInFlight: true,
}

// awsConfig loads the SDK's standard configuration, with o's profile.
func awsConfig(ctx context.Context, o StoreOptions) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if o.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(o.Profile))
	}
	return config.LoadDefaultConfig(ctx, opts...)
}

// openDynamo opens the DynamoDB store pinned to one region: o.HomeRegion,
// else the configured region. Every call, listing included, goes there.
func openDynamo(ctx context.Context, o StoreOptions) (idemkit.OperatorStore, error) {
	cfg, err := awsConfig(ctx, o)
	if err != nil {
		return nil, usagef("AWS configuration: %v", err)
	}
	region := o.HomeRegion
	if region == "" {
		region = cfg.Region
	}
	if region == "" {
		return nil, usagef("no region: pass --home-region, or set AWS_REGION or a profile region")
	}
	// Credentials first: the SDK's error for missing ones ("no EC2 IMDS
	// role found") does not say what to set.
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return nil, usagef("no AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (any values for a local server such as dynalite or DynamoDB Local): %v", err)
	}
	client := dynamodb.NewFromConfig(cfg, func(opt *dynamodb.Options) { opt.Region = region })
	opts := storeOptions
	opts.KeyAttr, opts.SortKeyAttr, opts.SortKeyValue, opts.KeyPrefix, opts.TTLAttr = o.KeyAttr, o.SortKeyAttr, o.SortKeyValue, o.KeyPrefix, o.TTLAttr
	s, err := dynamo.NewRegional(dynamo.Regions{
		Clients: map[string]dynamo.Client{region: client},
		Home:    func(string) string { return region },
		Local:   region,
	}, o.Table, opts)
	if errors.Is(err, idemkit.ErrInvalidConfig) {
		return nil, usagef("table layout (--key-attr, --sort-key-attr, --sort-key-value, --key-prefix, --ttl-attr): %v", err)
	}
	if err != nil {
		return nil, err
	}
	endpoint := "AWS's endpoint for " + region
	if ep := aws.ToString(client.Options().BaseEndpoint); ep != "" {
		endpoint = ep
	}
	return &locatedStore{Store: s, where: fmt.Sprintf("region %s at endpoint %s", region, endpoint)}, nil
}

// locatedStore is the DynamoDB store with the region and endpoint it
// reads, for errors to name them. Embedding keeps the store's optional
// interfaces (idemkit.StaleLister and others).
type locatedStore struct {
	*dynamo.Store
	where string // "region R at endpoint E"
}

func (s *locatedStore) location() string { return s.where }

// tableChecker is a store that can say how its table differs from what
// it needs (*dynamo.Store).
type tableChecker interface {
	Check(ctx context.Context) error
}

// explainStoreError returns err as an operator can act on it, for the
// store s of table: a table not found names the region and endpoint asked
// (a wrong --home-region or endpoint looks the same as a missing table),
// without the words "nothing stored" a read would not mean.
func explainStoreError(s idemkit.OperatorStore, table string, err error) error {
	if !errors.Is(err, dynamo.ErrTableNotFound) {
		return err
	}
	where := "the store's region"
	if l, ok := s.(interface{ location() string }); ok {
		where = l.location()
	}
	return &explained{err: err, msg: fmt.Sprintf("table %s not found in %s: check --table, the region (--home-region, else AWS_REGION or the profile's) and the endpoint (AWS_ENDPOINT_URL_DYNAMODB)%s",
		table, where, apiCause(err))}
}

// explainListError returns a listing's error err as an operator can act
// on it: when the table lacks what the listing reads (an index), it says
// which, from the store's own check of its table.
//
// A listing on an index the table lacks is refused by DynamoDB as invalid;
// some servers answer that the resource was not found, as for a missing
// table: the check tells the two apart.
func explainListError(ctx context.Context, s idemkit.OperatorStore, table string, err error) error {
	notFound := errors.Is(err, dynamo.ErrTableNotFound)
	if err == nil || !notFound && errors.Is(err, idemkit.ErrStoreUnavailable) || ctx.Err() != nil {
		return explainStoreError(s, table, err)
	}
	tc, ok := s.(tableChecker)
	if !ok {
		return err
	}
	var mm *dynamo.TableMismatchError
	if !errors.As(tc.Check(ctx), &mm) || len(mm.Problems) == 0 {
		if notFound {
			return explainStoreError(s, table, err)
		}
		return err
	}
	where := table
	if l, ok := s.(interface{ location() string }); ok {
		where += " in " + l.location()
	}
	// Not the store's error, whose kind differs by server (invalid, or not
	// found): the table is unfit whatever answered, an error to fix, not
	// an outage to wait out.
	return &explained{err: mm, msg: fmt.Sprintf("table %s cannot be listed: %s; create the table as dynamo.TableDefinition lays it out (docs/DEPLOY.md), or for a table laid out by the application's dynamo.Options pass the same (--key-attr, --sort-key-attr, --sort-key-value, --key-prefix, --ttl-attr)%s",
		where, strings.Join(mm.Problems, "; "), apiCause(err))}
}

// explained is an error said in the operator's terms, wrapping the
// store's (for the exit code).
type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }

// apiCause returns ": " and the DynamoDB error code and message under
// err, or "".
func apiCause(err error) string {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return ""
	}
	return fmt.Sprintf(" (DynamoDB: %s: %s)", ae.ErrorCode(), ae.ErrorMessage())
}

// callerARN returns the ARN of the caller's AWS identity.
func callerARN(ctx context.Context, o StoreOptions) (string, error) {
	cfg, err := awsConfig(ctx, o)
	if err != nil {
		return "", err
	}
	if o.HomeRegion != "" {
		cfg.Region = o.HomeRegion
	}
	out, err := sts.NewFromConfig(cfg, func(opt *sts.Options) { opt.RetryMaxAttempts = 1 }).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", err
	}
	if aws.ToString(out.Arn) == "" {
		return "", errors.New("GetCallerIdentity returned no ARN")
	}
	return aws.ToString(out.Arn), nil
}
