package bench

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestJSON(t *testing.T) {
	for _, n := range append([]int{160, 161, 1000}, Sizes...) {
		b := JSON(n)
		if len(b) != n || !json.Valid(b) {
			t.Fatalf("JSON(%d): %d bytes, valid %v", n, len(b), json.Valid(b))
		}
		if !bytes.Equal(b, JSON(n)) {
			t.Fatalf("JSON(%d) is not deterministic", n)
		}
	}
}
