package batch

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit/internal/recordid"
	"github.com/idemkit/idemkit/tenant"
)

// Record is a record type of the sources this package reads.
type Record interface {
	events.SQSMessage | events.KinesisEventRecord | events.DynamoDBEventRecord | events.KafkaRecord
}

// TenantFromSource returns the Tenant that names a record's tenant by its
// event source: the queue's, stream's or MSK cluster's ARN, or for a
// self-managed Kafka cluster, which has none, its bootstrap servers as the
// event lists them (their SHA-256, "kafka:sha256:…", when longer than
// 1024 bytes, the longest tenant a guard accepts). Record ids are unique per source, so records keyed
// by their id (the default Key) are then never taken for another
// source's. With a business key that must hold across sources, name the
// tenant otherwise. A record without a source fails with
// idemkit.ErrTenantMissing.
//
//	batch.SQS(g, batch.SQSConfig{Config: event.Config[events.SQSMessage]{
//		Tenant: batch.TenantFromSource[events.SQSMessage](),
//	}}, ship)
func TenantFromSource[R Record]() tenant.Func[R] {
	return func(ctx context.Context, r R) (string, error) {
		switch r := any(r).(type) {
		case events.SQSMessage:
			return r.EventSourceARN, nil
		case events.KinesisEventRecord:
			return r.EventSourceArn, nil
		case events.DynamoDBEventRecord:
			return r.EventSourceArn, nil
		case events.KafkaRecord:
			// Kafka passes the event's source in ctx.
			source, _ := ctx.Value(kafkaSourceKey{}).(string)
			return hashedOver(source, recordid.MaxTenantLen), nil
		}
		return "", nil
	}
}
