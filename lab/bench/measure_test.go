package bench

import (
	"context"
	"testing"

	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

// TestMeasureCost: on the test server, every path, size and codec gets a
// cost; the units are the server's (the store's calls, a compressed body
// fewer write units than one stored as is), and a replay is one call
// where the server returns the item with a refusal, two where it does
// not.
func TestMeasureCost(t *testing.T) {
	dynalite.Require(t, dynalite.FaithfulCapacity)
	client, table := serverTable(t)
	sizes := []int{200, 4 << 10}
	costs, err := MeasureCost(context.Background(), client, table, 2, CostPaths, sizes)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(CostPaths) * len(sizes) * len(CostCodecs); len(costs) != want {
		t.Fatalf("%d costs, want %d", len(costs), want)
	}
	replayCalls := 2
	if dynalite.Has(t, dynalite.AllOldOnConditionFailure) {
		replayCalls = 1
	}
	by := map[string]Cost{}
	for _, c := range costs {
		by[c.Path+"/"+c.Codec+"/"+sizeKey(c.Size)] = c
		if c.Units.Unreported != 0 || c.Units.Write < 1 || c.CPU <= 0 {
			t.Errorf("%s %d %s: %+v, want reported units, a write, some CPU", c.Path, c.Size, c.Codec, c)
		}
	}
	if z, raw := by["fresh/zstd/4096"], by["fresh/none/4096"]; z.Units.Write >= raw.Units.Write {
		t.Errorf("fresh 4 KB: zstd %g write units, none %g; want fewer compressed", z.Units.Write, raw.Units.Write)
	}
	for _, k := range []string{"replay/zstd/200", "replay/none/4096", "conflict/s2/4096"} {
		if c := by[k]; c.Units.Calls != replayCalls {
			t.Errorf("%s: %d calls, want %d on this server", k, c.Units.Calls, replayCalls)
		}
	}
	for _, k := range []string{"fresh/none/200", "replay/none/200", "conflict/none/200", "error/none/200"} {
		t.Logf("%s: %d calls, %d request bytes", k, by[k].Units.Calls, by[k].Units.Bytes)
	}
	chosen, err := DefaultCodec(context.Background(), client, table, sizes)
	if err != nil {
		t.Fatal(err)
	}
	if chosen[200] != "none" || chosen[4<<10] != "zstd" {
		t.Errorf("the default store chose %v, want none at 200 B and zstd at 4 KB", chosen)
	}
}

func sizeKey(n int) string {
	return map[int]string{200: "200", 4 << 10: "4096"}[n]
}

// TestMeasureShapes: every shape is the store's request of its kind, on
// the state its path finds (none refused), with its condition and the
// previous completion condition timed beside it.
func TestMeasureShapes(t *testing.T) {
	client, table := serverTable(t)
	ShapeAlts["complete"] = []Alt{{Name: "previous",
		Cond:   "ow = :o AND #exp > :n AND (st = :inflight OR st = :indeterminate OR (st = :completed AND attribute_not_exists(ra)))",
		Values: StateValues(":inflight", ":indeterminate", ":completed")}}
	defer delete(ShapeAlts, "complete")
	rows, err := MeasureShapes(context.Background(), client, table, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"claim": "PutItem", "complete": "UpdateItem", "release": "UpdateItem", "extend": "UpdateItem",
		"mark": "UpdateItem", "resolve": "UpdateItem", "get": "GetItem", "list": "Query"}
	if len(rows) != len(Shapes) {
		t.Fatalf("%d rows, want %d", len(rows), len(Shapes))
	}
	for _, r := range rows {
		if r.Call != want[r.Shape] || r.P50 <= 0 {
			t.Errorf("%s: %s, p50 %v; want %s timed", r.Shape, r.Call, r.P50, want[r.Shape])
		}
		if hasCond := r.Call == "PutItem" || r.Call == "UpdateItem"; hasCond != (r.Cond != "" && r.NoCondP50 > 0) {
			t.Errorf("%s: condition %q, without it %v", r.Shape, r.Cond, r.NoCondP50)
		}
		if (r.Shape == "complete") != (len(r.Alts) == 1 && r.Alts[0].P50 > 0) {
			t.Errorf("%s: alternatives %+v", r.Shape, r.Alts)
		}
	}
}

// TestCompressCauses: each situation is timed for each codec, and its
// ratio is to the loop's.
func TestCompressCauses(t *testing.T) {
	client, table := serverTable(t)
	rows, err := CompressCauses(context.Background(), client, table, 3, []int{4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*len(Causes) {
		t.Fatalf("%d rows, want %d", len(rows), 2*len(Causes))
	}
	for _, r := range rows {
		if r.Wall <= 0 || r.Cause == "loop" && r.Ratio != 1 {
			t.Errorf("%+v", r)
		}
	}
}
