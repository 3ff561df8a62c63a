//go:build !localstack

package dynalite

import (
	"context"
	"strings"
	"testing"
)

func TestStartBackendUnknownServer(t *testing.T) {
	t.Setenv(EnvServer, "dynamodb-local")
	_, _, err := startBackend(context.Background())
	if err == nil || !strings.Contains(err.Error(), `"dynamodb-local"`) || !strings.Contains(err.Error(), ServerMoto) {
		t.Fatalf("startBackend with %s=dynamodb-local: err = %v, want one naming the value and the choices", EnvServer, err)
	}
	if got := backendName(); got != "dynamodb-local" {
		t.Fatalf("backendName = %q", got)
	}
}
