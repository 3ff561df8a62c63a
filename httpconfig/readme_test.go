package httpconfig_test

import (
	"testing"

	"github.com/idemkit/idemkit/internal/testing/readmetest"
)

// TestReadmeExample: README.md's hooks snippet is ExampleSettings's
// Settings, so that it compiles.
func TestReadmeExample(t *testing.T) {
	readmetest.InExample(t, "../README.md", "settings := httpconfig.Settings{", "example_test.go")
}
