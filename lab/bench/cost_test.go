package bench

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idemkit/idemkit/internal/itemsize"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

// TestLambdaPrice: the kit's CPU is billed for the time it takes on the
// function: below 1,769 MB stretched by the function's share of a vCPU,
// so that it costs the same at every size up to one vCPU and more above.
func TestLambdaPrice(t *testing.T) {
	p := Prices{GBSecond: 0.0000166667}
	oneVCPU := 1e6 * 0.0000166667 * 1769 / 1024 * 0.001 // 1 ms at 1,769 MB, per million
	for _, tc := range []struct {
		cpu  time.Duration
		mem  int
		wall time.Duration
		usd  float64
	}{
		{time.Millisecond, 1769, time.Millisecond, oneVCPU},
		{time.Millisecond, 512, 3455078 * time.Nanosecond, oneVCPU},
		{time.Millisecond, 3538, time.Millisecond, 2 * oneVCPU},
		{100 * time.Microsecond, 1769, 100 * time.Microsecond, oneVCPU / 10},
		{0, 512, 0, 0},
	} {
		if w := Wall(tc.cpu, tc.mem); w != tc.wall {
			t.Errorf("Wall(%v, %d MB) = %v, want %v", tc.cpu, tc.mem, w, tc.wall)
		}
		if got := p.Lambda(tc.cpu, tc.mem); !near(got, tc.usd) {
			t.Errorf("Lambda(%v, %d MB) = $%g per million, want $%g", tc.cpu, tc.mem, got, tc.usd)
		}
	}
}

// TestDynamoDBPrice: request units at their on-demand prices, per
// million requests; a half read unit (an eventually consistent read) at
// half the price.
func TestDynamoDBPrice(t *testing.T) {
	p := Prices{WriteUnit: 0.625, ReadUnit: 0.125}
	for _, tc := range []struct{ r, w, usd float64 }{
		{0, 2, 1.25}, {1, 1, 0.75}, {0.5, 0, 0.0625}, {11, 12, 8.875}, {0, 0, 0},
	} {
		if got := p.DynamoDB(tc.r, tc.w); !near(got, tc.usd) {
			t.Errorf("DynamoDB(%g read, %g write) = $%g, want $%g", tc.r, tc.w, got, tc.usd)
		}
	}
}

