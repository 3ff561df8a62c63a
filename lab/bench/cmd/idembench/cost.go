package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit/lab/bench"
)

// costResult is the cost table measured on one server, and what the
// default store chose at each size there.
type costResult struct {
	server string
	costs  []bench.Cost
	chosen map[int]string // DefaultCodec
}

// measureCost measures and prints the cost table on the server client
// talks to.
func measureCost(ctx context.Context, w io.Writer, client *dynamodb.Client, table, server string, n int) (*costResult, error) {
	fmt.Fprintf(os.Stderr, "idembench: cost per request on %s...\n", server)
	start := time.Now()
	costs, err := bench.MeasureCost(ctx, client, table, n, bench.CostPaths, bench.CostSizes)
	if err != nil {
		return nil, err
	}
	chosen, err := bench.DefaultCodec(ctx, client, table, bench.CostSizes)
	if err != nil {
		return nil, err
	}
	res := &costResult{server: server, costs: costs, chosen: chosen}
	p := opts.prices
	fmt.Fprintf(w, "\n## Cost per million requests (%s; %d requests per row, the codecs taking turns; %s)\n\n", server, n, time.Since(start).Round(time.Second))
	fmt.Fprintf(w, "prices (%s, read %s from %s):\nDynamoDB on-demand $%s per million write request units, $%s per million read request units; Lambda $%s per GB-second\n\n",
		p.Region, p.Date, p.Source, price(p.WriteUnit), price(p.ReadUnit), price(p.GBSecond))
	costTable(w, p, costs)
	fmt.Fprintln(w, "\nWRU, RRU: the request units of one request as the server counted them (ConsumedCapacity; a refused conditional")
	fmt.Fprintln(w, "write, which the server bills but does not report, by the size of the item that refused it). kit CPU: this")
	fmt.Fprintln(w, "process's CPU per request beyond the bare handler's (the kit, the SDK's calls it makes, their garbage")
	fmt.Fprintln(w, "collection), priced as the GB-seconds it takes: up to 1,769 MB a function has that share of one vCPU, so the")
	fmt.Fprintln(w, "same CPU costs the same at 512 MB (where it takes 3.46 times as long) as at 1,769 MB. zstd and s2 compress")
	fmt.Fprintln(w, "every body they make smaller; none stores it as is.")
	fmt.Fprintln(w)
	cheapestLines(w, p, costs, chosen)
	return res, nil
}

// costTable prints one row per cost.
func costTable(w io.Writer, p bench.Prices, costs []bench.Cost) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "path\tsize\tcodec\tcalls\treq bytes\tWRU\tRRU\tkit CPU\tDynamoDB $\t"
	for _, m := range bench.LambdaMemories {
		head += fmt.Sprintf("Lambda %d MB $\t", m)
	}
	fmt.Fprintln(tw, head+fmt.Sprintf("total $ (%d MB)\t", bench.VCPUMemory))
	for _, c := range costs {
		ddb, _ := p.Dollars(c, bench.VCPUMemory)
		line := fmt.Sprintf("%s\t%s\t%s\t%d\t%d\t%g\t%g\t%s\t%.4f\t", c.Path, size(c.Size), c.Codec, c.Units.Calls, c.Units.Bytes, c.Units.Write, c.Units.Read, dur(c.CPU), ddb)
		var total float64
		for _, m := range bench.LambdaMemories {
			_, l := p.Dollars(c, m)
			line += fmt.Sprintf("%.4f\t", l)
			if m == bench.VCPUMemory {
				total = ddb + l
			}
		}
		fmt.Fprintln(tw, line+fmt.Sprintf("%.4f\t", total))
	}
	tw.Flush()
	for _, c := range costs {
		if c.Units.Unreported > 0 {
			fmt.Fprintf(w, "\n%s %s %s: %d answers carried no consumed capacity: its units are short of the bill\n", c.Path, size(c.Size), c.Codec, c.Units.Unreported)
		}
	}
}

// cheapest returns, for path and size, the cheapest codecs at 1,769 MB
// (and so at 512 MB) among costs.
func cheapest(p bench.Prices, costs []bench.Cost, path string, size int) []string {
	var these []bench.Cost
	for _, c := range costs {
		if c.Path == path && c.Size == size {
			these = append(these, c)
		}
	}
	return p.Cheapest(these, bench.VCPUMemory)
}

// cheapestLines prints the cheapest codec at each size, for the paths
// that store or read the body, and what the default store chose there.
func cheapestLines(w io.Writer, p bench.Prices, costs []bench.Cost, chosen map[int]string) {
	fmt.Fprintf(w, "cheapest (total at %d MB; within $%g per million of each other counts as the same):\n", bench.VCPUMemory, bench.Tie)
	for _, size := range bench.CostSizes {
		f, r := cheapest(p, costs, "fresh", size), cheapest(p, costs, "replay", size)
		fmt.Fprintf(w, "  %5s: fresh %s, replay %s; the default store (dynamo.Options{}) stores it as %s\n", size1(size), strings.Join(f, " = "), strings.Join(r, " = "), chosen[size])
	}
}

// defaultVerdict prints whether the default store's choice at each size
// is among the cheapest there, fresh and replay.
func defaultVerdict(w io.Writer, cr *costResult) {
	if cr == nil {
		return
	}
	p := opts.prices
	var off []string
	for _, size := range bench.CostSizes {
		for _, path := range []string{"fresh", "replay"} {
			if c := cheapest(p, cr.costs, path, size); !slices.Contains(c, cr.chosen[size]) {
				off = append(off, fmt.Sprintf("%s %s: %s, cheapest %s", path, size1(size), cr.chosen[size], strings.Join(c, " = ")))
			}
		}
	}
	fmt.Fprintf(w, "the default codec is the cheapest at every size, fresh and replay (%s): %s\n", cr.server, verdict(len(off) == 0))
	for _, o := range off {
		fmt.Fprintf(w, "  %s\n", o)
	}
}

// price is a price as written, without an exponent.
func price(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// size1 is size for a sentence: "200 B", "4 KB".
func size1(n int) string {
	if n >= 1<<10 {
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
