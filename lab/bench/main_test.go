package bench

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idemkit/idemkit/dynamo"
	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

func TestMain(m *testing.M) { dynalite.Main(m) }

// serverTable returns a client of the test server (dynalite, or the
// server IDEMKIT_TEST_SERVER names) and a fresh table of the store's
// layout on it, for tests of what the server itself counts.
func serverTable(t testing.TB) (*dynamodb.Client, string) {
	t.Helper()
	client := dynalite.Client(t)
	table := dynamo.TableDefinition(dynalite.TableName(t), dynamo.Options{})
	return client, dynalite.CreateTable(t, client, table)
}
