package batch_test

import (
	"testing"

	"github.com/idemkit/idemkit/internal/testing/readmetest"
)

// TestReadmeExample: README.md's lambda/batch snippet is ExampleSQS's
// lambda.Start call, so that it compiles.
func TestReadmeExample(t *testing.T) {
	readmetest.InExample(t, "../../README.md", "lambda.Start(batch.SQS(", "example_test.go")
}

// TestBatchDocExample: docs/BATCH.md's snippet is ExampleSQS's body, so
// that it compiles (its json tag included).
func TestBatchDocExample(t *testing.T) {
	readmetest.InExample(t, "../../docs/BATCH.md", "g, _ := idemkit.New(", "example_test.go")
}
