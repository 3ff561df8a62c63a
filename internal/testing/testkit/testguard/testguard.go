// Package testguard builds the guards tests run their handlers behind,
// failing the test when the Config is refused. It is apart from testkit
// so that the idemkit package's own tests can use testkit.
package testguard

import (
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/memstore"
)

// New returns the guard cfg describes, failing t when idemkit.New
// refuses it.
func New(t testing.TB, cfg idemkit.Config) *idemkit.Guard {
	t.Helper()
	g, err := idemkit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Mem returns a guard over a fresh in-memory store, with every other
// setting at its default.
func Mem(t testing.TB) *idemkit.Guard {
	t.Helper()
	return New(t, idemkit.Config{Store: memstore.New()})
}
