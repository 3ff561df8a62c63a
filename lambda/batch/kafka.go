package batch

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/idemkey"
	"github.com/idemkit/idemkit/lambda/event"
)

// KafkaConfig configures Kafka. ByGroup does not apply: a Kafka batch
// always stops only the failed record's topic-partition, the unit of
// Kafka's order.
type KafkaConfig = Config[events.KafkaRecord]

// KafkaEventResponse is the partial batch response of an Amazon MSK or
// self-managed Apache Kafka event source mapping. aws-lambda-go has no
// type for it: unlike the other sources, a Kafka record is named by its
// topic-partition and offset, not by a string.
type KafkaEventResponse struct {
	BatchItemFailures []KafkaBatchItemFailure `json:"batchItemFailures"`
}

// KafkaBatchItemFailure is one entry of KafkaEventResponse.
type KafkaBatchItemFailure struct {
	ItemIdentifier KafkaItemIdentifier `json:"itemIdentifier"`
}

// KafkaItemIdentifier names a record of a Kafka batch: its topic-partition
// as the event's records map names it ("orders-3"), and its offset.
type KafkaItemIdentifier struct {
	Partition string `json:"partition"`
	Offset    int64  `json:"offset"`
}

// kafkaItem is a Kafka record with what the event says of it.
type kafkaItem struct {
	rec       events.KafkaRecord
	partition string // the key of the event's records map: "topic-partition"
	source    string // the event's source ARN, or else its bootstrap servers
}

// Kafka returns the handler of an Amazon MSK or self-managed Apache Kafka
// event source mapping that runs fn once per record key. The records run
// one topic-partition after another (in the order of their names), each
// partition's in its order. After a failure, the later records of that
// topic-partition are reported failed without running; the other
// partitions go on. The response names, for each topic-partition with a
// failure, the offset of its first failed record: Lambda reads the
// partition again from there, so that its records run in order.
//
// Lambda reads the response only when the mapping lists
// ReportBatchItemFailures in its FunctionResponseTypes, which a Kafka
// mapping offers in provisioned mode. Without it the failed records are
// taken as done.
//
// Zero fields of cfg take these defaults: the key is
// "topic-partition@offset" (its SHA-256, "kafka:sha256:…", when longer
// than idemkey.DefaultMaxLen); the payload is the record's value
// decoded from base64 (neither its key nor its headers). Tenant is
// required; [TenantFromSource] names the event source ARN (the MSK
// cluster), or for a self-managed cluster, which has none, the bootstrap
// servers as the event lists them (their SHA-256 when longer than
// 1024 bytes, the longest tenant a guard accepts). Kafka panics when g or fn is nil, cfg has no
// Tenant, cfg.Fingerprint cannot be used, or cfg.Operation is empty
// outside Lambda.
func Kafka(g *idemkit.Guard, cfg KafkaConfig, fn func(context.Context, events.KafkaRecord) error) func(context.Context, events.KafkaEvent) (KafkaEventResponse, error) {
	if fn == nil {
		panic("batch: nil function")
	}
	icfg := Config[kafkaItem]{
		Config: event.Config[kafkaItem]{MaxKeyLen: cfg.MaxKeyLen, Operation: cfg.Operation,
			Fingerprint: cfg.Fingerprint, CheckKeyAge: cfg.CheckKeyAge},
		Margin: cfg.Margin, OnFailure: cfg.OnFailure, Clock: cfg.Clock,
	}
	if key := cfg.Key; key != nil {
		icfg.Key = func(it kafkaItem) (string, error) { return key(it.rec) }
	}
	if tenant := cfg.Tenant; tenant != nil {
		icfg.Tenant = func(ctx context.Context, it kafkaItem) (string, error) {
			return tenant(context.WithValue(ctx, kafkaSourceKey{}, it.source), it.rec)
		}
	}
	if payload := cfg.Payload; payload != nil {
		icfg.Payload = func(it kafkaItem) ([]byte, error) { return payload(it.rec) }
	}
	run := wrap(g, icfg, source[kafkaItem]{
		id: func(it kafkaItem) string {
			if it.partition == "" {
				return ""
			}
			return it.partition + "@" + strconv.FormatInt(it.rec.Offset, 10)
		},
		key: func(it kafkaItem) string {
			k := it.rec.Topic + "-" + strconv.FormatInt(it.rec.Partition, 10) + "@" + strconv.FormatInt(it.rec.Offset, 10)
			return hashedOver(k, idemkey.DefaultMaxLen)
		},
		payload:  func(it kafkaItem) ([]byte, error) { return base64.StdEncoding.DecodeString(it.rec.Value) },
		group:    func(it kafkaItem) (string, bool) { return it.partition, true },
		perGroup: true,
		typeName: "events.KafkaRecord",
	}, func(ctx context.Context, it kafkaItem) error { return fn(ctx, it.rec) })
	return func(ctx context.Context, e events.KafkaEvent) (KafkaEventResponse, error) {
		items := kafkaItems(e)
		failed, err := run(ctx, items)
		if err != nil {
			return KafkaEventResponse{}, err
		}
		resp := KafkaEventResponse{BatchItemFailures: []KafkaBatchItemFailure{}}
		first := map[string]int{} // topic-partition -> its entry in resp
		for _, i := range failed {
			id := KafkaItemIdentifier{Partition: items[i].partition, Offset: items[i].rec.Offset}
			j, ok := first[id.Partition]
			switch {
			case !ok:
				first[id.Partition] = len(resp.BatchItemFailures)
				resp.BatchItemFailures = append(resp.BatchItemFailures, KafkaBatchItemFailure{ItemIdentifier: id})
			case id.Offset < resp.BatchItemFailures[j].ItemIdentifier.Offset:
				resp.BatchItemFailures[j].ItemIdentifier = id
			}
		}
		return resp, nil
	}
}

// kafkaSourceKey is the context key under which a Kafka record's Tenant
// finds its event's source (the ARN, or else the bootstrap servers), which
// an events.KafkaRecord does not hold.
type kafkaSourceKey struct{}

// kafkaItems returns the records of e, one topic-partition after another
// in the order of their names.
func kafkaItems(e events.KafkaEvent) []kafkaItem {
	source := e.EventSourceARN
	if source == "" {
		source = e.BootstrapServers
	}
	var items []kafkaItem
	for _, p := range slices.Sorted(maps.Keys(e.Records)) {
		for _, r := range e.Records[p] {
			items = append(items, kafkaItem{rec: r, partition: p, source: source})
		}
	}
	return items
}

// hashedOver returns s, or "kafka:sha256:" and its SHA-256 when s is
// longer than limit bytes.
func hashedOver(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "kafka:sha256:" + hex.EncodeToString(sum[:])
}
