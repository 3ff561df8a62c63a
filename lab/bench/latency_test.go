package bench

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/compress"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/eventlog"
	"github.com/idemkit/idemkit/internal/testing/testpayload"
)

// TestSummarisePaired holds the paired estimate: each round's wrapped time
// less its own round's baselines, whose median the rounds' drift leaves
// alone while it moves the medians of the two series apart.
func TestSummarisePaired(t *testing.T) {
	ms := func(v ...int) []time.Duration { return durations(time.Millisecond, v...) }
	tests := []struct {
		name                string
		wrapped, bare, same []time.Duration
		ratio, paired       float64
		added               time.Duration
	}{
		{"steady", ms(10, 20, 30), ms(0, 0, 0), ms(9, 19, 29), 20.0 / 19, 1 + 1.0/19, time.Millisecond},
		// The server slowed down in round 2 for the baseline only, and in
		// round 3 for both: the medians compare round 2's wrapped with
		// round 1's same requests.
		{"drift", ms(5, 30, 31), ms(0, 0, 0), ms(4, 6, 30), 30.0 / 6, 1 + 1.0/6, time.Millisecond},
		{"bare counted", ms(12, 22, 32), ms(1, 1, 1), ms(9, 19, 29), 22.0 / 20, 1 + 2.0/20, 2 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rg := &rig{obs: &eventlog.Log{KeepLast: true}, raw: &raw{calls: 2}}
			var row Row
			rg.summarise(&row, samples{wrapped: tt.wrapped, bare: tt.bare, same: tt.same, min: tt.same})
			if row.Added != tt.added {
				t.Errorf("Added = %v, want %v", row.Added, tt.added)
			}
			if !near(row.Ratio, tt.ratio) || !near(row.Paired, tt.paired) {
				t.Errorf("Ratio, Paired = %.4f, %.4f, want %.4f, %.4f", row.Ratio, row.Paired, tt.ratio, tt.paired)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// durations returns v, each in unit.
func durations(unit time.Duration, v ...int) []time.Duration {
	d := make([]time.Duration, len(v))
	for i, x := range v {
		d[i] = time.Duration(x) * unit
	}
	return d
}

// TestSummariseCompress holds the compression estimate: the median over
// rounds of same+z less the same requests of its own round, not the
// difference of the two medians; 0 where same+z was not measured in every
// round.
func TestSummariseCompress(t *testing.T) {
	us := func(v ...int) []time.Duration { return durations(time.Microsecond, v...) }
	tests := []struct {
		name        string
		same, samez []time.Duration
		want        time.Duration
	}{
		{"steady", us(1000, 2000, 3000), us(1100, 2100, 3100), 100 * time.Microsecond},
		// The medians, 2000 and 2100, would say 100µs; round by round it
		// is 50.
		{"drift", us(1000, 2000, 9000), us(1050, 9000, 2100), 50 * time.Microsecond},
		{"not measured", us(1000, 2000, 3000), nil, 0},
		{"not in every round", us(1000, 2000, 3000), us(1100, 2100), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rg := &rig{obs: &eventlog.Log{KeepLast: true}, raw: &raw{calls: 2}}
			var row Row
			w := us(5000, 5000, 5000)
			rg.summarise(&row, samples{wrapped: w, bare: w, same: tt.same, min: tt.same, samez: tt.samez})
			if row.Compress != tt.want {
				t.Errorf("Compress = %v, want %v", row.Compress, tt.want)
			}
		})
	}
}

// TestRoundOrder: where the store's requests carry a compressed body, a
// round has five contenders, each taking each place once in five rounds;
// same+z re-sends the requests under its own key and compresses the body
// after the claim's answer and before the completion; where none does,
// there are four.
func TestRoundOrder(t *testing.T) {
	var log []string
	body := bytes.Repeat([]byte(`{"id":"ord_1","amount":{"value":42,"currency":"EUR"}},`), 80)
	rg := &rig{path: "fresh", want: 201, capture: &capturing{}, obs: &eventlog.Log{KeepLast: true}, zAt: -1, zBody: body, raw: &raw{}}
	compressing := true
	var compressed []byte // what same+z had compressed when it sent its completion
	rg.wrapped = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		log = append(log, "wrapped")
		send := func(name string) call {
			return func(_ context.Context, pk string) error {
				// Which request, under which key, and whether same+z's
				// body was compressed when it was sent.
				log = append(log, fmt.Sprintf("%s %s %v", name, pk, rg.zOut != nil))
				if name == "complete" && rg.zOut != nil {
					compressed, rg.zOut = rg.zOut, nil
				}
				return nil
			}
		}
		rg.capture.calls = append(rg.capture.calls, send("claim"))
		if compressing {
			rg.capture.zAt, rg.capture.zCodec = len(rg.capture.calls), dynamo.CodecS2
		}
		rg.capture.calls = append(rg.capture.calls, send("complete"))
		return events.APIGatewayV2HTTPResponse{StatusCode: 201}, nil
	}
	rg.bare = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		log = append(log, "bare")
		return events.APIGatewayV2HTTPResponse{}, nil
	}
	ctx := context.Background()
	first := func(j int) string {
		log = log[:0]
		tm, err := rg.round(ctx, j, testpayload.Event("k"), "same", "samez")
		if err != nil {
			t.Fatal(err)
		}
		// But in rounds 0 and 12, started by wrapped, z is what the
		// previous wrapped request sent.
		if j != 0 && j != 12 && tm.z != compressing {
			t.Errorf("round %d: z = %v, want %v", j, tm.z, compressing)
		}
		return log[0]
	}
	if got := first(0); got != "wrapped" {
		t.Fatalf("round 0 started with %q, want wrapped", got)
	}
	if rg.zAt != 1 || rg.zPool != compress.S2 {
		t.Fatalf("zAt %d, pool S2 %v: want the completion, compressed with S2", rg.zAt, rg.zPool == compress.S2)
	}
	// The raw calls log nothing: the round they start starts with same.
	want := []string{"wrapped", "bare", "claim same false", "claim same false", "claim samez false"}
	for j := 5; j < 10; j++ {
		if got := first(j); got != want[j%5] {
			t.Errorf("round %d started with %q, want %q", j, got, want[j%5])
		}
		if !slices.Contains(log, "claim samez false") || !slices.Contains(log, "complete samez true") {
			t.Errorf("round %d: same+z did not compress between the claim and the completion: %q", j, log)
		}
		if !slices.Contains(log, "claim same false") || !slices.Contains(log, "complete same false") || !slices.Contains(log, "wrapped") || !slices.Contains(log, "bare") {
			t.Errorf("round %d: a contender did not run: %q", j, log)
		}
	}
	if got, ok := rg.zPool.Body(body); !ok || !bytes.Equal(got, compressed) {
		t.Errorf("same+z compressed %d bytes, want the body's %d", len(compressed), len(got))
	}

	compressing = false
	first(12) // 12 mod 4: wrapped first, sending nothing compressed
	if rg.zAt != -1 {
		t.Fatalf("zAt %d, want -1", rg.zAt)
	}
	for j := 13; j < 17; j++ {
		if first(j); slices.ContainsFunc(log, func(s string) bool { return strings.Contains(s, "samez") }) {
			t.Errorf("round %d: same+z ran with nothing compressed: %q", j, log)
		}
	}
}

// privateTable returns a client of a dynalite server of the test's own,
// as make bench measures on, and a fresh table on it.
func privateTable(t testing.TB) (*dynamodb.Client, string) {
	t.Helper()
	srv := dynalite.NewServer(t)
	client, err := dynalite.NewClient(context.Background(), srv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	table := dynalite.TableName(t)
	if err := dynamo.CreateTable(context.Background(), client, table, dynamo.Options{}); err != nil {
		t.Fatal(err)
	}
	return client, table
}

// TestSameZOnDynamoDB: on a real server, same+z runs on the fresh path
// where the store's completion carries a compressed body, with the
// store's codec, and its re-sent completion stores that body compressed;
// where the body is not compressed (too small, or a replay), it does not
// run.
func TestSameZOnDynamoDB(t *testing.T) {
	ctx := context.Background()
	client, table := privateTable(t)
	for _, tc := range []struct {
		path  string
		size  int
		codec dynamo.Codec
		pool  *compress.Pool // nil: nothing compressed
	}{
		{"fresh", 4 << 10, "", compress.Zstd},
		{"fresh", 4 << 10, dynamo.CodecS2, compress.S2},
		{"fresh", 200, "", nil},
		{"replay", 4 << 10, "", nil},
	} {
		t.Run(fmt.Sprintf("%s/%d/%s", tc.path, tc.size, tc.codec), func(t *testing.T) {
			body := string(testpayload.JSON(tc.size))
			rg, err := newRig(client, table, tc.path, body, tc.codec)
			if err != nil {
				t.Fatal(err)
			}
			prefix := fmt.Sprintf("%s-%d-%s-", tc.path, tc.size, tc.codec)
			ev := testpayload.Event(prefix + "fixed")
			if err := rg.seed(ctx, ev, prefix+"fixed"); err != nil {
				t.Fatal(err)
			}
			rg.raw = newRaw(client, table, tc.path, tc.size, body, prefix)
			if err := rg.raw.setup(ctx); err != nil {
				t.Fatal(err)
			}
			key := func(i int) string { return prefix + strconv.Itoa(i) }
			for i := 0; i < 2; i++ {
				rekey, rekeyZ := "", ""
				if tc.path == "fresh" {
					ev, rekey, rekeyZ = testpayload.Event(key(i)), "same-"+key(i), "samez-"+key(i)
				}
				// Round 0 starts with wrapped; round 4 with same+z where
				// there is one.
				tm, err := rg.round(ctx, 4*i, ev, rekey, rekeyZ)
				if err != nil {
					t.Fatal(err)
				}
				if i == 1 && tm.z != (tc.pool != nil) {
					t.Errorf("same+z ran: %v, want %v", tm.z, tc.pool != nil)
				}
			}
			if rg.zPool != tc.pool {
				t.Errorf("same+z compresses with %p, want %p", rg.zPool, tc.pool)
			}
			if tc.pool == nil {
				return
			}
			// The body is compressed for the completion, the last request,
			// after the claim's answer.
			if rg.zAt < 1 || rg.zAt != len(rg.sent)-1 {
				t.Errorf("same+z compresses before request %d of %d, want the completion, the last", rg.zAt, len(rg.sent))
			}
			out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "samez-" + key(1)}}})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.codec
			if want == "" {
				want = dynamo.CodecZstd
			}
			if enc, _ := out.Item[attrBodyEncoding].(*types.AttributeValueMemberS); enc == nil || dynamo.Codec(enc.Value) != want {
				t.Errorf("same+z's completion stored encoding %v, want %s", out.Item[attrBodyEncoding], want)
			}
			if z, _ := tc.pool.Body([]byte(body)); !bytes.Equal(z, rg.zOut) {
				t.Errorf("same+z compressed to %d bytes, want %d", len(rg.zOut), len(z))
			}
		})
	}
}

