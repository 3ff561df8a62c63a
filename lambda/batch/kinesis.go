package batch

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
)

// KinesisConfig configures Kinesis. ByGroup does not apply: a Kinesis
// batch comes from one shard, in order.
type KinesisConfig = Config[events.KinesisEventRecord]

// Kinesis returns the handler of a Kinesis event source mapping that runs
// fn once per record key and reports the records that failed by their
// sequence numbers. After the first failure, the rest of the batch is
// reported failed without running. The stream is then read again from the
// lowest sequence number reported, in order. Kinesis panics when g or fn
// is nil, cfg has no Tenant, cfg.Fingerprint cannot be used, or
// cfg.Operation is empty outside Lambda (see Config).
func Kinesis(g *idemkit.Guard, cfg KinesisConfig, fn func(context.Context, events.KinesisEventRecord) error) func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error) {
	run := wrap(g, cfg, source[events.KinesisEventRecord]{
		id:      func(r events.KinesisEventRecord) string { return r.Kinesis.SequenceNumber },
		key:     func(r events.KinesisEventRecord) string { return r.EventID },
		payload: func(r events.KinesisEventRecord) ([]byte, error) { return r.Kinesis.Data, nil },
		group:   func(events.KinesisEventRecord) (string, bool) { return "", true },
	}, fn)
	return respond(run, func(e events.KinesisEvent) []events.KinesisEventRecord { return e.Records },
		func(f []events.KinesisBatchItemFailure) events.KinesisEventResponse {
			return events.KinesisEventResponse{BatchItemFailures: f}
		},
		func(r events.KinesisEventRecord) events.KinesisBatchItemFailure {
			return events.KinesisBatchItemFailure{ItemIdentifier: r.Kinesis.SequenceNumber}
		})
}
