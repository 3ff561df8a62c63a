package batch_test

import (
	"os"
	"testing"

	"github.com/idemkit/idemkit/internal/testing/dynalite"
	"github.com/idemkit/idemkit/lambda/batch"
)

// TestMain runs the tests as the function "shipper", as Lambda would
// (the wrappers with an empty Operation name the consumer by it), and
// stops the shared dynalite server of the DynamoDB tests.
func TestMain(m *testing.M) {
	os.Setenv(batch.EnvFunctionName, "shipper")
	dynalite.Main(m)
}
