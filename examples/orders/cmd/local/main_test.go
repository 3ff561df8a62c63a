package main

import (
	"testing"

	"github.com/idemkit/idemkit/examples/orders"
)

func TestConcurrencyFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int
		ok   bool
	}{
		{"", orders.DefaultLocalConcurrency, true},
		{"1", 1, true},
		{"500", 500, true},
		{"0", 0, false},
		{"-3", 0, false},
		{"lots", 0, false},
		{"8.5", 0, false},
	} {
		got, err := concurrencyFromEnv(func(k string) string {
			if k == orders.EnvLocalConcurrency {
				return tc.env
			}
			return ""
		})
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%s=%q: %d, %v; want %d, ok %v", orders.EnvLocalConcurrency, tc.env, got, err, tc.want, tc.ok)
		}
	}
}
