package batch_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/internal/testing/testkit/testguard"
	"github.com/idemkit/idemkit/lambda/batch"
	"github.com/idemkit/idemkit/lambda/event"
)

// The sources FuzzBatch feeds.
const (
	fuzzSQS = iota
	fuzzFIFO
	fuzzFIFOByGroup
	fuzzKinesis
	fuzzKafka
	fuzzSources
)

// fuzzRecord is a record of a fuzzed batch, whatever its source.
type fuzzRecord struct {
	id    int // small, so that ids repeat
	group int
	body  []byte
}

// fuzzInput is a batch decoded from the fuzzer's bytes: a source, flags,
// then records of (id, group, body length, body).
type fuzzInput struct {
	source      int
	businessKey bool // the key is the "k" member of a JSON body
	twoConsumer bool // a second consumer reads the same batches, sharing the store
	records     []fuzzRecord
}

func decodeFuzz(data []byte) fuzzInput {
	var in fuzzInput
	if len(data) < 2 {
		return in
	}
	in.source = int(data[0]) % fuzzSources
	in.businessKey = data[1]&1 != 0
	in.twoConsumer = data[1]&2 != 0
	data = data[2:]
	for len(data) >= 3 && len(in.records) < 16 {
		n := min(int(data[2])%32, len(data)-3)
		in.records = append(in.records, fuzzRecord{id: int(data[0]) % 6, group: int(data[1]) % 3, body: data[3 : 3+n]})
		data = data[3+n:]
	}
	return in
}

// fuzzOutcome is what one record of a delivery came to, as its source's
// response and OnFailure tell.
type fuzzOutcome struct {
	failed   bool    // reported in the response: delivered again
	failures []error // the reasons OnFailure was given for it
}

// fuzzConsumer runs the fuzzed batches as one function: the record's
// function, by the body, fails ('F'), fails its first run ('f'), or ends
// with an unknown outcome ('u'); it succeeds otherwise, and each success
// is an effect of its scope. Key (business keys) panics on '#', Payload
// on '!'.
type fuzzConsumer struct {
	op      string
	mu      sync.Mutex
	runs    map[string]int // scope (operation and key) -> runs
	effects map[string]int // scope -> runs that succeeded
	unknown map[string]int // scope -> runs whose outcome is unknown
	got     failures
	deliver func(t *testing.T, recs []fuzzRecord) []fuzzOutcome
}

func (c *fuzzConsumer) run(ctx context.Context, body []byte) error {
	s, ok := idemkit.ScopeOf(ctx)
	if !ok {
		return errors.New("not run by the guard")
	}
	k := s.Operation + "\x00" + s.Key
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs[k]++
	switch {
	case bytes.IndexByte(body, 'F') >= 0:
		return errCarrier
	case bytes.IndexByte(body, 'f') >= 0 && c.runs[k] == 1:
		return errCarrier
	case bytes.IndexByte(body, 'u') >= 0:
		c.unknown[k]++
		return fmt.Errorf("printer timed out: %w", idemkit.ErrOutcomeUnknown)
	}
	c.effects[k]++
	return nil
}

// businessKey is the Key of business keys: the "k" string member of a
// JSON body.
func businessKey(body []byte) (string, error) {
	if bytes.IndexByte(body, '#') >= 0 {
		panic("key decoder: " + string(body))
	}
	var v struct {
		K string `json:"k"`
	}
	err := json.Unmarshal(body, &v)
	return v.K, err
}

func fuzzPayload(body []byte) ([]byte, error) {
	if bytes.IndexByte(body, '!') >= 0 {
		panic("payload decoder")
	}
	return body, nil
}

