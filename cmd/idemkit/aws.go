package main

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sts"

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
	opts.KeyAttr, opts.SortKeyAttr, opts.SortKeyValue, opts.KeyPrefix = o.KeyAttr, o.SortKeyAttr, o.SortKeyValue, o.KeyPrefix
	s, err := dynamo.NewRegional(dynamo.Regions{
		Clients: map[string]dynamo.Client{region: client},
		Home:    func(string) string { return region },
		Local:   region,
	}, o.Table, opts)
	if errors.Is(err, idemkit.ErrInvalidConfig) {
		return nil, usagef("table layout (--key-attr, --sort-key-attr, --sort-key-value, --key-prefix): %v", err)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
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
