package orders_test

import (
	"os"
	"testing"

	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

func TestMain(m *testing.M) {
	code := dynalite.Run(m)
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}
