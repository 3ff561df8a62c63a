package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit/internal/compress"
	"github.com/idemkit/idemkit/internal/testing/testpayload"
)

// Causes are the situations a body's compression is timed in, to tell
// why it costs more on the real path than in a loop. Each is a median of
// wall time, read with no system call around the compression; the loop
// and the busy process are runs of their own, the others take turns in
// rounds:
//
//   - loop: back to back, as in BenchmarkCompressBody (timed
//     before and after the rounds of the others, and pooled);
//   - fresh encoder: with an encoder made for it and dropped, as without
//     the pool (encoder reuse);
//   - after a system call: right after one getppid (a kernel entry);
//   - after parking 2 ms: after the goroutine slept 2 ms, as it waits for
//     the claim's answer;
//   - after a round trip: after a PutItem of the compressed item to the
//     server, as between the claim's answer and the completion;
//   - after evicting the caches: after writing 64 MB;
//   - beside a busy process: the loop while a process of this run spins
//     on the CPU (the server sharing the cores);
//   - copy into the attribute value, base64 of it: the compressed body
//     copied into the slice the item keeps, and base64-encoded as the SDK
//     sends a binary attribute in JSON.
var Causes = []string{"loop", "fresh encoder", "after a system call", "after parking 2 ms", "after a round trip", "after evicting the caches", "beside a busy process", "copy into the attribute value", "base64 of it"}

// IsCompression reports whether cause times a compression (all but the
// copy and base64 of its result), so that its ratio to the loop means
// something.
func IsCompression(cause string) bool {
	return cause != "copy into the attribute value" && cause != "base64 of it"
}

// CauseRow is the median time compressing a body (or, for the last two
// causes, handling its compressed form) took in one situation, and that
// over the loop's.
type CauseRow struct {
	Codec string // "zstd", "s2"
	Size  int
	Cause string
	Wall  time.Duration
	Ratio float64
}

// CompressCauses times the compression of a JSON body of each of sizes,
// with each codec's pool, in every one of Causes, n rounds each, on the
// server client talks to (for the round trips).
func CompressCauses(ctx context.Context, client *dynamodb.Client, table string, n int, sizes []int) ([]CauseRow, error) {
	evict := make([]byte, 64<<20)
	var rows []CauseRow
	for _, size := range sizes {
		body := testpayload.JSON(size)
		for _, pc := range []struct {
			name string
			p    *compress.Pool
		}{{"zstd", compress.Zstd}, {"s2", compress.S2}} {
			r, err := causes(ctx, client, table, pc.name, pc.p, body, n, evict)
			if err != nil {
				return nil, err
			}
			rows = append(rows, r...)
		}
	}
	return rows, nil
}

func causes(ctx context.Context, client *dynamodb.Client, table, codec string, p *compress.Pool, body []byte, n int, evict []byte) ([]CauseRow, error) {
	z, ok := p.Body(body)
	if !ok {
		return nil, fmt.Errorf("%s: the %d-byte body does not compress", codec, len(body))
	}
	timed := func(f func()) time.Duration {
		start := time.Now()
		f()
		return time.Since(start)
	}
	compressBody := func() { p.Body(body) }
	const warm = 5
	prefix := fmt.Sprintf("cause-%s-%d-%d-", codec, len(body), time.Now().UnixNano())
	var err error
	// Each situation makes its setting, untimed, and returns the timed
	// compression.
	situations := map[string]func(i int) time.Duration{
		"fresh encoder": func(int) time.Duration { return timed(func() { p.Fresh(body) }) },
		"after a system call": func(int) time.Duration {
			compressBody()
			_, _, _ = syscall.Syscall(syscall.SYS_GETPPID, 0, 0, 0)
			return timed(compressBody)
		},
		"after parking 2 ms": func(int) time.Duration {
			compressBody()
			time.Sleep(2 * time.Millisecond)
			return timed(compressBody)
		},
		"after a round trip": func(i int) time.Duration {
			compressBody()
			item := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: prefix + strconv.Itoa(i)}, "sb": &types.AttributeValueMemberB{Value: z}}
			if _, e := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); e != nil && err == nil {
				err = e
			}
			return timed(compressBody)
		},
		"after evicting the caches": func(int) time.Duration {
			compressBody()
			for j := 0; j < len(evict); j += 64 {
				evict[j]++
			}
			return timed(compressBody)
		},
		"copy into the attribute value": func(int) time.Duration {
			return timed(func() { _ = append(make([]byte, 0, len(z)), z...) })
		},
		"base64 of it": func(int) time.Duration { return timed(func() { _ = base64.StdEncoding.EncodeToString(z) }) },
	}
	var order []string
	for _, c := range Causes {
		if situations[c] != nil {
			order = append(order, c)
		}
	}
	samples := map[string][]time.Duration{}
	// loopRun compresses the body back to back, n times after warm-up,
	// into samples[into].
	loopRun := func(into string) {
		for i := -warm; i < n; i++ {
			if d := timed(compressBody); i >= 0 {
				samples[into] = append(samples[into], d)
			}
		}
	}
	loopRun("loop")
	for i := -warm; i < n; i++ {
		for k := range order {
			c := order[(i+warm+k)%len(order)]
			d := situations[c](i + warm)
			if i >= 0 {
				samples[c] = append(samples[c], d)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	loopRun("loop")
	// Beside a busy process: a run of its own, since the process would
	// run beside every other situation too.
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		return nil, fmt.Errorf("busy process: %w", err)
	}
	time.Sleep(20 * time.Millisecond)
	loopRun("beside a busy process")
	_ = busy.Process.Kill()
	_ = busy.Wait()
	loop := quantile(samples["loop"], 0.5)
	var rows []CauseRow
	for _, c := range Causes {
		w := quantile(samples[c], 0.5)
		rows = append(rows, CauseRow{Codec: codec, Size: len(body), Cause: c, Wall: w, Ratio: float64(w) / float64(loop)})
	}
	return rows, nil
}
