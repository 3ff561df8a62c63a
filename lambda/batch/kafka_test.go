package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/idemkey"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/lambda/batch"
)

// scopes records the scope of every run.
func scopes(w *worker) *[]idemkit.Scope {
	var list []idemkit.Scope
	w.during = func(ctx context.Context, _ string) {
		s, _ := idemkit.ScopeOf(ctx)
		list = append(list, s)
	}
	return &list
}

// TestKafkaGolden: the golden MSK and self-managed Kafka events run each
// record once, one topic-partition after another in the order of their
// names, each in offset order, with the default scope: the key
// "topic-partition@offset", the tenant the cluster (its ARN; a
// self-managed cluster's bootstrap servers), the operation the function
// and the record type. Their redelivery runs nothing.
func TestKafkaGolden(t *testing.T) {
	for _, tc := range []struct {
		file, tenant string
		scopes       []string
	}{
		{"msk-event.json", "arn:aws:kafka:us-east-1:123456789012:cluster/shipments/5f4c3b2a-1d0e-4f9a-8b7c-6d5e4f3a2b1c-2",
			[]string{"shipments-0@1040", "shipments-0@1041", "shipments-1@870"}},
		{"self-managed-kafka-event.json", "kafka-1.internal.example:9092,kafka-2.internal.example:9092",
			[]string{"shipments-0@1040"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			w := newWorker()
			seen := scopes(w)
			var got failures
			h := batch.Kafka(newGuard(t, nil), batch.KafkaConfig{Config: kafkaSource, OnFailure: got.add}, w.kafka)
			e := testkit.Load[events.KafkaEvent](t, tc.file)
			for i := range 2 {
				resp, err := h(context.Background(), e)
				if err != nil || len(resp.BatchItemFailures) != 0 {
					t.Fatalf("delivery %d: %v %v (%v)", i, resp, err, got.take())
				}
			}
			var keys []string
			for _, s := range *seen {
				keys = append(keys, s.Key)
				if s.Tenant != tc.tenant || s.Operation != "shipper/events.KafkaRecord" {
					t.Errorf("scope %+v, want tenant %s, operation shipper/events.KafkaRecord", s, tc.tenant)
				}
			}
			if !reflect.DeepEqual(keys, tc.scopes) {
				t.Errorf("ran %q, want %q once each", keys, tc.scopes)
			}
		})
	}
}

// TestKafkaPartitionOrder: a failure stops only its own topic-partition:
// its later records are reported failed without running
// (ErrEarlierFailure), the other partitions run. The response names each
// failed partition once, at the offset of its first failure, the JSON
// Lambda reads; Lambda reading the partition again from there ships the
// rest in order, and nothing ships twice.
func TestKafkaPartitionOrder(t *testing.T) {
	w := newWorker()
	w.fail = failOnce("a2", "c1")
	var got failures
	h := batch.Kafka(newGuard(t, nil), batch.KafkaConfig{Config: kafkaSource, OnFailure: got.add}, w.kafka)
	e := kafkaEvent(t, map[string][]string{
		"shipments-0": {"a1", "a2", "a3"},
		"shipments-1": {"b1", "b2"},
		"shipments-2": {"c1", "c2"},
	})
	resp := testkit.Call(t, h, e)
	b, _ := json.Marshal(resp)
	if want := `{"batchItemFailures":[{"itemIdentifier":{"partition":"shipments-0","offset":101}},{"itemIdentifier":{"partition":"shipments-2","offset":100}}]}`; string(b) != want {
		t.Errorf("response %s, want %s", b, want)
	}
	reported := got.take()
	want := []failed{{"shipments-0@101", errCarrier}, {"shipments-0@102", batch.ErrEarlierFailure}, {"shipments-2@100", errCarrier}, {"shipments-2@101", batch.ErrEarlierFailure}}
	if len(reported) != len(want) {
		t.Fatalf("OnFailure %v, want %v", reported, want)
	}
	for i, f := range want {
		if reported[i].ID != f.id || !errors.Is(reported[i].Err, f.err) {
			t.Errorf("failure %d: %s %v, want %s under %v", i, reported[i].ID, reported[i].Err, f.id, f.err)
		}
	}
	if runs := w.runList(); !reflect.DeepEqual(runs, []string{"a1", "a2", "b1", "b2", "c1"}) {
		t.Errorf("runs %q", runs)
	}
	// Lambda reads each reported partition again from its offset.
	again := events.KafkaEvent{EventSource: e.EventSource, EventSourceARN: e.EventSourceARN, BootstrapServers: e.BootstrapServers,
		Records: map[string][]events.KafkaRecord{}}
	for _, f := range resp.BatchItemFailures {
		for _, r := range e.Records[f.ItemIdentifier.Partition] {
			if r.Offset >= f.ItemIdentifier.Offset {
				again.Records[f.ItemIdentifier.Partition] = append(again.Records[f.ItemIdentifier.Partition], r)
			}
		}
	}
	if resp, err := h(context.Background(), again); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redelivery: %v %v (%v)", resp, err, got.take())
	}
	// A retried invocation of the whole batch runs nothing more.
	if resp, err := h(context.Background(), e); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("whole batch again: %v %v (%v)", resp, err, got.take())
	}
	if runs := w.runList(); !reflect.DeepEqual(runs, []string{"a1", "a2", "b1", "b2", "c1", "a2", "a3", "c1", "c2"}) {
		t.Errorf("runs %q, want each partition in order", runs)
	}
	for o, n := range w.shipped() {
		if n != 1 {
			t.Errorf("%s shipped %d times", o, n)
		}
	}
	if len(w.shipped()) != 7 {
		t.Errorf("shipped %v, want 7 orders", w.shipped())
	}
}