// newFuzzConsumer makes the consumer op (empty: the function's name) of
// in's source on g.
func newFuzzConsumer(g *idemkit.Guard, in fuzzInput, op string) *fuzzConsumer {
	c := &fuzzConsumer{op: op, runs: map[string]int{}, effects: map[string]int{}, unknown: map[string]int{}}
	var key func([]byte) (string, error) // nil: the source's default key
	if in.businessKey {
		key = businessKey
	}
	payload := fuzzPayload
	switch in.source {
	case fuzzSQS, fuzzFIFO, fuzzFIFOByGroup:
		sc := batch.SQSConfig{Config: event.Config[events.SQSMessage]{Operation: op, Tenant: batch.TenantFromSource[events.SQSMessage](),
			Payload: func(m events.SQSMessage) ([]byte, error) { return payload([]byte(m.Body)) }},
			ByGroup: in.source == fuzzFIFOByGroup, OnFailure: c.got.add}
		if key != nil {
			sc.Key = func(m events.SQSMessage) (string, error) { return key([]byte(m.Body)) }
		}
		h := batch.SQS(g, sc, func(ctx context.Context, m events.SQSMessage) error { return c.run(ctx, []byte(m.Body)) })
		c.deliver = func(t *testing.T, recs []fuzzRecord) []fuzzOutcome {
			var msgs []events.SQSMessage
			for _, r := range recs {
				m := events.SQSMessage{MessageId: fmt.Sprint("m", r.id), Body: string(r.body), EventSource: "aws:sqs",
					EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:shipments", Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
				if in.source != fuzzSQS {
					m.EventSourceARN += ".fifo"
					m.Attributes["MessageGroupId"] = fmt.Sprint("g", r.group)
				}
				msgs = append(msgs, m)
			}
			ids := sqsIDs(testkit.Call(t, h, events.SQSEvent{Records: msgs}))
			return c.outcomes(t, len(recs), ids, func(i int) string { return msgs[i].MessageId })
		}
	case fuzzKinesis:
		kc := batch.KinesisConfig{Config: event.Config[events.KinesisEventRecord]{Operation: op, Tenant: batch.TenantFromSource[events.KinesisEventRecord](),
			Payload: func(r events.KinesisEventRecord) ([]byte, error) { return payload(r.Kinesis.Data) }}, OnFailure: c.got.add}
		if key != nil {
			kc.Key = func(r events.KinesisEventRecord) (string, error) { return key(r.Kinesis.Data) }
		}
		h := batch.Kinesis(g, kc, func(ctx context.Context, r events.KinesisEventRecord) error { return c.run(ctx, r.Kinesis.Data) })
		c.deliver = func(t *testing.T, recs []fuzzRecord) []fuzzOutcome {
			var rs []events.KinesisEventRecord
			for _, r := range recs {
				seq := fmt.Sprint(4959000 + r.id)
				rs = append(rs, events.KinesisEventRecord{EventID: "shardId-000000000000:" + seq, EventSourceArn: "arn:aws:kinesis:us-east-1:123456789012:stream/shipments",
					Kinesis: events.KinesisRecord{SequenceNumber: seq, Data: r.body}})
			}
			ids := kinesisIDs(testkit.Call(t, h, events.KinesisEvent{Records: rs}))
			return c.outcomes(t, len(recs), ids, func(i int) string { return rs[i].Kinesis.SequenceNumber })
		}
	case fuzzKafka:
		kc := batch.KafkaConfig{Config: event.Config[events.KafkaRecord]{Operation: op, Tenant: batch.TenantFromSource[events.KafkaRecord](),
			Payload: func(r events.KafkaRecord) ([]byte, error) {
				b, err := base64.StdEncoding.DecodeString(r.Value)
				if err != nil {
					return nil, err
				}
				return payload(b)
			}}, OnFailure: c.got.add}
		if key != nil {
			kc.Key = func(r events.KafkaRecord) (string, error) {
				b, _ := base64.StdEncoding.DecodeString(r.Value)
				return key(b)
			}
		}
		h := batch.Kafka(g, kc, func(ctx context.Context, r events.KafkaRecord) error {
			b, _ := base64.StdEncoding.DecodeString(r.Value)
			return c.run(ctx, b)
		})
		c.deliver = func(t *testing.T, recs []fuzzRecord) []fuzzOutcome {
			e := events.KafkaEvent{EventSource: "aws:kafka", EventSourceARN: "arn:aws:kafka:us-east-1:123456789012:cluster/shipments/x",
				Records: map[string][]events.KafkaRecord{}}
			// The handler runs partitions in the order of their names:
			// the records, as run, are the partitions' in that order.
			var ordered []fuzzRecord
			for p := range 3 {
				for _, r := range recs {
					if r.group == p {
						ordered = append(ordered, r)
						name := fmt.Sprint("t-", p)
						e.Records[name] = append(e.Records[name], events.KafkaRecord{Topic: "t", Partition: int64(p), Offset: int64(r.id),
							Value: base64.StdEncoding.EncodeToString(r.body)})
					}
				}
			}
			copy(recs, ordered) // the caller reads outcomes in this order
			resp := testkit.Call(t, h, e)
			from := map[int]int64{} // partition -> the offset it is read again from
			for _, f := range resp.BatchItemFailures {
				var p int
				if _, err := fmt.Sscanf(f.ItemIdentifier.Partition, "t-%d", &p); err != nil {
					t.Fatalf("reported partition %q", f.ItemIdentifier.Partition)
				}
				if _, dup := from[p]; dup {
					t.Fatalf("partition %q reported twice: %v", f.ItemIdentifier.Partition, resp.BatchItemFailures)
				}
				from[p] = f.ItemIdentifier.Offset
			}
			out := make([]fuzzOutcome, len(recs))
			for i, r := range recs {
				o, ok := from[r.group]
				out[i].failed = ok && int64(r.id) >= o
			}
			reportedAt := map[int]bool{}
			for _, f := range c.got.take() {
				out[f.Index].failures = append(out[f.Index].failures, f.Err)
				if want := fmt.Sprintf("t-%d@%d", recs[f.Index].group, recs[f.Index].id); f.ID != want {
					t.Fatalf("failure %d named %s, want %s", f.Index, f.ID, want)
				}
				if from[recs[f.Index].group] == int64(recs[f.Index].id) {
					reportedAt[recs[f.Index].group] = true
				}
			}
			for p := range from {
				if !reportedAt[p] {
					t.Fatalf("partition t-%d reported at offset %d, which no failure has", p, from[p])
				}
			}
			return out
		}
	}
	return c
}

// outcomes reads the outcome of each of n records from the identifiers
// the response reported and OnFailure's failures: each identifier is
// reported once, and only for a record that failed.
func (c *fuzzConsumer) outcomes(t *testing.T, n int, reported []string, id func(int) string) []fuzzOutcome {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range reported {
		if seen[r] {
			t.Fatalf("%s reported twice: %q", r, reported)
		}
		seen[r] = true
	}
	out := make([]fuzzOutcome, n)
	failedIDs := map[string]bool{}
	for _, f := range c.got.take() {
		if f.Index < 0 || f.Index >= n || f.ID != id(f.Index) {
			t.Fatalf("failure %+v does not name its record", f)
		}
		out[f.Index].failures = append(out[f.Index].failures, f.Err)
		failedIDs[f.ID] = true
	}
	for i := range out {
		out[i].failed = seen[id(i)]
	}
	for r := range seen {
		if !failedIDs[r] {
			t.Fatalf("%s reported, but no record of it failed", r)
		}
	}
	for r := range failedIDs {
		if !seen[r] {
			t.Fatalf("%s failed but was not reported", r)
		}
	}
	return out
}

// FuzzBatch: a batch of arbitrary records (ids repeating, bodies of any
// bytes: JSON or not, text starting with "[" or "{", keys that panic) of
// every source, delivered, delivered again whole, then its failures
// delivered again, to one consumer or to two sharing the store. The
// invariants: the handler never panics and answers every batch; a failure
// is reported once, and only for a record that failed; a record reported
// done ran exactly once in this consumer (its scope has one effect and no
// unknown outcome); nothing has two effects, or an effect and an unknown
// outcome; an ordered batch runs nothing after its first failure (a FIFO
// group, a Kafka partition: in that group).
func FuzzBatch(f *testing.F) {
	rec := func(id, group byte, body string) []byte { return append([]byte{id, group, byte(len(body))}, body...) }
	seed := func(source, flags byte, recs ...[]byte) []byte {
		b := []byte{source, flags}
		for _, r := range recs {
			b = append(b, r...)
		}
		return b
	}
	for source := range byte(fuzzSources) {
		f.Add(seed(source, 0, rec(0, 0, `{"k":"a"}`), rec(1, 1, "[INFO] up"), rec(0, 0, `{"k":"a"}`), rec(2, 0, "{oops")))
		f.Add(seed(source, 3, rec(0, 0, `{"k":"a"}`), rec(1, 0, `{"k":"a","f":1}`), rec(2, 1, `{"k":"b","x":"f"}`), rec(3, 2, `{"k":"c"}`)))
		f.Add(seed(source, 1, rec(0, 0, `{"k":"a"}`), rec(1, 1, `{"k":"#"}`), rec(2, 1, `{"k":"b!"}`), rec(3, 2, `{"k":"u"}`), rec(4, 2, `{"k":"c"}`)))
		f.Add(seed(source, 2, rec(5, 0, "F"), rec(4, 0, "f"), rec(3, 1, "u"), rec(5, 2, "[")))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := decodeFuzz(data)
		g := testguard.Mem(t)
		consumers := []*fuzzConsumer{newFuzzConsumer(g, in, "")}
		if in.twoConsumer {
			consumers = append(consumers, newFuzzConsumer(g, in, "auditor"))
		}
		for _, c := range consumers {
			pending := in.records
			for round := range 3 {
				recs := append([]fuzzRecord(nil), pending...)
				runsBefore := c.totalRuns()
				var out []fuzzOutcome
				if msg := testkit.PanicOf(func() { out = c.deliver(t, recs) }); msg != "" {
					t.Fatalf("round %d: the handler panicked: %s", round, msg)
				}
				c.check(t, in, recs, out, c.totalRuns()-runsBefore)
				if round == 0 {
					continue // round 1 delivers the whole batch again
				}
				pending = nil
				for i, o := range out {
					if o.failed {
						pending = append(pending, recs[i])
					}
				}
			}
		}
	})
}

