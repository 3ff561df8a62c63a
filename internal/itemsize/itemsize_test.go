package itemsize

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestNumber: a number's size, as dynalite and DynamoDB Local count it
// (each measured on both: the write unit of an item of one number padded
// to 1 KB flips at this size).
func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		n    string
		want int
	}{
		{"0", 1}, {"-0", 1}, {"0.0", 1}, {"7", 2}, {"10", 2}, {"12", 2}, {"99", 2}, {"100", 2}, {"1000", 2}, {"101", 3},
		{"123", 3}, {"1234", 3}, {"-7", 3}, {"-100", 3}, {"0.5", 2}, {"1.5", 3}, {"12.5", 3}, {"12.50", 3}, {"-12.5", 4},
		{"0.001", 2}, {"0.000000000001", 2}, {"1700000000000", 3}, {"1764646464123", 8},
		{"123456789012345678901234567890123456", 19}, {"1.5E3", 2}, {"15e-1", 3}, {"+7", 2}, {"0.10", 2}, {"10.01", 3},
	} {
		if got := Number(tc.n); got != tc.want {
			t.Errorf("Number(%q) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestOf(t *testing.T) {
	str := func(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
	for _, tc := range []struct {
		item map[string]types.AttributeValue
		want int
	}{
		{map[string]types.AttributeValue{"pk": str("abc")}, 5},
		{map[string]types.AttributeValue{"b": &types.AttributeValueMemberB{Value: make([]byte, 10)}}, 11},
		{map[string]types.AttributeValue{"ok": &types.AttributeValueMemberBOOL{Value: true}}, 3},
		{map[string]types.AttributeValue{"n": &types.AttributeValueMemberNULL{Value: true}}, 2},
		{map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "101"}}, 4},
		{map[string]types.AttributeValue{"ss": &types.AttributeValueMemberSS{Value: []string{"ab", "c"}}}, 5},
		{map[string]types.AttributeValue{"ns": &types.AttributeValueMemberNS{Value: []string{"7", "101"}}}, 7},
		{map[string]types.AttributeValue{"bs": &types.AttributeValueMemberBS{Value: [][]byte{{1, 2}, {3}}}}, 5},
		// A list of two one-byte strings: 3 + 2*(1+1).
		{map[string]types.AttributeValue{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{str("a"), str("b")}}}, 1 + 3 + 4},
		// A map {"k": "v"}: 3 + (1 + 1 + 1).
		{map[string]types.AttributeValue{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": str("v")}}}, 1 + 3 + 3},
	} {
		if got := Of(tc.item); got != tc.want {
			t.Errorf("Of(%v) = %d, want %d", tc.item, got, tc.want)
		}
	}
}

func TestUnits(t *testing.T) {
	for _, tc := range []struct {
		size        int
		write, read float64
	}{{0, 1, 1}, {1024, 1, 1}, {1025, 2, 1}, {4096, 4, 1}, {4097, 5, 2}} {
		if w, r := WriteUnits(tc.size), ReadUnits(tc.size); w != tc.write || r != tc.read {
			t.Errorf("size %d: %v write, %v read units; want %v, %v", tc.size, w, r, tc.write, tc.read)
		}
	}
}

// TestNumberAllocatesNothing: the store counts every item it writes.
func TestNumberAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { Number("-1.764646464123e5") }); n != 0 {
		t.Errorf("Number allocates %v times", n)
	}
}
