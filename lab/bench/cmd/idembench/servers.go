package main

import (
	"archive/zip"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/lab/bench"
)

// target is a server measured, with a table of its own, and what was
// measured on it.
type target struct {
	name   string
	client *dynamodb.Client
	table  string
	// rows, allOld, worst and runs are its per-request rows, whether it
	// returns the item with a failed conditional write, the worst
	// overhead ratio of each codec and every ratio run.
	rows   []bench.Row
	allOld bool
	worst  map[dynamo.Codec]ratioAt
	runs   [][]bench.Row
}

// open makes t's client for endpoint and a table on it.
func (t *target) open(ctx context.Context, endpoint string) error {
	c, err := dynalite.NewClient(ctx, endpoint)
	if err != nil {
		return err
	}
	t.client, t.table = c, fmt.Sprintf("idembench-%d", time.Now().UnixNano())
	if err := dynamo.CreateTable(ctx, c, t.table, dynamo.Options{}); err != nil {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	return nil
}

// startDynamoDBLocal starts DynamoDB Local when opts say so and java is
// on PATH, and returns it as a target with a stop function; or nil and
// why it was not measured, in one line.
func startDynamoDBLocal(ctx context.Context) (*target, func(), string, error) {
	if !opts.ddbLocal {
		return nil, func() {}, "-dynamodb-local=false", nil
	}
	fmt.Fprintln(os.Stderr, "idembench: starting DynamoDB Local...")
	srv, err := dynalite.StartDynamoDBLocal(ctx)
	if errors.Is(err, dynalite.ErrUnavailable) {
		return nil, func() {}, err.Error(), nil
	}
	if err != nil {
		return nil, nil, "", err
	}
	t := &target{name: "DynamoDB Local " + ddbLocalVersion()}
	if err := t.open(ctx, srv.Endpoint()); err != nil {
		_ = srv.Stop()
		return nil, nil, "", err
	}
	return t, func() { _ = srv.Stop() }, "", nil
}

// ddbLocalVersion returns the version of the DynamoDB Local jar, read
// from its Maven properties, or "(version unknown)".
func ddbLocalVersion() string {
	dir, err := dynalite.DynamoDBLocalDir()
	if err != nil {
		return "(version unknown)"
	}
	r, err := zip.OpenReader(filepath.Join(dir, "DynamoDBLocal.jar"))
	if err != nil {
		return "(version unknown)"
	}
	defer r.Close()
	for _, f := range r.File {
		if !strings.HasSuffix(f.Name, "/DynamoDBLocal/pom.properties") {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			break
		}
		defer rc.Close()
		sc := bufio.NewScanner(rc)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "version="); ok {
				return v
			}
		}
	}
	return "(version unknown)"
}

// startMoto starts moto_server where it is on PATH; without it, nil and
// why, in one line.
func startMoto(ctx context.Context) (*dynalite.Server, string, error) {
	srv, err := dynalite.StartMoto(ctx)
	if errors.Is(err, dynalite.ErrUnavailable) {
		return nil, err.Error(), nil
	}
	return srv, "", err
}

// shapesOn are the request shapes timed on one server, or why not.
type shapesOn struct {
	server  string
	rows    []bench.ShapeRow
	skipped string
}

// completeAlts are the conditions the completion is timed with beside
// the store's own: the one it had before it was shortened.
var completeAlts = []bench.Alt{{
	Name:   "previous",
	Cond:   "ow = :o AND #exp > :n AND (st = :inflight OR st = :indeterminate OR (st = :completed AND attribute_not_exists(ra)))",
	Values: bench.StateValues(":inflight", ":indeterminate", ":completed"),
}}