func (c *fuzzConsumer) totalRuns() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.runs {
		n += r
	}
	return n
}

// check holds one delivery of recs to its invariants; ran is how many
// runs it made.
func (c *fuzzConsumer) check(t *testing.T, in fuzzInput, recs []fuzzRecord, out []fuzzOutcome, ran int) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range c.effects {
		if n+c.unknown[k] > 1 {
			t.Fatalf("%q: %d effects and %d unknown outcomes, want at most one in all", k, n, c.unknown[k])
		}
	}
	op := c.op
	if op == "" {
		op = "shipper/" + map[int]string{fuzzSQS: "events.SQSMessage", fuzzFIFO: "events.SQSMessage", fuzzFIFOByGroup: "events.SQSMessage",
			fuzzKinesis: "events.KinesisEventRecord", fuzzKafka: "events.KafkaRecord"}[in.source]
	}
	firstFailure := map[int]int{} // ordered group -> the index of its first failure
	ordered := in.source != fuzzSQS
	for i, o := range out {
		group := 0
		if in.source == fuzzFIFOByGroup || in.source == fuzzKafka {
			group = recs[i].group
		}
		if len(o.failures) > 0 && !o.failed {
			t.Fatalf("record %d failed (%v) but was not reported", i, o.failures)
		}
		if ordered {
			if _, ok := firstFailure[group]; !ok && len(o.failures) > 0 {
				firstFailure[group] = i
			} else if ok && len(o.failures) == 0 {
				t.Fatalf("record %d ran after the failure of record %d of its ordered group", i, firstFailure[group])
			}
		}
		if o.failed {
			continue
		}
		key, ok := c.keyOf(in, recs[i])
		if !ok {
			t.Fatalf("record %d reported done, but it has no key", i)
		}
		if k := op + "\x00" + key; c.effects[k] != 1 || c.unknown[k] != 0 {
			t.Fatalf("record %d (%q) reported done with %d effects and %d unknown outcomes, want one effect", i, key, c.effects[k], c.unknown[k])
		}
	}
	if ordered && in.source == fuzzFIFO && len(firstFailure) > 0 && ran > firstFailure[0]+1 {
		t.Fatalf("%d runs, but the batch failed at record %d", ran, firstFailure[0])
	}
}

// keyOf returns the key a record is guarded by, as the consumer makes it.
func (c *fuzzConsumer) keyOf(in fuzzInput, r fuzzRecord) (string, bool) {
	if in.businessKey {
		if bytes.IndexByte(r.body, '#') >= 0 {
			return "", false
		}
		k, err := businessKey(r.body)
		return k, err == nil && k != ""
	}
	switch in.source {
	case fuzzKinesis:
		return fmt.Sprint("shardId-000000000000:", 4959000+r.id), true
	case fuzzKafka:
		return fmt.Sprintf("t-%d@%d", r.group, r.id), true
	}
	return fmt.Sprint("m", r.id), true
}
