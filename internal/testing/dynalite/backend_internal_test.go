//go:build !localstack

package dynalite

import (
	"context"
	"strings"
	"testing"
)

func TestStartBackendUnknownServer(t *testing.T) {
	t.Setenv(EnvServer, "cassandra")
	_, _, err := startBackend(context.Background())
	if err == nil || !strings.Contains(err.Error(), `"cassandra"`) || !strings.Contains(err.Error(), ServerMoto) || !strings.Contains(err.Error(), ServerDynamoDBLocal) {
		t.Fatalf("startBackend with %s=cassandra: err = %v, want one naming the value and the choices", EnvServer, err)
	}
	if got := backendName(); got != "cassandra" {
		t.Fatalf("backendName = %q", got)
	}
}
