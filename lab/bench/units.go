package bench

import (
	"math"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemSize returns the size of item by DynamoDB's rules, written here
// apart from the store's own count so that the cost table does not take
// the store's word: each attribute is its name's length plus its value's
// size; a string or binary value is its length, a number about one byte
// per two significant digits plus one, a boolean or null one byte, a
// set the sum of its elements, and a list or map 3 bytes plus one byte
// per element and each element's size (a map's with its name).
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + attrSize(v)
	}
	return n
}

func attrSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numSize(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + attrSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + attrSize(e)
		}
		return n
	}
	return 0
}

// numSize is a number's size as DynamoDB stores it: its digits in
// base-100 pairs aligned on the decimal point, leading and trailing zero
// pairs dropped, plus one byte, plus one for a negative number. (Measured on dynalite and DynamoDB Local, which agree; the
// documentation's "one byte per two significant digits, plus one" is the
// approximation of it.)
func numSize(s string) int {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		exp, _ = strconv.Atoi(s[i+1:])
		s = s[:i]
	}
	whole, frac, _ := strings.Cut(s, ".")
	// Move the point by the exponent: the digits stay, their alignment
	// changes.
	for ; exp > 0; exp-- {
		if frac != "" {
			whole, frac = whole+frac[:1], frac[1:]
		} else {
			whole += "0"
		}
	}
	for ; exp < 0; exp++ {
		if whole != "" {
			whole, frac = whole[:len(whole)-1], whole[len(whole)-1:]+frac
		} else {
			frac = "0" + frac
		}
	}
	if len(whole)%2 == 1 {
		whole = "0" + whole
	}
	if len(frac)%2 == 1 {
		frac += "0"
	}
	digits := whole + frac
	for len(digits) >= 2 && digits[:2] == "00" {
		digits = digits[2:]
	}
	for len(digits) >= 2 && digits[len(digits)-2:] == "00" {
		digits = digits[:len(digits)-2]
	}
	if digits == "" {
		return 1
	}
	n := 1 + len(digits)/2
	if neg {
		n++
	}
	return n
}

// WriteUnits is what a write of an item of size bytes is billed: one
// unit per KB, rounded up, at least one.
func WriteUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

// ReadUnits is what a strongly consistent read of an item of size bytes
// is billed: one unit per 4 KB, rounded up, at least one.
func ReadUnits(size int) float64 { return math.Max(1, math.Ceil(float64(size)/4096)) }