// TestLatencySameZ: measured against a real server, a fresh path whose
// completion carries a compressed body has same+z in every round, under
// its own keys, and a compression estimate; a replay, which compresses
// nothing, has neither.
func TestLatencySameZ(t *testing.T) {
	ctx := context.Background()
	client, table := privateTable(t)
	const n = 2
	rows, err := LatencyWith(ctx, client, table, n, []string{"fresh", "replay"}, []int{4 << 10}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Path != "fresh" || rows[1].Path != "replay" {
		t.Fatalf("rows %+v", rows)
	}
	if rows[0].Compress == 0 {
		t.Error("fresh: no compression estimate")
	}
	if rows[1].Compress != 0 {
		t.Errorf("replay: compression estimate %v, want 0 (nothing compressed)", rows[1].Compress)
	}
	// Every round, warm-up included, re-sent the same requests under a
	// key of its own for same and, but in the first (run before a wrapped
	// request showed what the store compresses), for same+z.
	count := map[string]int{}
	p := dynamodb.NewScanPaginator(client, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			pk, _ := it["pk"].(*types.AttributeValueMemberS)
			if pk == nil {
				continue
			}
			for _, pre := range []string{"same-fresh-", "samez-fresh-", "same-replay-", "samez-replay-"} {
				if strings.HasPrefix(pk.Value, pre) {
					count[pre]++
				}
			}
		}
	}
	if count["same-fresh-"] == 0 || count["samez-fresh-"] != count["same-fresh-"]-1 || count["same-replay-"]+count["samez-replay-"] != 0 {
		t.Errorf("items re-sent per key prefix %v; want one fewer same+z than same on the fresh path, none keyed per round on the replay path", count)
	}
}
