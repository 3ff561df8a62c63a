// Command localstack runs a command against LocalStack: it starts
// LocalStack (DynamoDB only) in Docker, runs the command with
// IDEMKIT_DYNAMODB_ENDPOINT set to LocalStack's URL (internal/testing/dynalite's
// tests then use it instead of starting dynalite), and removes the
// container when the command ends.
//
//	cd internal/testing/localstack && go run . make -C ../../.. test-go
//
// It is a module of its own so that its Docker client dependencies stay out
// of the idemkit module's graph. LOCALSTACK_AUTH_TOKEN is passed through
// when set; IDEMKIT_LOCALSTACK_IMAGE overrides the image.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/idemkit/idemkit/internal/testing/dynalite"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: localstack command [args...]")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), localStackStartup)
	l, err := StartLocalStack(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := l.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	fmt.Fprintf(os.Stderr, "localstack: %s=%s\n", dynalite.EnvEndpoint, l.Endpoint())

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), dynalite.EnvEndpoint+"="+l.Endpoint())
	// An interrupt reaches the command through the process group; wait for
	// it to end so the container is still removed.
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
