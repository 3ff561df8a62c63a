// Package integration holds end-to-end tests of idemkit against a real
// DynamoDB-compatible server: dynalite, started by internal/testing/dynalite, or
// the server IDEMKIT_DYNAMODB_ENDPOINT names (`make test-localstack`:
// LocalStack). It is a module of its own, so its test-only dependencies stay
// out of the graph of modules that depend on idemkit.
package integration

import (
	"testing"

	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

func TestMain(m *testing.M) { dynalite.Main(m) }
