package faultstore_test

import (
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/internal/testing/faultstore"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/storetest"
)

// A Store without hooks keeps every guarantee of the store it wraps.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) idemkit.OperatorStore { return faultstore.New(memstore.New()) })
}