// TestCheapest: the cheapest choice, with every other within Tie of it
// or within twice the standard error of their CPU; request units decide
// where they differ, CPU where they do not and it was told apart.
func TestCheapest(t *testing.T) {
	p := Prices{WriteUnit: 0.625, ReadUnit: 0.125, GBSecond: 0.0000166667}
	c := func(codec string, w float64, cpu, se time.Duration) Cost {
		return Cost{Codec: codec, Units: Units{Write: w}, CPU: cpu, CPUErr: se}
	}
	us := time.Microsecond
	for _, tc := range []struct {
		name  string
		costs []Cost
		want  []string
	}{
		{"a write unit outweighs a millisecond", []Cost{c("zstd", 12, 1000*us, 0), c("s2", 18, 100*us, 0), c("none", 66, 0, 0)}, []string{"zstd"}},
		{"same units, CPU within the tie", []Cost{c("zstd", 2, 30*us, 0), c("s2", 2, 25*us, 0), c("none", 2, 20*us, 0)}, []string{"zstd", "s2", "none"}},
		{"same units, CPU told apart", []Cost{c("zstd", 2, 200*us, 10*us), c("none", 2, 20*us, 10*us)}, []string{"none"}},
		{"same units, CPU within its noise", []Cost{c("zstd", 2, 200*us, 100*us), c("none", 2, 20*us, 50*us)}, []string{"zstd", "none"}},
		{"noise does not bridge a write unit", []Cost{c("zstd", 2, 200*us, 100*us), c("none", 3, 20*us, 100*us)}, []string{"zstd"}},
		{"one cost", []Cost{c("none", 1, 0, 0)}, []string{"none"}},
	} {
		if got := p.Cheapest(tc.costs, VCPUMemory); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Cheapest = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestMeanErr: the mean of a sample and its standard error.
func TestMeanErr(t *testing.T) {
	us := time.Microsecond
	m, se := meanErr([]time.Duration{10 * us, 20 * us, 30 * us})
	// s = 10 µs, se = s / sqrt(3).
	if m != 20*us || se != time.Duration(float64(10*us)/1.7320508075688772) {
		t.Errorf("meanErr = %v, %v; want 20µs, %v", m, se, time.Duration(float64(10*us)/1.7320508075688772))
	}
	if m, se := meanErr([]time.Duration{5 * us}); m != 5*us || se != 0 {
		t.Errorf("meanErr of one = %v, %v; want 5µs, 0", m, se)
	}
}

// TestUnitsAsServerCounts: the write units of items of every attribute
// type, on each side of the 1 KB line, are what the server counts for
// writing them, and their read units what it counts for reading them
// back; so the cost table's count of a refused write (not reported by
// the server) is the server's rule.
func TestUnitsAsServerCounts(t *testing.T) {
	dynalite.Require(t, dynalite.FaithfulCapacity)
	client, table := serverTable(t)
	ctx := context.Background()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
	// item returns an item of every type whose ItemSize is size.
	item := func(pk string, size int) map[string]types.AttributeValue {
		it := map[string]types.AttributeValue{
			"pk": s(pk), "n": n("1764646464123"), "f": n("-12.50"), "z": n("0"), "e": n("1700000000000"), "ok": &types.AttributeValueMemberBOOL{Value: true},
			"ns": &types.AttributeValueMemberNS{Value: []string{"3", "123"}}, "bs": &types.AttributeValueMemberBS{Value: [][]byte{{1, 2}, {3}}},
			"nil": &types.AttributeValueMemberNULL{Value: true}, "ss": &types.AttributeValueMemberSS{Value: []string{"a", "bc"}},
			"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": s("v"), "l": &types.AttributeValueMemberL{Value: []types.AttributeValue{n("3"), s("x"),
				&types.AttributeValueMemberL{}, &types.AttributeValueMemberBOOL{Value: true}}}}},
		}
		it["b"] = &types.AttributeValueMemberB{Value: []byte(strings.Repeat("z", size-itemsize.Of(it)-len("b")))}
		if got := itemsize.Of(it); got != size {
			t.Fatalf("item of %d bytes built as %d", size, got)
		}
		return it
	}
	for _, size := range []int{1024, 1025, 2048, 2049, 4096, 4097} {
		pk := "units-" + strconv.Itoa(size)
		out, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item(pk, size), ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		if err != nil {
			t.Fatal(err)
		}
		if out.ConsumedCapacity == nil {
			t.Skip("the server does not report consumed capacity")
		}
		if got, want := aws.ToFloat64(out.ConsumedCapacity.CapacityUnits), itemsize.WriteUnits(size); got != want {
			t.Errorf("%d-byte item: the server counts %g write units, WriteUnits %g", size, got, want)
		}
		get, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: keyOf(item(pk, size)), ConsistentRead: aws.Bool(true),
			ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := aws.ToFloat64(get.ConsumedCapacity.CapacityUnits), itemsize.ReadUnits(size); got != want {
			t.Errorf("%d-byte item: the server counts %g read units, ReadUnits %g", size, got, want)
		}
	}
}

// TestMeterRefused: a conditional write the server refuses is counted
// by the size of the item that refused it, whether the server returns
// that item with the refusal or the meter reads it afterwards; answered
// writes and reads are counted as the server reports them.
func TestMeterRefused(t *testing.T) {
	dynalite.Require(t, dynalite.FaithfulCapacity)
	client, table := serverTable(t)
	ctx := context.Background()
	m := NewMeter(client, table)
	big := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "meter"}, "b": &types.AttributeValueMemberB{Value: make([]byte, 5000)}}
	put := func(cond string) error {
		in := &dynamodb.PutItemInput{TableName: aws.String(table), Item: big, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
		if cond != "" {
			in.ConditionExpression = aws.String(cond)
		}
		_, err := m.PutItem(ctx, in)
		return err
	}
	if err := put(""); err != nil {
		t.Fatal(err)
	}
	u, err := m.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u.Unreported > 0 {
		t.Skip("the server does not report consumed capacity")
	}
	if want := itemsize.WriteUnits(itemsize.Of(big)); u.Write != want || u.Calls != 1 {
		t.Errorf("answered write: %+v, want %g write units in 1 call", u, want)
	}
	var cf *types.ConditionalCheckFailedException
	if err := put("attribute_not_exists(pk)"); !errors.As(err, &cf) {
		t.Fatalf("refused write: %v, want a condition failure", err)
	}
	if u, err = m.Take(ctx); err != nil {
		t.Fatal(err)
	}
	if want := itemsize.WriteUnits(itemsize.Of(big)); u.Write != want || u.Read != 0 || u.Calls != 1 {
		t.Errorf("refused write of a 5 KB item: %+v, want %g write units, no read, 1 call", u, want)
	}
	// A DeleteItem is a write; a DescribeTable is no item operation.
	if _, err := m.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": big["pk"]},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}); err != nil {
		t.Fatal(err)
	}
	if u, err = m.Take(ctx); err != nil {
		t.Fatal(err)
	}
	if want := itemsize.WriteUnits(itemsize.Of(big)); u.Write != want || u.Read != 0 || u.Calls != 1 {
		t.Errorf("delete of a 5 KB item, then DescribeTable: %+v, want %g write units, no read, 1 call", u, want)
	}
}