// TestKafkaEdges: an event without records answers an empty list; a
// record without a topic-partition to report it by refuses the batch
// (ErrNoIdentifier) without running it; a topic name long enough to make
// the default key longer than 255 bytes is keyed by the key's SHA-256; a
// value that is not base64 fails its record as invalid.
func TestKafkaEdges(t *testing.T) {
	w := newWorker()
	seen := scopes(w)
	var got failures
	h := batch.Kafka(newGuard(t, nil), batch.KafkaConfig{Config: kafkaSource, OnFailure: got.add}, w.kafka)
	resp, err := h(context.Background(), events.KafkaEvent{})
	if b, _ := json.Marshal(resp); err != nil || string(b) != `{"batchItemFailures":[]}` {
		t.Errorf("no records: %s %v", b, err)
	}
	e := kafkaEvent(t, map[string][]string{"shipments-0": {"o1"}})
	e.Records[""] = e.Records["shipments-0"]
	if _, err := h(context.Background(), e); !errors.Is(err, batch.ErrNoIdentifier) || len(w.runList()) != 0 {
		t.Errorf("no topic-partition: %v after runs %q, want ErrNoIdentifier and none", err, w.runList())
	}
	e = kafkaEvent(t, map[string][]string{"shipments-0": {"o1", "o2"}})
	long := strings.Repeat("t", 249)
	e.Records[long+"-0"] = e.Records["shipments-0"][:1]
	e.Records[long+"-0"][0].Topic, e.Records[long+"-0"][0].Offset = long, 1_000_000 // "-0@1000000": 259 bytes
	e.Records["shipments-0"] = e.Records["shipments-0"][1:]
	e.Records["shipments-0"][0].Value = "not base64!"
	resp, err = h(context.Background(), e)
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != (batch.KafkaItemIdentifier{Partition: "shipments-0", Offset: 101}) {
		t.Fatalf("%v %v (%v), want shipments-0@101 failed", resp, err, got.take())
	}
	if f := got.take(); len(f) != 1 || !errors.Is(f[0].Err, batch.ErrInvalidRecord) {
		t.Errorf("failures %v, want the undecodable value invalid", f)
	}
	if len(*seen) != 1 || !strings.HasPrefix((*seen)[0].Key, "kafka:sha256:") || len((*seen)[0].Key) > idemkey.DefaultMaxLen {
		t.Errorf("scopes %+v, want one keyed by a SHA-256", *seen)
	}
}
