package memstore_test

import (
	"testing"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/memstore"
	"github.com/idemkit/idemkit/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) idemkit.OperatorStore { return memstore.New() })
}
