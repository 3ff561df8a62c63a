package bench

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/internal/testing/testpayload"
)

// BenchmarkThroughputCPU runs Throughput's kit and raw requests, with
// 4 KB and 64 KB responses, on a private dynalite with 1 and 32 concurrent
// clients, in interleaved chunks so that the load of a shared machine
// costs them alike, and reports this process's CPU time, allocations and
// allocated bytes per request of each, and each variant's CPU minus the
// raw's (gap-ns/op). kit is the default store (zstd); s2 the store with
// CodecS2; nozstd the store with body compression off (CompressAbove
// -1). raw re-sends the kit's requests, so s2's and nozstd's gaps also
// hold what sending their larger items costs the SDK. Unlike
// BenchmarkDynamoPath, this is the kit's CPU on the real path, where the
// SDK, the network and the collector run between its steps and evict
// what it keeps in the CPU's caches. Each variant makes b.N requests,
// rounded up to whole chunks of 10 per client: set them with -benchtime
// Nx (ns/op, the wall time of all variants, is not reported). Profile
// one variant alone with -cpuprofile and -run '^$' -bench
// 'BenchmarkThroughputCPU/4096B/kit/32'.
func BenchmarkThroughputCPU(b *testing.B) {
	srv := dynalite.NewServer(b)
	ctx := context.Background()
	client, err := dynalite.NewClient(ctx, srv.Endpoint())
	if err != nil {
		b.Fatal(err)
	}
	table := fmt.Sprintf("tpcpu-%d", time.Now().UnixNano())
	if err := dynamo.CreateTable(ctx, client, table, dynamo.Options{}); err != nil {
		b.Fatal(err)
	}
	for _, size := range testpayload.Sizes[1:] {
		variants, err := cpuVariants(ctx, client, table, size)
		if err != nil {
			b.Fatal(err)
		}
		for _, clients := range []int{1, 32} {
			b.Run(fmt.Sprintf("%dB/all/%d", size, clients), func(b *testing.B) {
				interleave(b, clients, variants)
			})
			// One variant alone, to profile it.
			for _, v := range variants {
				b.Run(fmt.Sprintf("%dB/%s/%d", size, v.name, clients), func(b *testing.B) {
					interleave(b, clients, []variant{v})
				})
			}
		}
	}
}

// cpuVariants returns BenchmarkThroughputCPU's requests for a size-byte
// response.
func cpuVariants(ctx context.Context, client *dynamodb.Client, table string, size int) ([]variant, error) {
	kitReq, rawReq, err := throughputRequests(ctx, client, table, size, fmt.Sprintf("tpcpu-capture-%d-%d", size, time.Now().UnixNano()), dynamo.Options{})
	if err != nil {
		return nil, err
	}
	vs := []variant{{"kit", kitReq}, {"raw", rawReq}}
	for _, o := range []struct {
		name string
		opts dynamo.Options
	}{{"s2", dynamo.Options{Codec: dynamo.CodecS2}}, {"nozstd", dynamo.Options{CompressAbove: -1}}} {
		do, err := kitRequestOpts(ctx, client, table, orderHandler(size), []byte(testpayload.Event("").Body), size, o.opts)
		if err != nil {
			return nil, err
		}
		vs = append(vs, variant{o.name, do})
	}
	return vs, nil
}

// variant is a request of BenchmarkThroughputCPU.
type variant struct {
	name string
	do   func(key string) error
}

// interleave runs b.N requests of each variant with clients concurrent
// clients, in rounds of chunks that rotate the variants' order, and
// reports each one's CPU time, allocations and bytes per request.
func interleave(b *testing.B, clients int, variants []variant) {
	chunk := 10 * clients
	rounds := max(1, (b.N+chunk-1)/chunk)
	cpu := make([]time.Duration, len(variants))
	allocs := make([]uint64, len(variants))
	bytes := make([]uint64, len(variants))
	prefix := fmt.Sprintf("tpcpu-%d-%d-", clients, time.Now().UnixNano())
	var seq atomic.Int64
	var ms runtime.MemStats
	b.ResetTimer()
	for r := 0; r < rounds; r++ {
		for k := range variants {
			i := (k + r) % len(variants)
			var next atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			runtime.ReadMemStats(&ms)
			m0, b0, c0 := ms.Mallocs, ms.TotalAlloc, ProcessCPU()
			for c := 0; c < clients; c++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(chunk) {
						if err := variants[i].do(prefix + strconv.FormatInt(seq.Add(1), 10)); err != nil {
							errs <- fmt.Errorf("%s: %w", variants[i].name, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			cpu[i] += ProcessCPU() - c0
			runtime.ReadMemStats(&ms)
			allocs[i] += ms.Mallocs - m0
			bytes[i] += ms.TotalAlloc - b0
			select {
			case err := <-errs:
				b.Fatal(err)
			default:
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(0, "ns/op")
	n := float64(rounds * chunk)
	raw := slices.IndexFunc(variants, func(v variant) bool { return v.name == "raw" })
	for i, v := range variants {
		b.ReportMetric(float64(cpu[i])/n, v.name+"-cpu-ns/op")
		b.ReportMetric(float64(allocs[i])/n, v.name+"-allocs/op")
		b.ReportMetric(float64(bytes[i])/n, v.name+"-B/op")
		if raw >= 0 && i != raw {
			b.ReportMetric(float64(cpu[i]-cpu[raw])/n, v.name+"-gap-ns/op")
		}
	}
}
