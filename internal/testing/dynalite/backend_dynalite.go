package dynalite

import (
	"context"
	"fmt"
	"os"
)

// startBackend starts the server Endpoint shares: dynalite, moto_server
// when IDEMKIT_TEST_SERVER=moto, DynamoDB Local when
// IDEMKIT_TEST_SERVER=dynamodb-local. Other servers (LocalStack, DynamoDB)
// are used through IDEMKIT_DYNAMODB_ENDPOINT.
func startBackend(ctx context.Context) (endpoint string, stop func() error, err error) {
	var s *Server
	switch v := os.Getenv(EnvServer); v {
	case "", ServerDynalite:
		s, err = Start(ctx)
	case ServerMoto:
		s, err = StartMoto(ctx)
	case ServerDynamoDBLocal:
		s, err = StartDynamoDBLocal(ctx)
	default:
		return "", nil, fmt.Errorf("dynalite: %s=%q: want %q, %q or %q", EnvServer, v, ServerDynalite, ServerMoto, ServerDynamoDBLocal)
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
