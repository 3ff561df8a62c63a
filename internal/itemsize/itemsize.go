// Package itemsize counts a DynamoDB item's size and capacity units as
// DynamoDB does: the one rule the store's item cap and the lab's cost
// table both use, checked against the test servers' consumed capacity.
package itemsize

import (
	"math"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Of returns the size of item: each attribute is its name's length plus
// its value's size; a string or binary value is its length, a number its
// Number size, a boolean or null one byte, a set the sum of its
// elements, and a list or map 3 bytes plus one byte per element and each
// element's size (a map's with its name).
func Of(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + value(v)
	}
	return n
}

func value(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return Number(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		return sum(v.Value, func(s string) int { return len(s) })
	case *types.AttributeValueMemberNS:
		return sum(v.Value, Number)
	case *types.AttributeValueMemberBS:
		return sum(v.Value, func(b []byte) int { return len(b) })
	case *types.AttributeValueMemberL:
		return 3 + sum(v.Value, func(e types.AttributeValue) int { return 1 + value(e) })
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + value(e)
		}
		return n
	}
	return 0
}

func sum[T any](vs []T, size func(T) int) int {
	n := 0
	for _, v := range vs {
		n += size(v)
	}
	return n
}

// Number returns the size of a number: its digits in base-100 pairs
// aligned on the decimal point, from the first pair holding a non-zero
// digit to the last, plus one byte, plus one for a negative number; zero
// is one byte. (dynalite and DynamoDB Local agree on it; DynamoDB's
// documented "one byte per two significant digits, plus one" is its
// approximation.) It allocates nothing.
func Number(s string) int {
	neg := len(s) > 0 && s[0] == '-'
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	mant, point := split(s)
	first, last, ok := nonZeroPlaces(mant, point)
	if !ok {
		return 1
	}
	n := 1 + (first>>1 - last>>1 + 1)
	if neg {
		n++
	}
	return n
}

// split returns the mantissa of the unsigned number s and the place of its
// decimal point among the mantissa's digits, moved by the exponent.
func split(s string) (mant string, point int) {
	mant, exp := s, 0
	for i := 0; i < len(s); i++ {
		if s[i] == 'e' || s[i] == 'E' {
			mant = s[:i]
			exp, _ = strconv.Atoi(s[i+1:])
			break
		}
	}
	point = len(mant)
	for i := 0; i < len(mant); i++ {
		if mant[i] == '.' {
			point = i
		}
	}
	return mant, point + exp
}

// nonZeroPlaces returns the places of the first and the last non-zero
// digit of mant (the digit just before the point has place 0, the one
// after it -1), false when there is none.
func nonZeroPlaces(mant string, point int) (first, last int, ok bool) {
	digit := 0
	for i := 0; i < len(mant); i++ {
		switch c := mant[i]; {
		case c == '.':
			continue
		case c != '0':
			place := point - 1 - digit
			if !ok {
				first, ok = place, true
			}
			last = place
		}
		digit++
	}
	return first, last, ok
}

// WriteUnits is what a write of an item of size bytes is billed: one
// unit per KB, rounded up, at least one.
func WriteUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

// ReadUnits is what a strongly consistent read of an item of size bytes
// is billed: one unit per 4 KB, rounded up, at least one.
func ReadUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/4096)) }
