package batch_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/testclock"
	"github.com/idemkit/idemkit/internal/testing/testkit"
	"github.com/idemkit/idemkit/lambda/batch"
)

// failOnce fails the first run of each order in orders with errCarrier.
func failOnce(orders ...string) func(string, int) error {
	return func(order string, run int) error {
		for _, o := range orders {
			if o == order && run == 1 {
				return errCarrier
			}
		}
		return nil
	}
}

// TestSQSFIFO: a FIFO batch stops at its first failure (the rest reported
// failed, not run), or with ByGroup stops only the failed message group;
// the redelivery of what was reported runs it in order, and nothing ships
// twice.
func TestSQSFIFO(t *testing.T) {
	f := func(id, group, order string) events.SQSMessage { return fifoMessage(t, id, group, order) }
	first := []events.SQSMessage{f("f1", "g1", "o1"), f("f2", "g1", "o2"), f("f3", "g2", "o3"), f("f4", "g1", "o4"), f("f5", "g2", "o5")}
	for _, tc := range []struct {
		name      string
		byGroup   bool
		fifo      func(*events.SQSMessage) // how the queue is recognised as FIFO
		want      []failed
		redeliver []events.SQSMessage
		runs      []string
	}{
		{
			name:      "the rest of the batch",
			want:      []failed{{"f2", errCarrier}, {"f3", batch.ErrEarlierFailure}, {"f4", batch.ErrEarlierFailure}, {"f5", batch.ErrEarlierFailure}},
			redeliver: first[1:],
			runs:      []string{"o1", "o2", "o2", "o3", "o4", "o5"},
		},
		{
			name:      "recognised by the .fifo queue alone",
			fifo:      func(m *events.SQSMessage) { delete(m.Attributes, "MessageGroupId") },
			want:      []failed{{"f2", errCarrier}, {"f3", batch.ErrEarlierFailure}, {"f4", batch.ErrEarlierFailure}, {"f5", batch.ErrEarlierFailure}},
			redeliver: first[1:],
			runs:      []string{"o1", "o2", "o2", "o3", "o4", "o5"},
		},
		{
			name:      "recognised by MessageGroupId alone",
			fifo:      func(m *events.SQSMessage) { m.EventSourceARN = "arn:aws:sqs:us-east-1:123456789012:shipments-q" },
			want:      []failed{{"f2", errCarrier}, {"f3", batch.ErrEarlierFailure}, {"f4", batch.ErrEarlierFailure}, {"f5", batch.ErrEarlierFailure}},
			redeliver: first[1:],
			runs:      []string{"o1", "o2", "o2", "o3", "o4", "o5"},
		},
		{
			name:      "ByGroup: the rest of the failed group",
			byGroup:   true,
			want:      []failed{{"f2", errCarrier}, {"f4", batch.ErrEarlierFailure}},
			redeliver: []events.SQSMessage{first[1], first[3]},
			runs:      []string{"o1", "o2", "o3", "o5", "o2", "o4"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker()
			w.fail = failOnce("o2")
			var got failures
			h := batch.SQS(newGuard(t, nil), batch.SQSConfig{Config: sqsSource, ByGroup: tc.byGroup, OnFailure: got.add}, w.sqs)
			deliver := func(msgs []events.SQSMessage) []string {
				var b []events.SQSMessage
				for _, m := range msgs {
					m.Attributes = map[string]string{"MessageGroupId": m.Attributes["MessageGroupId"]}
					if tc.fifo != nil {
						tc.fifo(&m)
					}
					b = append(b, m)
				}
				resp := testkit.Call(t, h, events.SQSEvent{Records: b})
				return sqsIDs(resp)
			}
			checkFailures(t, "first delivery", deliver(first), got.take(), tc.want)
			checkFailures(t, "redelivery", deliver(tc.redeliver), got.take(), nil)
			if runs := w.runList(); !reflect.DeepEqual(runs, tc.runs) {
				t.Errorf("runs %q, want %q", runs, tc.runs)
			}
			if shipped := w.shipped(); len(shipped) != 5 {
				t.Errorf("shipped %v, want each of 5 orders once", shipped)
			}
		})
	}
}

