package httpmw

import (
	"testing"

	"github.com/idemkit/idemkit/internal/adapter"
	"github.com/idemkit/idemkit/internal/adapter/adaptertest"
)

// TestConfigParity fails when an option shared by the adapters is missing
// here or not passed on.
func TestConfigParity(t *testing.T) {
	adaptertest.Parity(t, func(c Config) adapter.Options { return c.options() }, nil, []string{"Tenant", "MaxBodyBytes", "MaxResponseBytes"})
}
