package dynalite

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/idemkit/idemkit/internal/testing/testkit"
)

// ModulePath is the module whose root holds package.json and node_modules.
const ModulePath = "github.com/idemkit/idemkit"

// Environment variables read by this package.
const (
	// EnvDir names the directory holding node_modules/dynalite, overriding
	// the search for the module root.
	EnvDir = "IDEMKIT_DYNALITE_DIR"
	// EnvEndpoint, when set, is used by Endpoint and Client instead of
	// starting a server: any running DynamoDB-compatible server will do.
	EnvEndpoint = "IDEMKIT_DYNAMODB_ENDPOINT"
	// EnvSkip, when "1", makes every test that needs a DynamoDB-compatible
	// server skip (Endpoint, Client, NewServer and SkipIfDisabled skip it).
	EnvSkip = "IDEMKIT_SKIP_DYNAMODB"
	// EnvServer picks the server Endpoint starts: ServerDynalite (the
	// default), ServerMoto or ServerDynamoDBLocal.
	EnvServer = "IDEMKIT_TEST_SERVER"
	// EnvTimeoutScale multiplies the timeouts tests take from Scale: a
	// positive number, 1 when unset. A loaded machine wants 3 or more.
	EnvTimeoutScale = "IDEMKIT_TEST_TIMEOUT_SCALE"
)

// Values of EnvServer.
const (
	ServerDynalite      = "dynalite"
	ServerMoto          = "moto"
	ServerDynamoDBLocal = "dynamodb-local"
)

// StartupTimeout bounds how long Start waits for the server to report its
// port when the context has no earlier deadline.
const StartupTimeout = 20 * time.Second

// stopTimeout bounds how long Stop waits for the server to exit after its
// stdin is closed before it is killed, times Scale: moto, a Python
// server, takes seconds to exit on a loaded machine.
const stopTimeout = 15 * time.Second

// ErrUnavailable is wrapped by errors saying that a prerequisite of the
// server (node, node_modules/dynalite, a Docker engine) is missing, as
// opposed to a server that was found but failed.
var ErrUnavailable = errors.New("DynamoDB test server unavailable")

// ErrNoJava is wrapped, beside ErrUnavailable, by StartDynamoDBLocal's
// error when java is not on PATH: DynamoDB Local is optional where Java
// is missing.
var ErrNoJava = errors.New("java is not on PATH")

// unavailable is an error whose message is one line and that matches
// ErrUnavailable, and kind when set.
type unavailable struct {
	msg  string
	kind error
}

func (e *unavailable) Error() string { return e.msg }
func (e *unavailable) Is(target error) bool {
	return target == ErrUnavailable || (e.kind != nil && target == e.kind)
}

func unavailablef(format string, args ...any) error {
	return &unavailable{msg: oneLine(fmt.Sprintf(format, args...))}
}

//go:embed server.js
var serverJS string

// Server is a running test server process (dynalite, or moto_server
// when started by StartMoto) holding its tables in memory.
type Server struct {
	name     string // "dynalite" or "moto", the prefix of its errors
	endpoint string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stderr   *testkit.SyncBuffer
	exited   chan struct{} // closed once the process has been waited for
	waitErr  error         // valid once exited is closed
	// stopCode, when non-zero, is an exit code that Stop takes as a clean
	// stop (the moto wrapper exits with the status of the signal that
	// stopped the server).
	stopCode int

	stopOnce sync.Once
	stopErr  error
}

// Start starts a dynalite server from the node_modules found by Dir and
// returns once it accepts connections on 127.0.0.1. The context bounds
// the startup only, never the server's life: the server runs until Stop,
// or until this process exits (the server watches its stdin, a pipe from
// this process, and quits when it closes, so it does not outlive even a
// killed parent).
//
// Errors wrap ErrUnavailable when node or node_modules/dynalite is
// missing; their messages are one line and say what to do.
func Start(ctx context.Context) (*Server, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dynalite: start: %w", err)
	}
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, unavailablef("dynalite: node is not on PATH (install Node.js 20 or later): %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "dynalite", "package.json")); err != nil {
		return nil, unavailablef("dynalite: %s is missing: run `make deps` (or `npm ci`) in %s",
			filepath.Join(dir, "node_modules", "dynalite"), dir)
	}

	// The script is embedded and run with node's --eval so that require()
	// resolves node_modules from the working directory, wherever the test
	// binary runs.
	cmd := exec.Command(node, "--eval", serverJS)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_NO_WARNINGS=1")
	s := &Server{name: "dynalite"}
	// The first line on stdout is "listening 127.0.0.1:PORT".
	return s.launch(ctx, cmd, func(line string) (string, error) {
		addr, found := strings.CutPrefix(line, "listening ")
		if !found || addr == "" {
			return "", fmt.Errorf("unexpected first line %q", line)
		}
		return "http://" + addr, nil
	})
}