// TestStreamsOrder: a Kinesis or DynamoDB Streams batch reports its first
// failure and every later record by sequence number, runs none of them,
// and runs them in order when the stream delivers them again from the
// lowest one; a record whose outcome is unknown holds the shard (the
// records after it are never run past it).
func TestStreamsOrder(t *testing.T) {
	seqs, orders := []string{"101", "102", "103", "104"}, []string{"o1", "o2", "o3", "o4"}
	for _, tc := range []struct {
		name   string
		fail   func(string, int) error
		first  []failed
		second []failed
		runs   []string
	}{
		{
			name:  "handler error",
			fail:  failOnce("o2"),
			first: []failed{{"102", errCarrier}, {"103", batch.ErrEarlierFailure}, {"104", batch.ErrEarlierFailure}},
			runs:  []string{"o1", "o2", "o2", "o3", "o4"},
		},
		{
			name:  "a completed duplicate after the failure is not run either",
			fail:  failOnce("o1"),
			first: []failed{{"101", errCarrier}, {"102", batch.ErrEarlierFailure}, {"103", batch.ErrEarlierFailure}, {"104", batch.ErrEarlierFailure}},
			runs:  []string{"o1", "o1", "o2", "o3", "o4"},
		},
		{
			name: "outcome unknown holds the shard",
			fail: func(order string, _ int) error {
				if order == "o3" {
					return fmt.Errorf("label printer timed out: %w", idemkit.ErrOutcomeUnknown)
				}
				return nil
			},
			first:  []failed{{"103", idemkit.ErrOutcomeUnknown}, {"104", batch.ErrEarlierFailure}},
			second: []failed{{"103", idemkit.ErrIndeterminate}, {"104", batch.ErrEarlierFailure}},
			runs:   []string{"o1", "o2", "o3"},
		},
	} {
		for _, src := range []string{"kinesis", "dynamodb"} {
			t.Run(src+"/"+tc.name, func(t *testing.T) {
				w := newWorker()
				w.fail = tc.fail
				var got failures
				g := newGuard(t, nil)
				kin := batch.Kinesis(g, batch.KinesisConfig{Config: kinesisSource, OnFailure: got.add}, w.kinesis)
				ddb := batch.DynamoDB(g, batch.DynamoDBConfig{Config: streamSource, OnFailure: got.add}, w.stream)
				// deliver sends the records from the i-th on, as the
				// stream does after a checkpoint.
				deliver := func(from int) []string {
					switch src {
					case "kinesis":
						var e events.KinesisEvent
						for i := from; i < len(seqs); i++ {
							e.Records = append(e.Records, kinesisRecord(t, seqs[i], orders[i]))
						}
						resp := testkit.Call(t, kin, e)
						return kinesisIDs(resp)
					default:
						var e events.DynamoDBEvent
						for i := from; i < len(seqs); i++ {
							e.Records = append(e.Records, streamRecord(t, seqs[i], orders[i]))
						}
						resp := testkit.Call(t, ddb, e)
						return streamIDs(resp)
					}
				}
				ids := deliver(0)
				checkFailures(t, "first delivery", ids, got.take(), tc.first)
				// The stream resumes at the lowest sequence number reported.
				from := len(seqs) - len(ids)
				checkFailures(t, "redelivery from the checkpoint", deliver(from), got.take(), tc.second)
				if runs := w.runList(); !reflect.DeepEqual(runs, tc.runs) {
					t.Errorf("runs %q, want %q", runs, tc.runs)
				}
				for o, n := range w.shipped() {
					if n != 1 {
						t.Errorf("%s shipped %d times", o, n)
					}
				}
			})
		}
	}
}

