package batch

import (
	"context"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
)

// SQSConfig configures SQS.
type SQSConfig = Config[events.SQSMessage]

// SQS returns the handler of an SQS event source mapping that runs fn once
// per message key and reports the messages that failed by their message
// ids. A message of a FIFO queue keeps the batch's order. It is one whose
// event source ARN ends in ".fifo", or that has a MessageGroupId
// attribute. After the first failure, the rest of the batch (with
// cfg.ByGroup, the rest of that message group) is reported failed without
// running. SQS panics when g or fn is nil, cfg has no Tenant,
// cfg.Fingerprint cannot be used, or cfg.Operation is empty outside Lambda
// (see Config).
func SQS(g *idemkit.Guard, cfg SQSConfig, fn func(context.Context, events.SQSMessage) error) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	run := wrap(g, cfg, source[events.SQSMessage]{
		id:      func(m events.SQSMessage) string { return m.MessageId },
		key:     func(m events.SQSMessage) string { return m.MessageId },
		payload: func(m events.SQSMessage) ([]byte, error) { return []byte(m.Body), nil },
		group: func(m events.SQSMessage) (string, bool) {
			group, ok := m.Attributes["MessageGroupId"]
			return group, ok || strings.HasSuffix(m.EventSourceARN, ".fifo")
		},
	}, fn)
	return respond(run, func(e events.SQSEvent) []events.SQSMessage { return e.Records },
		func(f []events.SQSBatchItemFailure) events.SQSEventResponse {
			return events.SQSEventResponse{BatchItemFailures: f}
		},
		func(m events.SQSMessage) events.SQSBatchItemFailure {
			return events.SQSBatchItemFailure{ItemIdentifier: m.MessageId}
		})
}