// launch starts cmd and waits, within ctx (StartupTimeout when ctx has no
// deadline), until ready finds the endpoint in a line of its stdout.
// ready returns "" and no error for a line to keep and skip (it is kept for
// error messages), an error for a line that means the start failed.
func (s *Server) launch(ctx context.Context, cmd *exec.Cmd, ready func(line string) (string, error)) (*Server, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, Scale(StartupTimeout))
		defer cancel()
	}
	setProcessGroup(cmd)
	// stderr is bounded: the server may be chatty on it for a long run.
	s.cmd, s.stderr, s.exited = cmd, &testkit.SyncBuffer{Max: 64 << 10}, make(chan struct{})

	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: stdin pipe: %w", s.name, err)
	}
	s.stdin = stdin
	// stdout is a pipe of our own rather than cmd.StdoutPipe, whose read end
	// Wait closes: the port line must be readable even if the process
	// exits right after printing it.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("%s: stdout pipe: %w", s.name, err)
	}
	cmd.Stdout = stdoutW
	cmd.Stderr = s.stderr
	cmd.WaitDelay = Scale(stopTimeout)

	err = cmd.Start()
	_ = stdoutW.Close()
	if err != nil {
		_ = stdout.Close()
		return nil, fmt.Errorf("%s: start %s: %w", s.name, cmd.Path, err)
	}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()

	type result struct {
		endpoint string
		err      error
	}
	found := make(chan result, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		done := false
		for sc.Scan() {
			if done {
				continue // keep draining so that the server never blocks on a full pipe
			}
			ep, err := ready(sc.Text())
			switch {
			case err != nil || ep != "":
				found <- result{ep, err}
				done = true
			default:
				_, _ = s.stderr.Write(append(sc.Bytes(), '\n'))
			}
		}
		if !done {
			close(found)
		}
		_ = stdout.Close()
	}()

	select {
	case r, ok := <-found:
		if !ok {
			<-s.exited
			return nil, s.startError("exited before reporting its port")
		}
		if r.err != nil {
			_ = s.Stop()
			return nil, s.startError(r.err.Error())
		}
		s.endpoint = r.endpoint
		return s, nil
	case <-ctx.Done():
		_ = s.Stop()
		return nil, s.startError(fmt.Sprintf("no port reported: %v", ctx.Err()))
	}
}

func (s *Server) startError(what string) error {
	msg := s.name + ": server " + what
	if s.waitErr != nil && isClosed(s.exited) {
		msg += " (" + s.waitErr.Error() + ")"
	}
	if out := strings.TrimSpace(s.stderr.String()); out != "" {
		msg += "; stderr: " + out
	}
	return errors.New(oneLine(msg))
}

// Endpoint returns the server's URL, e.g. "http://127.0.0.1:41234".
func (s *Server) Endpoint() string { return s.endpoint }

// Stop stops the server and waits for it to exit. It may be called more
// than once; later calls return the first call's result.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		// Closing stdin asks the server to exit; a kill of its process
		// group follows if it has not within stopTimeout.
		_ = s.stdin.Close()
		select {
		case <-s.exited:
		case <-time.After(Scale(stopTimeout)):
			killProcessGroup(s.cmd)
			<-s.exited
			s.stopErr = fmt.Errorf("%s: server did not exit within %v of stdin closing; killed", s.name, Scale(stopTimeout))
			return
		}
		// Exit code 0 is a clean stop; anything else after startup is worth
		// reporting.
		var ee *exec.ExitError
		if errors.As(s.waitErr, &ee) && s.endpoint != "" && (s.stopCode == 0 || ee.ExitCode() != s.stopCode) {
			s.stopErr = errors.New(oneLine(fmt.Sprintf("%s: server exited: %v; stderr: %s", s.name, s.waitErr, s.stderr.String())))
		}
	})
	return s.stopErr
}

// Dir returns the directory whose node_modules holds dynalite: the value
// of IDEMKIT_DYNALITE_DIR if set, else the root of module ModulePath found
// by walking up from the working directory.
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return filepath.Abs(d)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("dynalite: working directory: %w", err)
	}
	for d := wd; ; {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && modulePath(data) == ModulePath {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", unavailablef("dynalite: no go.mod of module %s above %s; set %s to the directory holding node_modules/dynalite",
				ModulePath, wd, EnvDir)
		}
		d = parent
	}
}

// modulePath returns the module path declared in a go.mod file's content.
func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			rest = strings.TrimSpace(rest)
			if i := strings.Index(rest, "//"); i >= 0 {
				rest = strings.TrimSpace(rest[:i])
			}
			return strings.Trim(rest, "\"`")
		}
	}
	return ""
}

// oneLine folds a message onto one line and bounds its length.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const max = 2000
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
