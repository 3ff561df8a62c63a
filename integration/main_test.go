// Package integration holds end-to-end tests of idemkit against a real
// DynamoDB-compatible server: dynalite, started by internal/dynalite, or
// the server IDEMKIT_DYNAMODB_ENDPOINT names, or LocalStack with the tag
// localstack.
package integration

import (
	"testing"

	"github.com/idemkit/idemkit/internal/dynalite"
)

func TestMain(m *testing.M) { dynalite.Main(m) }
