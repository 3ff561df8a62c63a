//go:build !localstack

package dynalite

import "context"

// startBackend starts the server Endpoint shares: dynalite, unless the
// package is built with the tag localstack.
func startBackend(ctx context.Context) (endpoint string, stop func() error, err error) {
	s, err := Start(ctx)
	if err != nil {
		return "", nil, err
	}
	return s.Endpoint(), s.Stop, nil
}
