package dynalite

import "context"

// startBackend starts the server Endpoint shares: dynalite. Other servers
// (LocalStack, DynamoDB Local) are used through IDEMKIT_DYNAMODB_ENDPOINT.
func startBackend(ctx context.Context) (endpoint string, stop func() error, err error) {
	s, err := Start(ctx)
	if err != nil {
		return "", nil, err
	}
	return s.Endpoint(), s.Stop, nil
}
