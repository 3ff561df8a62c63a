package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/localstack"

	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

// LocalStackImage is the LocalStack image StartLocalStack runs: a pinned
// 4.x community tag, which starts without an auth token (newer images
// require one). IDEMKIT_LOCALSTACK_IMAGE overrides it.
const LocalStackImage = "localstack/localstack:4.14.0"

// EnvLocalStackImage overrides LocalStackImage.
const EnvLocalStackImage = "IDEMKIT_LOCALSTACK_IMAGE"

// localStackStartup bounds a LocalStack start, image pull included.
const localStackStartup = 5 * time.Minute

// LocalStack is a running LocalStack container.
type LocalStack struct {
	ctr      *localstack.LocalStackContainer
	endpoint string
}

// StartLocalStack starts LocalStack (DynamoDB only) in Docker and returns
// once it is healthy. LOCALSTACK_AUTH_TOKEN is passed through when set.
// When no Docker engine is reachable the error wraps dynalite.ErrUnavailable and
// says so in one line.
func StartLocalStack(ctx context.Context) (*LocalStack, error) {
	if err := dockerReachable(ctx); err != nil {
		return nil, err
	}
	img := LocalStackImage
	if v := os.Getenv(EnvLocalStackImage); v != "" {
		img = v
	}
	env := map[string]string{"SERVICES": "dynamodb"}
	if tok := os.Getenv("LOCALSTACK_AUTH_TOKEN"); tok != "" {
		env["LOCALSTACK_AUTH_TOKEN"] = tok
	}
	ctr, err := runLocalStack(ctx, img, env)
	if err != nil {
		if ctr != nil {
			_ = testcontainers.TerminateContainer(ctr)
		}
		if errors.Is(err, dynalite.ErrUnavailable) {
			return nil, err
		}
		return nil, fmt.Errorf("localstack: start %s: %s", img, oneLine(err.Error()))
	}
	ep, err := ctr.PortEndpoint(ctx, "4566/tcp", "http")
	if err != nil {
		_ = testcontainers.TerminateContainer(ctr)
		return nil, fmt.Errorf("localstack: endpoint: %s", oneLine(err.Error()))
	}
	return &LocalStack{ctr: ctr, endpoint: ep}, nil
}

// runLocalStack runs the container, turning the module's panics (it
// panics when it cannot find a Docker socket) into errors.
func runLocalStack(ctx context.Context, img string, env map[string]string) (ctr *localstack.LocalStackContainer, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = unavailablef("localstack: no Docker engine reachable: %v", r)
		}
	}()
	return localstack.Run(ctx, img, testcontainers.WithEnv(env))
}

// dockerReachable reports, as one line wrapping dynalite.ErrUnavailable, that no
// Docker engine answers.
func dockerReachable(ctx context.Context) (err error) {
	const msg = "localstack: no Docker engine reachable (start Docker or set DOCKER_HOST; `make test` uses dynalite and needs none)"
	defer func() {
		if r := recover(); r != nil {
			err = unavailablef("%s: %v", msg, r)
		}
	}()
	p, err := testcontainers.ProviderDefault.GetProvider()
	if err != nil {
		return unavailablef("%s: %s", msg, firstLine(err.Error()))
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.Health(ctx); err != nil {
		return unavailablef("%s: %s", msg, firstLine(err.Error()))
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// Endpoint returns LocalStack's URL, e.g. "http://127.0.0.1:32768".
func (l *LocalStack) Endpoint() string { return l.endpoint }

// Stop removes the container.
func (l *LocalStack) Stop() error {
	if err := testcontainers.TerminateContainer(l.ctr); err != nil {
		return fmt.Errorf("localstack: stop: %w", err)
	}
	return nil
}

// unavailablef is an error, on one line, that matches
// dynalite.ErrUnavailable.
func unavailablef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", dynalite.ErrUnavailable, oneLine(fmt.Sprintf(format, args...)))
}

// oneLine folds a message onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
