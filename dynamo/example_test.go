package dynamo_test

import (
	"context"
	"log"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// The store on an existing table, with the SDK's standard configuration.
func ExampleNew() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	store, err := dynamo.New(dynamodb.NewFromConfig(cfg), "idempotency", dynamo.Options{})
	if err != nil {
		log.Fatal(err)
	}
	guard, err := idemkit.New(idemkit.Config{Store: store})
	if err != nil {
		log.Fatal(err)
	}
	_ = guard // wrap the handlers with guard.Do
}

func ExampleNewRegional() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	client := func(region string) dynamo.Client {
		return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.Region = region })
	}
	home := map[string]string{"acme": "eu-west-1", "globex": "us-east-1"}
	store, err := dynamo.NewRegional(dynamo.Regions{
		Clients: map[string]dynamo.Client{"eu-west-1": client("eu-west-1"), "us-east-1": client("us-east-1")},
		Home:    func(tenant string) string { return home[tenant] },
		Local:   cfg.Region,
	}, "idempotency", dynamo.Options{})
	if err != nil {
		log.Fatal(err)
	}
	_ = store
}

// An operator fails acme over from eu-west-1 to us-east-1, from a
// configuration every process reads. Until the failover is Reconciled (or
// AcceptUnreplicated), acme's claims in us-east-1 run only UUIDv7 keys
// minted after At; other keys are answered from the records us-east-1
// holds, or refused with 503.
func ExampleFailover() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	client := func(region string) dynamo.Client {
		return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.Region = region })
	}
	home := map[string]string{"acme": "eu-west-1", "globex": "us-east-1"}
	// The operator records when acme was failed over, e.g. in the
	// function's configuration.
	at, err := time.Parse(time.RFC3339, os.Getenv("ACME_FAILED_OVER_AT"))
	if err != nil {
		log.Fatal(err)
	}
	failovers := map[string]dynamo.Failover{
		"acme": {Region: "us-east-1", At: at},
	}
	store, err := dynamo.NewRegional(dynamo.Regions{
		Clients: map[string]dynamo.Client{"eu-west-1": client("eu-west-1"), "us-east-1": client("us-east-1")},
		Home:    func(tenant string) string { return home[tenant] },
		Override: func(tenant string) (dynamo.Failover, bool) {
			f, ok := failovers[tenant]
			return f, ok
		},
		Local: cfg.Region,
	}, "idempotency", dynamo.Options{})
	if err != nil {
		log.Fatal(err)
	}
	_ = store
}

// Creating the table from code, e.g. for a test or a first local run; a
// deployment declares it in its template instead (TableDefinition says
// what it holds).
func ExampleCreateTable() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := dynamodb.NewFromConfig(cfg)
	if err := dynamo.CreateTable(ctx, client, "idempotency", dynamo.Options{}); err != nil {
		log.Fatal(err)
	}
	store, err := dynamo.New(client, "idempotency", dynamo.Options{})
	if err != nil {
		log.Fatal(err)
	}
	_ = store
}

// A store trading write units for CPU: S2 compresses a body in about a
// quarter of zstd's time and writes about half again as many bytes
// (docs/PERFORMANCE.md, Choosing a codec). Stores with either codec read
// each other's records.
func ExampleOptions_codec() {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	store, err := dynamo.New(dynamodb.NewFromConfig(cfg), "idempotency", dynamo.Options{Codec: dynamo.CodecS2})
	if err != nil {
		log.Fatal(err)
	}
	_ = store
}