// TestDeadline: a record is started only while more than Margin is left
// before the context's deadline; the records not reached are reported
// failed with ErrDeadline and never run, in every kind of source, and a
// started record's function sees a deadline Margin before the function's.
func TestDeadline(t *testing.T) {
	const margin = time.Minute
	for _, tc := range []struct {
		name    string
		margin  time.Duration // Config.Margin
		advance time.Duration // how far the first run moves the clock
		want    []failed
		runs    []string
	}{
		{name: "time left for all", margin: margin, advance: time.Minute, runs: []string{"o1", "o2", "o3"}},
		{name: "the margin reached after the first record", margin: margin, advance: 9 * time.Minute,
			want: []failed{{"m2", batch.ErrDeadline}, {"m3", batch.ErrDeadline}}, runs: []string{"o1"}},
		{name: "default margin", advance: 10*time.Minute - batch.DefaultMargin,
			want: []failed{{"m2", batch.ErrDeadline}, {"m3", batch.ErrDeadline}}, runs: []string{"o1"}},
		{name: "default margin not yet reached", advance: 10*time.Minute - batch.DefaultMargin - time.Second, runs: []string{"o1", "o2", "o3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testclock.New() // the deadline is a real one
			deadline := clk.Now().Add(10 * time.Minute)
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			w := newWorker()
			var seen []time.Time
			w.during = func(ctx context.Context, order string) {
				dl, _ := ctx.Deadline()
				seen = append(seen, dl)
				if order == "o1" {
					clk.Advance(tc.advance)
				}
			}
			var got failures
			h := batch.SQS(newGuard(t, nil), batch.SQSConfig{Config: sqsSource, Margin: tc.margin, Clock: clk, OnFailure: got.add}, w.sqs)
			resp, err := h(ctx, events.SQSEvent{Records: []events.SQSMessage{message(t, "m1", "o1"), message(t, "m2", "o2"), message(t, "m3", "o3")}})
			if err != nil {
				t.Fatal(err)
			}
			checkFailures(t, "delivery", sqsIDs(resp), got.take(), tc.want)
			if runs := w.runList(); !reflect.DeepEqual(runs, tc.runs) {
				t.Errorf("runs %q, want %q", runs, tc.runs)
			}
			m := tc.margin
			if m == 0 {
				m = batch.DefaultMargin
			}
			if !seen[0].Equal(deadline.Add(-m)) {
				t.Errorf("the function's deadline %v, want %v", seen[0], deadline.Add(-m))
			}
		})
	}
}

// TestDeadlineOrdered: a Kinesis batch out of time reports the records
// not reached; the one after is run on the redelivery, once.
func TestDeadlineOrdered(t *testing.T) {
	clk := testclock.New() // the deadline is a real one
	ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(time.Minute))
	defer cancel()
	w := newWorker()
	w.during = func(context.Context, string) { clk.Advance(30 * time.Second) }
	var got failures
	h := batch.Kinesis(newGuard(t, nil), batch.KinesisConfig{Config: kinesisSource, Margin: 40 * time.Second, Clock: clk, OnFailure: got.add}, w.kinesis)
	resp, _ := h(ctx, events.KinesisEvent{Records: []events.KinesisEventRecord{kinesisRecord(t, "1", "o1"), kinesisRecord(t, "2", "o2"), kinesisRecord(t, "3", "o3")}})
	checkFailures(t, "delivery", kinesisIDs(resp), got.take(), []failed{{"2", batch.ErrDeadline}, {"3", batch.ErrDeadline}})
	resp, _ = h(context.Background(), events.KinesisEvent{Records: []events.KinesisEventRecord{kinesisRecord(t, "2", "o2"), kinesisRecord(t, "3", "o3")}})
	checkFailures(t, "redelivery", kinesisIDs(resp), got.take(), nil)
	if runs := w.runList(); !reflect.DeepEqual(runs, []string{"o1", "o2", "o3"}) {
		t.Errorf("runs %q", runs)
	}
}
