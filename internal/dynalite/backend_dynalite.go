package dynalite

import (
	"context"
	"fmt"
	"os"
)

// startBackend starts the server Endpoint shares: dynalite, or moto_server
// when IDEMKIT_TEST_SERVER=moto. Other servers (LocalStack, DynamoDB Local)
// are used through IDEMKIT_DYNAMODB_ENDPOINT.
func startBackend(ctx context.Context) (endpoint string, stop func() error, err error) {
	var s *Server
	switch v := os.Getenv(EnvServer); v {
	case "", ServerDynalite:
		s, err = Start(ctx)
	case ServerMoto:
		s, err = StartMoto(ctx)
	default:
		return "", nil, fmt.Errorf("dynalite: %s=%q: want %q or %q", EnvServer, v, ServerDynalite, ServerMoto)
	}
	if err != nil {
		return "", nil, err
	}
	return s.Endpoint(), s.Stop, nil
}

func backendName() string {
	if v := os.Getenv(EnvServer); v != "" {
		return v
	}
	return ServerDynalite
}
