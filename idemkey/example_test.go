package idemkey_test

import (
	"fmt"

	"github.com/idemkit/idemkit/idemkey"
)

func ExampleParse() {
	for _, v := range []string{`abc`, `"abc"`, `"a b"`, `a b`} {
		k, err := idemkey.Parse([]string{v}, idemkey.Options{})
		fmt.Printf("%q -> %q %v\n", v, k, err)
	}
	// Output:
	// "abc" -> "abc" <nil>
	// "\"abc\"" -> "abc" <nil>
	// "\"a b\"" -> "a b" <nil>
	// "a b" -> "" idemkit: invalid Idempotency-Key: character not allowed in a key: a space at offset 1 of a bare key (send a key with spaces quoted: "\"a b\"")
}

func ExampleParse_joinedLines() {
	// API Gateway v2 joins header lines with commas: the same key sent
	// bare and quoted is still one key.
	k, err := idemkey.Parse([]string{`0190a1b2-40d5-43e8-bc93-6894a57f9324, "0190a1b2-40d5-43e8-bc93-6894a57f9324"`}, idemkey.Options{})
	fmt.Println(k, err)
	// Output:
	// 0190a1b2-40d5-43e8-bc93-6894a57f9324 <nil>
}
