package dynamo_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idemkit"
	"github.com/idemkit/idemkit/dynamo"
)

// TestRegionalConfig: every configuration NewRegional and New refuse is
// an error wrapping idemkit.ErrInvalidConfig, as idemkit.New's are.
func TestRegionalConfig(t *testing.T) {
	c := endpointClient(closedPort(t))
	home := func(string) string { return "eu-west-1" }
	for _, tc := range []struct {
		name  string
		r     dynamo.Regions
		table string
	}{
		{"no clients", dynamo.Regions{Home: home}, "idem"},
		{"no home", dynamo.Regions{Clients: map[string]dynamo.Client{"eu-west-1": c}}, "idem"},
		{"nil client", dynamo.Regions{Clients: map[string]dynamo.Client{"eu-west-1": c, "us-east-1": nil}, Home: home}, "idem"},
		{"empty table", dynamo.Regions{Clients: map[string]dynamo.Client{"eu-west-1": c}, Home: home}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s, err := dynamo.NewRegional(tc.r, tc.table, dynamo.Options{}); !errors.Is(err, idemkit.ErrInvalidConfig) || s != nil {
				t.Fatalf("NewRegional: %v, %v; want ErrInvalidConfig", s, err)
			}
		})
	}
	if _, err := dynamo.New(nil, "idem", dynamo.Options{}); !errors.Is(err, idemkit.ErrInvalidConfig) {
		t.Errorf("New with a nil client: %v, want ErrInvalidConfig", err)
	}
	if _, err := dynamo.New(c, "", dynamo.Options{}); !errors.Is(err, idemkit.ErrInvalidConfig) {
		t.Errorf("New with no table: %v, want ErrInvalidConfig", err)
	}
	// Without Local, or in a region with no client of its own, the store
	// is valid: a process there still claims in its tenants' home
	// regions; only the all-tenant listings fail, with a clear error.
	for _, local := range []string{"", "ap-south-1"} {
		s, err := dynamo.NewRegional(dynamo.Regions{Clients: map[string]dynamo.Client{"eu-west-1": c}, Home: home, Local: local}, "idem", dynamo.Options{})
		if err != nil {
			t.Fatalf("NewRegional with Local %q: %v", local, err)
		}
		if _, _, err := s.ListIndeterminate(context.Background(), "", "", 0, time.Now()); err == nil || !strings.Contains(err.Error(), "local region") {
			t.Fatalf("listing all tenants with Local %q: %v, want an error naming the local region", local, err)
		}
	}
}