// shapes times each request shape on dynalite, DynamoDB Local and moto,
// those that run, and prints a table per server.
func shapes(ctx context.Context, w io.Writer, main, local *target, moto *dynalite.Server, skipLocal, skipMoto string) ([]shapesOn, error) {
	bench.ShapeAlts["complete"] = completeAlts
	var out []shapesOn
	on := func(name string, client *dynamodb.Client, table string, n int) error {
		fmt.Fprintf(os.Stderr, "idembench: request shapes on %s...\n", name)
		start := time.Now()
		rows, err := bench.MeasureShapes(ctx, client, table, n)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, shapesOn{server: name, rows: rows})
		fmt.Fprintf(w, "\n## Request shapes (%s; each the store's request re-sent under fresh keys in the state it finds, %d rounds, %s)\n\n", name, n, time.Since(start).Round(time.Second))
		shapeTable(w, rows)
		return nil
	}
	if err := on(main.name, main.client, main.table, opts.shapesN); err != nil {
		return nil, err
	}
	if local != nil {
		if err := on(local.name, local.client, local.table, opts.shapesN); err != nil {
			return nil, err
		}
	} else {
		out = append(out, shapesOn{server: "DynamoDB Local", skipped: skipLocal})
		fmt.Fprintf(w, "\n## Request shapes on DynamoDB Local: not measured (%s)\n", skipLocal)
	}
	if moto != nil {
		mt := &target{name: "moto " + bench.MotoVersion(ctx)}
		if err := mt.open(ctx, moto.Endpoint()); err != nil {
			return nil, err
		}
		if err := on(mt.name, mt.client, mt.table, max(10, opts.shapesN/3)); err != nil {
			return nil, err
		}
	} else {
		out = append(out, shapesOn{server: "moto", skipped: skipMoto})
		fmt.Fprintf(w, "\n## Request shapes on moto: not measured (%s)\n", skipMoto)
	}
	fmt.Fprintln(w, "\ncondition: the request's ConditionExpression, by length; without: the same request with no condition (what the condition")
	fmt.Fprintln(w, "costs the server is p50 - without); the completion is also timed with the condition it had before it was shortened.")
	return out, nil
}

func shapeTable(w io.Writer, rows []bench.ShapeRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shape\tcall\tcondition\tp50\tp90\twithout p50\tcondition costs\t")
	for _, r := range rows {
		cond, without, costs := "-", "-", "-"
		if r.Cond != "" {
			cond, without, costs = fmt.Sprintf("%d chars", len(r.Cond)), dur(r.NoCondP50), dur(r.P50-r.NoCondP50)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Shape, r.Call, cond, dur(r.P50), dur(r.P90), without, costs)
		for _, a := range r.Alts {
			fmt.Fprintf(tw, "%s, %s condition\t%s\t%d chars\t%s\t%s\t%s\t%s\t\n", r.Shape, a.Name, r.Call, len(a.Cond), dur(a.P50), dur(a.P90), dur(r.NoCondP50), dur(a.P50-r.NoCondP50))
		}
	}
	tw.Flush()
}

// compressCauses times what compressing a 64 KB body costs in each of
// bench.Causes, on t, and prints the table.
func compressCauses(ctx context.Context, w io.Writer, t *target, n int) ([]bench.CauseRow, error) {
	fmt.Fprintf(os.Stderr, "idembench: compressing 64 KB in each situation...\n")
	start := time.Now()
	rows, err := bench.CompressCauses(ctx, t.client, t.table, n, []int{64 << 10})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "\n## Compressing a 64 KB body, by situation (median wall time of %d rounds, the situations taking turns; round trips to %s; %s)\n\n", n, t.name, time.Since(start).Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "situation\tzstd\tx loop\ts2\tx loop\t")
	by := map[string]map[string]bench.CauseRow{}
	for _, r := range rows {
		if by[r.Cause] == nil {
			by[r.Cause] = map[string]bench.CauseRow{}
		}
		by[r.Cause][r.Codec] = r
	}
	for _, c := range bench.Causes {
		z, s := by[c]["zstd"], by[c]["s2"]
		zr, sr := fmt.Sprintf("%.2f", z.Ratio), fmt.Sprintf("%.2f", s.Ratio)
		if !bench.IsCompression(c) {
			zr, sr = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", c, dur(z.Wall), zr, dur(s.Wall), sr)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nloop: right after compressing the same body; fresh encoder: one made for the body and dropped (no pool);")
	fmt.Fprintln(w, "after a system call: right after one getppid; after parking: after the goroutine slept 2 ms; after a round trip:")
	fmt.Fprintln(w, "after a PutItem of the compressed item; after evicting the caches: after writing 64 MB; beside a busy process: a")
	fmt.Fprintln(w, "loop compression while a process spins on the CPU; copy and base64: of the compressed body, as the item and the")
	fmt.Fprintln(w, "SDK's JSON hold it. The real path's own figure is the z in situ column of the per-request table.")
	return rows, nil
}
