package testpayload

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

func TestAPIJSON(t *testing.T) {
	for _, n := range append([]int{120, 121, 1000, 1500}, Sizes...) {
		b := APIJSON(n)
		if len(b) != n || !json.Valid(b) {
			t.Fatalf("APIJSON(%d): %d bytes, valid %v", n, len(b), json.Valid(b))
		}
		if !bytes.Equal(b, APIJSON(n)) {
			t.Fatalf("APIJSON(%d) is not deterministic", n)
		}
	}
	var v struct{ Data []map[string]any }
	if err := json.Unmarshal(APIJSON(64<<10), &v); err != nil || len(v.Data) < 40 {
		t.Fatalf("APIJSON(64 KB): %d records, %v; want a list of charges", len(v.Data), err)
	}
}
